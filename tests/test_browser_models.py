"""Models of every dtype, shapes and kinds, through ortweb in the page vs native onnxruntime.

Each test runs once per EP (``ortweb_providers``: ``[wasm]``, ``[webgpu]``; the WebGPU
runs skip without an adapter, ``--ortweb-providers wasm`` leaves them out). The model
and its inputs travel into the page pickled, the outputs come back the same way, and
the host compares them with native onnxruntime.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import pytest

from ortweb.host.native import compare_all, run_native
from ortweb.testing import run_in_browser, samples

pytestmark = pytest.mark.browser

# Values that exercise each type's edges (extremes, NaN/Inf, -0.0, non-ASCII).
_EDGE: dict[str, list[Any]] = {
    "tensor(float)": [0.0, -0.0, 1.5, np.inf, -np.inf, np.nan],
    "tensor(double)": [1e300, -1e-300, np.pi, np.inf, np.nan, 0.0],
    "tensor(float16)": [65504.0, -65504.0, 6e-8, np.inf, np.nan, -0.0],
    "tensor(int8)": [-128, 127, 0, -1, 1, 5],
    "tensor(int16)": [-32768, 32767, 0, -1, 1, 5],
    "tensor(int32)": [-(2**31), 2**31 - 1, 0, -1, 1, 5],
    "tensor(int64)": [-(2**63), 2**63 - 1, 2**40, -1, 1, 5],
    "tensor(uint8)": [0, 255, 1, 2, 3, 4],
    "tensor(uint16)": [0, 65535, 1, 2, 3, 4],
    "tensor(uint32)": [0, 2**32 - 1, 1, 2, 3, 4],
    "tensor(uint64)": [0, 2**64 - 1, 2**40, 2, 3, 4],
    "tensor(bool)": [True, False, True, True, False, False],
    "tensor(string)": ["", "ascii", "héllo wörld", "日本語", "tab\tnew\nline", "🙂"],
}


def _edge(type_str: str, shape: tuple[int, ...]) -> np.ndarray:
    dtype = samples.DTYPES[type_str]
    values = _EDGE[type_str]
    size = int(np.prod(shape, dtype=np.int64))
    flat = [values[i % len(values)] for i in range(size)]
    if type_str == "tensor(string)":
        return np.array(flat, dtype=str).reshape(shape)
    return np.array(flat, dtype=dtype).reshape(shape)


@run_in_browser
async def _run(ortweb_page, model, feeds, providers):
    """Run ``model`` on ``feeds`` in the page: ``(outputs by name, provider, skipped)``."""
    import ortweb

    sess = await ortweb.InferenceSession.create(model, providers=providers)
    try:
        outputs = await sess.run_async(None, feeds)
        names = [o.name for o in sess.get_outputs()]
        return dict(zip(names, outputs, strict=True)), sess.provider, sess.skipped_providers
    finally:
        await sess.close_async()


class Run(NamedTuple):
    outputs: dict[str, np.ndarray]
    provider: str
    skipped: dict[str, str]


def _check(page, model: bytes, feeds, providers, *, exact=True, rtol=1e-3, atol=1e-5) -> Run:
    outputs, provider, skipped = _run(page, model, feeds, providers)
    native = run_native(model, feeds)
    comparisons = compare_all(
        list(outputs), list(outputs.values()), native,
        0.0 if exact else rtol, 0.0 if exact else atol,
    )
    assert all(c.ok for c in comparisons), [c for c in comparisons if not c.ok]
    for name, array in outputs.items():
        want = native[name]
        assert array.dtype == want.dtype or (array.dtype.kind in "OU" and want.dtype.kind == "O")
    return Run(outputs, provider, skipped)


@pytest.mark.parametrize("type_str", list(samples.DTYPES))
@pytest.mark.parametrize("shape", [(2, 3), (), (0, 3)], ids=["2x3", "scalar", "empty"])
def test_identity_every_dtype(ortweb_page, ortweb_providers, type_str, shape):
    """Every dtype travels both ways bit-exactly, including 0-d and zero-size tensors."""
    model = samples.identity_model(type_str, list(shape))
    feeds = {"x": _edge(type_str, shape)}
    run = _check(ortweb_page, model, feeds, [ortweb_providers, "wasm"])
    got = run.outputs["y"]
    if type_str in ("tensor(float)", "tensor(double)", "tensor(float16)"):
        # Bit patterns, not just values: -0.0 and NaN must survive.
        assert got.tobytes() == feeds["x"].tobytes()
    if type_str == "tensor(float16)" and ortweb_providers == "webgpu":
        assert run.provider in ("webgpu", "wasm")
        if run.provider == "wasm":
            assert "shader-f16" in run.skipped["webgpu"]


@pytest.mark.parametrize(
    "type_str", [t for t in samples.DTYPES if t not in ("tensor(bool)", "tensor(string)")]
)
def test_add_every_numeric_dtype(ortweb_page, ortweb_providers, type_str):
    model = samples.add_model(type_str, [2, 3])
    dtype = samples.DTYPES[type_str]
    a = np.arange(6).reshape(2, 3).astype(dtype)
    b = (np.arange(6)[::-1] % 4).reshape(2, 3).astype(dtype)
    _check(ortweb_page, model, {"a": a, "b": b}, [ortweb_providers, "wasm"])


@pytest.mark.parametrize(
    "type_str", [t for t in samples.DTYPES if t not in ("tensor(float)", "tensor(string)")]
)
def test_cast_to_and_from_float(ortweb_page, ortweb_providers, type_str):
    dtype = samples.DTYPES[type_str]
    x = np.array([[0, 1, 2], [3, 4, 5]]).astype(dtype)
    _check(ortweb_page, samples.cast_model(type_str, "tensor(float)", [2, 3]), {"x": x},
           [ortweb_providers, "wasm"])
    f = np.array([[0, 1, 2], [3, 4, 5]], dtype=np.float32)
    _check(ortweb_page, samples.cast_model("tensor(float)", type_str, [2, 3]), {"x": f},
           [ortweb_providers, "wasm"])


@pytest.mark.parametrize("batch", [1, 5])
def test_symbolic_dims(ortweb_page, ortweb_providers, batch):
    rng = np.random.default_rng(batch)
    feeds = {"x": rng.standard_normal((batch, 4), dtype=np.float32),
             "z": rng.standard_normal((batch, 3), dtype=np.float32)}
    _check(ortweb_page, samples.symbolic_dims_model(), feeds, [ortweb_providers], exact=False)


@pytest.mark.parametrize("hw", [(8, 8), (13, 7)])
def test_dynamic_spatial_dims(ortweb_page, ortweb_providers, hw):
    image = np.random.default_rng(0).standard_normal((1, 3, *hw), dtype=np.float32)
    _check(ortweb_page, samples.dynamic_conv_model(), {"image": image}, [ortweb_providers],
           exact=False)


def test_int64_inputs_and_outputs(ortweb_page, ortweb_providers):
    feeds: dict[str, np.ndarray] = {
        "ids": np.array([3, 0, 9, 9, 1], dtype=np.int64),
        "table": np.random.default_rng(1).standard_normal((10, 3), dtype=np.float32),
    }
    run = _check(ortweb_page, samples.int64_model(), feeds, [ortweb_providers])
    assert run.outputs["argmax"].dtype == np.int64
    np.testing.assert_array_equal(run.outputs["ids_plus_one"], feeds["ids"] + 1)


def test_stateful_model_fed_back(ortweb_page, ortweb_providers):
    model = samples.stateful_model()
    state = np.zeros((1, 8), dtype=np.float32)
    rng = np.random.default_rng(2)
    for _ in range(3):
        x = rng.standard_normal((1, 4), dtype=np.float32)
        run = _check(ortweb_page, model, {"x": x, "state_in": state}, [ortweb_providers],
                     exact=False)
        state = run.outputs["state_out"]
    assert np.abs(state).sum() > 0


def test_float16_model(ortweb_page, ortweb_providers):
    x = np.array([[0.5, -1.25, 3.0], [65504 / 4, -0.0, 1e-4]], dtype=np.float16)
    run = _check(ortweb_page, samples.float16_model(), {"x": x}, [ortweb_providers, "wasm"])
    assert run.outputs["y"].dtype == np.float16


def test_light_models_wasm(ortweb_page, light_models):
    """Real model architectures shipped in the onnx wheel, on wasm."""
    from ortweb.host.inputs import model_inputs, random_inputs

    for name in ("light_squeezenet", "light_resnet50", "light_shufflenet", "light_inception_v1"):
        model = (light_models / f"{name}.onnx").read_bytes()
        feeds = random_inputs(model_inputs(model), seed=1)
        _check(ortweb_page, model, feeds, ["wasm"], exact=False)


@pytest.mark.webgpu
def test_light_squeezenet_webgpu(ortweb_page, light_models):
    from ortweb.host.inputs import model_inputs, random_inputs

    model = (light_models / "light_squeezenet.onnx").read_bytes()
    feeds = random_inputs(model_inputs(model), seed=1)
    run = _check(ortweb_page, model, feeds, ["webgpu"], exact=False)
    assert run.provider == "webgpu"
