"""The models the bench runs beyond the test models: resnet50 folded, one-op chains."""

from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path
from typing import Any

__all__ = ["engine_models", "folded_resnet50", "large_input", "large_model", "unary_model"]


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


def large_model(mib: int, files: int = 1, dim: int = 4096, cache: Path | None = None, *,
                sparse: bool = False) -> Path:
    """A float32 MatMul chain with ``mib`` MiB of weights in external data files.

    ``y = x @ W0 @ W1 @ ...`` with ``x`` float32 ``[1, dim]`` and each ``Wi`` a
    ``[dim, dim]`` weight (64 MiB at the default ``dim``), scaled so ``y`` stays near
    ``x``'s magnitude. The weights are split over ``files`` data files
    (``weights_0.bin``, ...; ``model.onnx.data`` when there is one), as a model saved
    with external data keeps them. A tiny input makes a run cheap, so native
    onnxruntime checks the output in a moment whatever the size.

    Written once under ``build/large/`` (deterministic, named by the parameters) and
    reused; returns the path of ``model.onnx``. ``sparse`` writes no weights: the data
    files are holes of the right size (all zeros, no disk used), for models that are
    only ever refused.
    """
    import numpy as np
    from onnx import TensorProto, helper

    per = dim * dim * 4
    count = max(1, (mib * 1024 * 1024) // per)
    folder = (cache or _cache_dir().parent / "large") / (
        f"matmul_v1_{mib}mib_{files}f_{dim}d" + ("_sparse" if sparse else ""))
    out = folder / "model.onnx"
    if out.exists():
        return out
    folder.mkdir(parents=True, exist_ok=True)
    names = (["model.onnx.data"] if files == 1
             else [f"weights_{i}.bin" for i in range(files)])
    # Consecutive weights share a file, as onnx.save writes them.
    per_file = -(-count // files)
    inits, nodes, offsets = [], [], dict.fromkeys(names, 0)
    with ExitStack() as stack:
        handles = {n: stack.enter_context(open(folder / n, "wb")) for n in names}
        prev = "x"
        for i in range(count):
            location = names[i // per_file]
            if sparse:
                handles[location].truncate(offsets[location] + per)
            else:
                rng = np.random.default_rng(i)
                w = rng.random((dim, dim), dtype=np.float32)
                w -= np.float32(0.5)
                w *= np.float32((12.0 / dim) ** 0.5)
                w.tofile(handles[location])
            t = TensorProto(name=f"w{i}", data_type=TensorProto.FLOAT, dims=[dim, dim],
                            data_location=TensorProto.EXTERNAL)
            for key, value in (("location", location), ("offset", str(offsets[location])),
                               ("length", str(per))):
                entry = t.external_data.add()
                entry.key, entry.value = key, value
            offsets[location] += per
            inits.append(t)
            name = "y" if i == count - 1 else f"h{i}"
            nodes.append(helper.make_node("MatMul", [prev, f"w{i}"], [name]))
            prev = name
    graph = helper.make_graph(
        nodes, "large_matmul_chain",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, dim])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, dim])], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    tmp = out.with_suffix(".tmp")
    tmp.write_bytes(model.SerializeToString())
    tmp.replace(out)  # last: a folder without model.onnx is an interrupted one
    return out


def large_input(dim: int = 4096) -> Any:
    """The input :func:`large_model`'s checks feed: float32 ``[1, dim]``, ``((i % 17) - 8) / 8``
    (the plain-JS page ``web/large_plain.js`` makes the same)."""
    import numpy as np

    return (((np.arange(dim) % 17) - 8) / 8).astype(np.float32)[None]


def engine_models() -> tuple[dict[str, bytes], dict[str, list[int]]]:
    """The engines section's models, one set of bytes for every engine, and their input
    shapes. All are opset 13 (wonnx 0.5.1 refuses opset 17's Softmax) with static
    shapes and every intermediate shape inferred (wonnx needs both).

    ``tiny``: ``Relu(x + b)``, 64 wide: the fixed cost of a call. ``conv``: two 3x3
    convolutions over a 3x32x32 image (Conv, Relu, Sigmoid, GlobalAveragePool), ops
    that every engine's table passes. ``cnn``: the same over a 3x64x64 image with 16
    and 32 channels (25 times the work): a run of milliseconds on every engine, as
    an image model's is. ``digits``: the digits demo's classifier (a
    scikit-learn MLP: Gemm, Relu, Softmax), batch fixed to 1; tract's and wonnx's
    tables refuse its Gemm or Softmax, which the section notes as their reason.
    """
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    from ..demo import digits_model

    rng = np.random.default_rng(0)

    def init(name: str, shape: tuple[int, ...], fan_in: int) -> onnx.TensorProto:
        data = (rng.standard_normal(shape) / np.sqrt(fan_in)).astype(np.float32)
        return numpy_helper.from_array(data, name)

    def io(name: str, shape: list[int]) -> onnx.ValueInfoProto:
        return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)

    def model(graph: onnx.GraphProto) -> onnx.ModelProto:
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)],
                                 ir_version=8)

    def conv(x: str, w: str, b: str, y: str) -> onnx.NodeProto:
        return helper.make_node("Conv", [x, w, b], [y], kernel_shape=[3, 3],
                                pads=[1, 1, 1, 1])

    def convnet(name: str, size: int, c1: int, c2: int) -> onnx.ModelProto:
        return model(helper.make_graph(
            [conv("image", "W1", "B1", "c1"),
             helper.make_node("Relu", ["c1"], ["a1"]),
             conv("a1", "W2", "B2", "c2"),
             helper.make_node("Sigmoid", ["c2"], ["a2"]),
             helper.make_node("GlobalAveragePool", ["a2"], ["features"])],
            name, [io("image", [1, 3, size, size])], [io("features", [1, c2, 1, 1])],
            [init("W1", (c1, 3, 3, 3), 27), init("B1", (c1,), 1),
             init("W2", (c2, c1, 3, 3), 9 * c1), init("B2", (c2,), 1)]))

    protos = {
        "tiny": model(helper.make_graph(
            [helper.make_node("Add", ["x", "b"], ["xb"]),
             helper.make_node("Relu", ["xb"], ["y"])],
            "tiny", [io("x", [1, 64])], [io("y", [1, 64])], [init("b", (64,), 1)])),
        "conv": convnet("conv", 32, 8, 8),
        "cnn": convnet("cnn", 64, 16, 32),
    }
    digits = onnx.load_from_string(digits_model().onnx)
    for value, size in ((digits.graph.input[0], [1, 64]), (digits.graph.output[0], [1, 10])):
        for dim, n in zip(value.type.tensor_type.shape.dim, size, strict=True):
            dim.Clear()
            dim.dim_value = n
    for opset in digits.opset_import:
        if opset.domain in ("", "ai.onnx"):
            opset.version = 13
    protos["digits"] = digits
    models = {name: onnx.shape_inference.infer_shapes(proto, strict_mode=True)
              .SerializeToString() for name, proto in protos.items()}
    return models, {"tiny": [1, 64], "conv": [1, 3, 32, 32], "cnn": [1, 3, 64, 64],
                    "digits": [1, 64]}
