"""Real models on every engine, in real Chromium, against native onnxruntime.

The digits demo's classifier (ortweb's own export of a scikit-learn MLP) and models
from wheels on PyPI, as their exporters wrote them: PaddleOCR's text direction
classifier (paddle2onnx, opset 11, from rapidocr-onnxruntime), a CRNN captcha reader
(PyTorch's exporter, opset 17, from captcha-whisperer) and magika's file-type
classifier (tf2onnx, int32 input). Each engine either runs a model and equals
native onnxruntime, or is refused before it loads, with the reason. What the
operator tables distrust is run again trusted, to show what the engine gives.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import numpy as np
import onnx
import pytest

from ortweb.testing import run_in_browser
from test_engines import _equal_to_native

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[1]


def _from_wheel(package: str, member: str) -> bytes:
    pinned = json.loads((ROOT / "assets.lock.json").read_text())["pypi"]
    wheel = ROOT / "build" / "downloads" / pinned[package]["file"]
    assert wheel.exists(), f"run `python3 build.py setup` first: {wheel}"
    with zipfile.ZipFile(wheel) as zf:
        return zf.read(member)


def _inferred(model: bytes) -> bytes:
    """``model`` with its intermediate values' shapes declared (wonnx needs them)."""
    return onnx.shape_inference.infer_shapes(onnx.load_from_string(model)).SerializeToString()


def _fixed(model: bytes, shapes: dict[str, list[int]]) -> bytes:
    """``model`` with the shapes of its inputs and outputs fixed (by name), and its
    intermediate ones inferred: what a user does for wonnx where dims have no name
    (``onnx.tools.update_model_dims`` refuses to overwrite a ``-1``)."""
    proto = onnx.load_from_string(model)
    for value in [*proto.graph.input, *proto.graph.output]:
        for dim, size in zip(value.type.tensor_type.shape.dim, shapes[value.name], strict=True):
            dim.dim_value = size
    return _inferred(proto.SerializeToString())


def _opset(model: bytes, opset: int) -> bytes:
    """``model`` importing ``opset``: for the digits MLP the same model (its Gemm,
    Relu and last-axis Softmax mean the same from opset 13 to 17), which wonnx 0.5.1
    compiles (it refuses opset 17's Softmax)."""
    proto = onnx.load_from_string(model)
    proto.opset_import[0].version = opset
    return proto.SerializeToString()


def _digits() -> bytes:
    from ortweb.host.demo import digits_model

    return digits_model().onnx


def _feeds(name: str) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(7)
    if name.startswith("digits"):
        return {"pixels": rng.uniform(0, 16, (2, 64)).astype(np.float32)}
    if name.startswith("cls"):
        return {"x": rng.standard_normal((2, 3, 48, 192), dtype=np.float32)}
    if name.startswith("captcha"):
        return {"image": rng.standard_normal((1, 3, 60, 160), dtype=np.float32)}
    if name == "magika":
        return {"bytes": rng.integers(0, 257, (1, 2048), dtype=np.int32)}
    raise KeyError(name)


@pytest.fixture(scope="module")
def real_models(ortweb_module_page):
    made = {
        "digits": _digits(),
        "digits_inferred": _inferred(_digits()),
        "cls": _from_wheel("rapidocr-onnxruntime",
                           "rapidocr_onnxruntime/models/ch_ppocr_mobile_v2.0_cls_infer.onnx"),
        "captcha": _from_wheel("captcha-whisperer", "captcha_whisperer/models/captcha_crnn.onnx"),
        "magika": _from_wheel("magika", "magika/models/standard_v3_3/model.onnx"),
    }
    made["captcha_inferred"] = _inferred(made["captcha"])
    made["cls_fixed"] = _fixed(made["cls"], {"x": [2, 3, 48, 192],
                                             "save_infer_model/scale_0.tmp_1": [2, 2]})
    made["digits_13"] = _inferred(_opset(made["digits"], 13))
    return {name: (ortweb_module_page.put_file(f"{name}.onnx", data), data)
            for name, data in made.items()}


@run_in_browser
async def _on_engine(ortweb_page, model, engine, feeds, dims, trust):
    """Run ``model`` on ``engine`` alone: its outputs, or the error and whether the
    engine's files were fetched before it (a refusal made before loading fetches none)."""
    import js

    import ortweb

    def engine_files():
        return [e.name for e in js.performance.getEntriesByType("resource")
                if f"/engines/{engine}" in e.name]

    before = len(engine_files())
    options = ortweb.SessionOptions()
    for dim, size in dims.items():
        options.add_free_dimension_override_by_name(dim, size)
    try:
        s = await ortweb.InferenceSession.create(
            model, options, providers=ortweb.ProviderPolicy(require=engine,
                                                            trust={engine: trust}))
    except ortweb.OrtWebError as exc:
        return {"error": type(exc).__name__, "message": str(exc),
                "fetched": len(engine_files()) > before}
    try:
        outputs = await s.run_async(None, feeds)
        return {"provider": s.provider,
                "outputs": {a.name: o for a, o in zip(s.get_outputs(), outputs, strict=True)}}
    except ortweb.OrtWebError as exc:
        return {"error": type(exc).__name__, "message": str(exc), "fetched": True}
    finally:
        await s.close_async()


# (model, engine, dims, trust) → what happens: "equal" (to native), or the error's
# type and a part of its message; "before loading" where the refusal came from the
# model's bytes, before any file of the engine was fetched. Measured outcomes: what
# an engine's table distrusts is refused, and where trusted the engine shows why
# (tract's Unsqueeze) or runs it right (tract's Softmax and MatMul as these models
# use them).
BEFORE = "before loading"
CASES = [
    *[(m, ep, {}, [], "equal") for ep in ("wasm", "webgpu")
      for m in ("digits", "cls", "captcha", "magika")],
    ("digits", "tract", {}, [], ("ProviderUnavailable", "Softmax-13 gives wrong values", BEFORE)),
    ("digits", "tract", {}, ["Softmax"], "equal"),
    ("cls", "tract", {}, [], ("ProviderUnavailable", "--trust MatMul,Softmax", BEFORE)),
    ("cls", "tract", {}, ["MatMul", "Softmax"], "equal"),
    ("captcha", "tract", {}, [], ("ProviderUnavailable", "Unsqueeze-13 not supported", BEFORE)),
    ("captcha", "tract", {}, ["Unsqueeze", "MatMul"],
     ("OrtRuntimeError", "tract could not load the model", "expected attribute 'axes'")),
    ("magika", "tract", {}, [], ("ProviderUnavailable", "ReduceSum-13 not supported", BEFORE)),
    ("digits", "wonnx", {}, [], ("ProviderUnavailable", "dynamic dim 'batch'", BEFORE)),
    ("digits", "wonnx", {"batch": 2}, [], ("ProviderUnavailable", "'h0', 'r0', 'logits' have none",
                                           BEFORE)),
    ("digits_inferred", "wonnx", {"batch": 2}, [],
     ("ProviderUnavailable", "--trust Gemm,Softmax", BEFORE)),
    ("cls", "wonnx", {}, [],
     ("ProviderUnavailable", "a dim with no name cannot be pinned", BEFORE)),
    ("cls_fixed", "wonnx", {}, [], ("ProviderUnavailable", "Clip-11 gives wrong values", BEFORE)),
    ("captcha_inferred", "wonnx", {"batch": 1}, [],
     ("ProviderUnavailable", "Gather-13 gives wrong values", BEFORE)),
    ("magika", "wonnx", {}, [], ("ProviderUnavailable", "tensor(int32) is not a type", BEFORE)),
]


@pytest.mark.parametrize(("model", "engine", "dims", "trust", "expected"), [
    pytest.param(*case, id=f"{case[0]}-{case[1]}{'-pinned' if case[2] else ''}"
                           f"{'-trusted' if case[3] else ''}",
                 marks=[pytest.mark.webgpu] if case[1] in ("wonnx", "webgpu") else [])
    for case in CASES])
def test_a_real_model_on_an_engine_equals_native_or_is_refused_saying_why(
        ortweb_page, real_models, model, engine, dims, trust, expected):
    path, data = real_models[model]
    feeds = _feeds(model)
    result = _on_engine(ortweb_page, path, engine, feeds, dims, trust)
    if expected == "equal":
        assert result.get("provider") == engine, result
        _equal_to_native(result, data, feeds, rtol=1e-3, atol=1e-4)
        return
    kind, said, when = expected
    assert result.get("error") == kind and said in result["message"], result
    assert engine in result["message"]
    if when == BEFORE:
        assert not result["fetched"], result
    else:
        assert when in result["message"], result
