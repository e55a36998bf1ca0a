"""The models the bench runs beyond the test models: resnet50 folded, one-op chains."""

from __future__ import annotations

from pathlib import Path

__all__ = ["folded_resnet50", "unary_model"]


def _cache_dir() -> Path:
    from ..build.assets import find_assets

    return find_assets().root / "build" / "bench"


def folded_resnet50(cache: Path | None = None) -> Path:
    """resnet50 from the ``onnx`` wheel's light models with its weights folded in.

    The light model makes its weights with ConstantOfShape at run time; onnxruntime's
    basic (ONNX-only) graph optimisations fold them into real-size initializers, so
    the page runs the real model. Cached under ``build/bench/``.
    """
    import onnx
    import onnxruntime as ort

    src = Path(onnx.__file__).parent / "backend/test/data/light/light_resnet50.onnx"
    cache = cache or _cache_dir()
    out = cache / f"resnet50_folded_v2_ort{ort.__version__}.onnx"
    if not out.exists():
        cache.mkdir(parents=True, exist_ok=True)
        tmp = out.with_suffix(".tmp")
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
        options.optimized_model_filepath = str(tmp)
        options.log_severity_level = 3
        ort.InferenceSession(str(src), options, providers=["CPUExecutionProvider"])
        # Folding leaves the shape inputs of the ConstantOfShape nodes it removed as
        # graph inputs (and, IR 3, every initializer too), which native onnxruntime
        # then demands in the feed: keep only the image input, as IR 4 allows.
        model = onnx.load(str(tmp))
        inits = {i.name for i in model.graph.initializer}
        used = {name for node in model.graph.node for name in node.input}
        keep = [i for i in model.graph.input if i.name in used and i.name not in inits]
        del model.graph.input[:]
        model.graph.input.extend(keep)
        model.ir_version = max(model.ir_version, 4)
        onnx.save(model, str(tmp))
        tmp.replace(out)
    return out


def unary_model(op: str, name_in: str, name_out: str) -> bytes:
    """``name_out = op(name_in)``, float32 ``[1, "n"]``: one link of the GPU chain."""
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node(op, [name_in], [name_out])], f"bench_{op.lower()}",
        [helper.make_tensor_value_info(name_in, TensorProto.FLOAT, [1, "n"])],
        [helper.make_tensor_value_info(name_out, TensorProto.FLOAT, [1, "n"])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return bytes(model.SerializeToString())
