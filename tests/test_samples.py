"""Host-side checks of the sample models against native onnxruntime.

Every expected value is computed here with numpy, from the model's own
initializers where it has weights, so a bug in a generator cannot hide
behind the same bug in the reference.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import numpy_helper

from ortweb.testing import samples
from ortweb.testing.samples import DTYPES

NUMERIC = [t for t in DTYPES if t not in ("tensor(bool)", "tensor(string)")]


def _session(model: bytes) -> ort.InferenceSession:
    opts = ort.SessionOptions()
    # Tests that expect a failure would otherwise spray ORT's error log.
    opts.log_severity_level = 4
    return ort.InferenceSession(model, opts, providers=["CPUExecutionProvider"])


def _run(model: bytes, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    sess = _session(model)
    names = [o.name for o in sess.get_outputs()]
    return dict(zip(names, sess.run(names, dict(feeds)), strict=True))


def _weights(model: bytes) -> dict[str, np.ndarray]:
    proto = onnx.load_model_from_string(model)
    return {t.name: numpy_helper.to_array(t) for t in proto.graph.initializer}


def _sample_values(type_str: str, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    dtype = DTYPES[type_str]
    if type_str == "tensor(string)":
        words = np.array(["", "a", "héllo", "ortweb", "b\x00c", "日本"], dtype=object)
        return rng.choice(words, size=shape)
    if type_str == "tensor(bool)":
        return rng.integers(0, 2, size=shape).astype(np.bool_)
    if np.issubdtype(dtype, np.floating):
        return rng.standard_normal(shape).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, size=shape, endpoint=True, dtype=dtype)


def _parametrised_models() -> dict[str, bytes]:
    models = dict(samples.all_samples())
    for t in DTYPES:
        models[f"identity[{t}]"] = samples.identity_model(t, ["n", None, 3])
        models[f"cast[{t}->tensor(float)]"] = samples.cast_model(t, "tensor(float)", [2])
    for t in NUMERIC:
        models[f"add[{t}]"] = samples.add_model(t, [4])
    models["mlp[8-5-3]"] = samples.mlp_model(8, 5, 3, seed=7)
    models["matmul_relu[16]"] = samples.matmul_relu_model(16)
    return models


MODELS = _parametrised_models()


# --- model properties ------------------------------------------------------


def test_dtypes_table() -> None:
    assert list(DTYPES) == [
        "tensor(float)",
        "tensor(double)",
        "tensor(float16)",
        "tensor(int8)",
        "tensor(int16)",
        "tensor(int32)",
        "tensor(int64)",
        "tensor(uint8)",
        "tensor(uint16)",
        "tensor(uint32)",
        "tensor(uint64)",
        "tensor(bool)",
        "tensor(string)",
    ]
    assert DTYPES["tensor(float)"] == np.float32
    assert DTYPES["tensor(float16)"] == np.float16
    assert DTYPES["tensor(bool)"] == np.bool_
    assert DTYPES["tensor(string)"] == np.dtype(object)
    with pytest.raises(TypeError):
        DTYPES["tensor(bfloat16)"] = np.dtype(np.uint16)  # type: ignore[index]


@pytest.mark.parametrize("name", list(MODELS))
def test_model_passes_checker_with_expected_stamps(name: str) -> None:
    proto = onnx.load_model_from_string(MODELS[name])
    onnx.checker.check_model(proto, full_check=True)
    assert proto.ir_version == 8
    assert [(o.domain, o.version) for o in proto.opset_import] == [("", 17)]


def test_all_samples_names_and_determinism() -> None:
    first = samples.all_samples()
    assert set(first) == {
        "symbolic_dims",
        "dynamic_conv",
        "int64",
        "stateful",
        "float16",
        "mlp",
        "matmul_relu",
        "two_outputs",
        "unsupported_on_webgpu",
    }
    assert samples.all_samples() == first
    assert samples.mlp_model(seed=0) == first["mlp"]
    assert samples.mlp_model(seed=1) != first["mlp"]


def test_unknown_and_unsupported_types_are_rejected() -> None:
    with pytest.raises(ValueError, match="unknown tensor type"):
        samples.identity_model("tensor(bfloat16)", [1])
    with pytest.raises(ValueError, match="unknown tensor type"):
        samples.cast_model("tensor(float)", "float32", [1])
    for t in ("tensor(bool)", "tensor(string)"):
        with pytest.raises(ValueError, match="Add does not support"):
            samples.add_model(t, [1])


def test_save_creates_parents(tmp_path: Path) -> None:
    model = samples.two_outputs_model()
    out = samples.save(model, tmp_path / "a" / "b" / "m.onnx")
    assert out.read_bytes() == model
    onnx.checker.check_model(onnx.load(str(out)), full_check=True)


# --- per-dtype models -------------------------------------------------------


@pytest.mark.parametrize("type_str", list(DTYPES))
def test_identity_roundtrips_every_dtype(type_str: str) -> None:
    rng = np.random.default_rng(1)
    x = _sample_values(type_str, (2, 5, 3), rng)
    model = samples.identity_model(type_str, ["n", None, 3])
    sess = _session(model)
    assert sess.get_inputs()[0].type == type_str
    assert sess.get_inputs()[0].shape == ["n", None, 3]
    (y,) = sess.run(None, {"x": x})
    assert y.dtype == DTYPES[type_str]
    assert y.shape == x.shape
    np.testing.assert_array_equal(y, x)


def test_identity_accepts_numpy_unicode_strings() -> None:
    x = np.array([["a", "bc"], ["", "déf"]])
    assert x.dtype.kind == "U"
    y = _run(samples.identity_model("tensor(string)", [2, 2]), {"x": x})["y"]
    assert y.dtype == object
    assert y.tolist() == x.tolist()


def _cast_reference(ints: np.ndarray, from_type: str, to_type: str) -> np.ndarray:
    # ``ints`` are the small integers the input was built from, so the
    # expectation never depends on how numpy converts between the two dtypes
    # under test. ORT prints integral floats without a fraction ("3", not
    # "3.0") and bools as "1"/"0", i.e. str(int(v)) throughout.
    if to_type == "tensor(string)":
        return np.array([str(int(v)) for v in ints.ravel()], dtype=object).reshape(ints.shape)
    if to_type == "tensor(bool)":
        return ints != 0
    return ints.astype(DTYPES[to_type])


@pytest.mark.parametrize(("from_type", "to_type"), list(itertools.product(DTYPES, DTYPES)))
def test_cast_between_every_pair(from_type: str, to_type: str) -> None:
    hi = 2 if from_type == "tensor(bool)" else 100
    ints = np.random.default_rng(2).integers(0, hi, size=(3, 4))
    if from_type == "tensor(string)":
        x = np.array([str(v) for v in ints.ravel()], dtype=object).reshape(ints.shape)
    elif from_type == "tensor(bool)":
        x = ints.astype(np.bool_)
    else:
        x = ints.astype(DTYPES[from_type])
    y = _run(samples.cast_model(from_type, to_type, [3, "cols"]), {"x": x})["y"]
    assert y.dtype == DTYPES[to_type]
    np.testing.assert_array_equal(y, _cast_reference(ints, from_type, to_type))


@pytest.mark.parametrize(
    "to_type",
    ["tensor(float16)", "tensor(double)", "tensor(int32)", "tensor(int64)", "tensor(int8)"],
)
def test_cast_fractional_floats(to_type: str) -> None:
    # Fractions exercise rounding (float16) and truncation toward zero (ints),
    # which small-integer inputs cannot.
    # Clipped so every value fits int8: out-of-range float->int is undefined.
    x = np.clip(np.random.default_rng(3).standard_normal((5, 5)) * 30, -120, 120)
    x = x.astype(np.float32)
    y = _run(samples.cast_model("tensor(float)", to_type, [5, 5]), {"x": x})["y"]
    np.testing.assert_array_equal(y, x.astype(DTYPES[to_type]))


@pytest.mark.parametrize("type_str", NUMERIC)
def test_add_every_numeric_dtype(type_str: str) -> None:
    rng = np.random.default_rng(4)
    dtype = DTYPES[type_str]
    if np.issubdtype(dtype, np.floating):
        a = rng.standard_normal((3, 4)).astype(dtype)
        b = rng.standard_normal((3, 4)).astype(dtype)
    else:
        # Half the range each, so the sum cannot overflow.
        info = np.iinfo(dtype)
        a = rng.integers(info.min // 2, info.max // 2, size=(3, 4), dtype=dtype)
        b = rng.integers(info.min // 2, info.max // 2, size=(3, 4), dtype=dtype)
    y = _run(samples.add_model(type_str, ["r", 4]), {"a": a, "b": b})["y"]
    assert y.dtype == dtype
    np.testing.assert_array_equal(y, a + b)


# --- fixed sample models ----------------------------------------------------


@pytest.mark.parametrize("batch", [1, 5])
def test_symbolic_dims(batch: int) -> None:
    model = samples.symbolic_dims_model()
    w = _weights(model)
    rng = np.random.default_rng(batch)
    x = rng.standard_normal((batch, 4)).astype(np.float32)
    z = rng.standard_normal((batch, 3)).astype(np.float32)
    y = _run(model, {"x": x, "z": z})["y"]
    assert y.shape == (batch, 3)
    np.testing.assert_allclose(y, x @ w["W"] + w["b"] + z, rtol=1e-5, atol=1e-6)


def test_symbolic_dims_shared_name_is_not_enforced_by_native_ort() -> None:
    # Reference behaviour worth knowing when comparing with the browser:
    # native ORT checks fixed dims on input but does not check that two
    # inputs agree on a shared symbolic dim; a batch of 1 just broadcasts.
    sess = _session(samples.symbolic_dims_model())
    (y,) = sess.run(None, {"x": np.ones((5, 4), np.float32), "z": np.ones((1, 3), np.float32)})
    assert y.shape == (5, 3)
    with pytest.raises(Exception, match="broadcast"):
        sess.run(None, {"x": np.ones((5, 4), np.float32), "z": np.ones((2, 3), np.float32)})


def _conv_reference(image: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
    _, _, h, wd = image.shape
    padded = np.pad(image[0], ((0, 0), (1, 1), (1, 1)))
    out = np.zeros((w.shape[0], h, wd), dtype=np.float64)
    for i, j in itertools.product(range(3), range(3)):
        out += np.einsum("oc,chw->ohw", w[:, :, i, j], padded[:, i : i + h, j : j + wd])
    out += b[:, None, None]
    return np.maximum(out, 0).mean(axis=(1, 2))[None, :]


@pytest.mark.parametrize(("height", "width"), [(8, 8), (13, 7)])
def test_dynamic_conv(height: int, width: int) -> None:
    model = samples.dynamic_conv_model()
    w = _weights(model)
    image = np.random.default_rng(height).standard_normal((1, 3, height, width))
    image = image.astype(np.float32)
    features = _run(model, {"image": image})["features"]
    assert features.shape == (1, 4)
    assert features.dtype == np.float32
    assert np.isfinite(features).all()
    np.testing.assert_allclose(
        features, _conv_reference(image, w["W"], w["B"]), rtol=1e-4, atol=1e-5
    )


@pytest.mark.parametrize("n", [0, 1, 7])
def test_int64_gather_argmax_add(n: int) -> None:
    rng = np.random.default_rng(5)
    ids = rng.integers(0, 10, size=n, dtype=np.int64)
    table = rng.standard_normal((10, 3)).astype(np.float32)
    out = _run(samples.int64_model(), {"ids": ids, "table": table})
    assert out["rows"].shape == (n, 3)
    np.testing.assert_array_equal(out["rows"], table[ids])
    assert out["argmax"].dtype == np.int64
    np.testing.assert_array_equal(out["argmax"], table[ids].argmax(axis=1))
    assert out["ids_plus_one"].dtype == np.int64
    np.testing.assert_array_equal(out["ids_plus_one"], ids + 1)


def test_int64_out_of_range_ids() -> None:
    table = np.arange(30, dtype=np.float32).reshape(10, 3)
    # Negative indices count from the end, as the Gather spec says.
    out = _run(samples.int64_model(), {"ids": np.array([-1], np.int64), "table": table})
    np.testing.assert_array_equal(out["rows"], table[[-1]])
    with pytest.raises(Exception, match="out of data bounds"):
        _run(samples.int64_model(), {"ids": np.array([10], np.int64), "table": table})


def test_stateful_feedback() -> None:
    model = samples.stateful_model()
    w = _weights(model)
    sess = _session(model)
    rng = np.random.default_rng(6)
    state = np.zeros((1, 8), np.float32)
    expected_state = state.astype(np.float64)
    for _ in range(3):  # the initial step, then the state fed back twice
        x = rng.standard_normal((1, 4)).astype(np.float32)
        y, state = sess.run(["y", "state_out"], {"x": x, "state_in": state})
        expected_state = np.tanh(x @ w["Wx"] + expected_state @ w["Wh"] + w["b"])
        np.testing.assert_array_equal(y, state)
        np.testing.assert_allclose(state, expected_state, rtol=1e-5, atol=1e-6)
    # A non-trivial state: the recurrence must actually have moved it.
    assert np.abs(state).max() > 0.1


def test_float16_values() -> None:
    x = np.array([[0.0, 1.0, -2.5], [0.1, 1000.0, -0.333]], dtype=np.float16)
    out = _run(samples.float16_model(), {"x": x})
    expected = x * np.float16(2.0) + np.float16(0.5)
    assert out["y"].dtype == np.float16
    np.testing.assert_array_equal(out["y"], expected)
    assert out["y32"].dtype == np.float32
    np.testing.assert_array_equal(out["y32"], expected.astype(np.float32))


@pytest.mark.parametrize("batch", [1, 4])
def test_mlp(batch: int) -> None:
    model = samples.mlp_model()
    w = _weights(model)
    x = np.random.default_rng(batch).standard_normal((batch, 64)).astype(np.float32)
    probs = _run(model, {"x": x})["probabilities"]
    assert probs.shape == (batch, 10)
    assert (probs >= 0).all()
    np.testing.assert_allclose(probs.sum(axis=1), 1.0, rtol=0, atol=1e-5)
    logits = np.maximum(x @ w["W1"] + w["b1"], 0) @ w["W2"] + w["b2"]
    ref = np.exp(logits - logits.max(axis=1, keepdims=True))
    ref /= ref.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(probs, ref, rtol=1e-4, atol=1e-6)


def test_mlp_custom_sizes() -> None:
    probs = _run(samples.mlp_model(8, 5, 3, seed=7), {"x": np.ones((2, 8), np.float32)})
    assert probs["probabilities"].shape == (2, 3)
    np.testing.assert_allclose(probs["probabilities"].sum(axis=1), 1.0, atol=1e-6)


@pytest.mark.parametrize("n", [16, 64])
def test_matmul_relu(n: int) -> None:
    model = samples.matmul_relu_model(n)
    w = _weights(model)["W"]
    assert w.shape == (n, n)
    x = np.random.default_rng(n).standard_normal((1, n)).astype(np.float32)
    y = _run(model, {"x": x})["y"]
    np.testing.assert_allclose(y, np.maximum(x @ w, 0), rtol=1e-5, atol=1e-6)


def test_two_outputs() -> None:
    sess = _session(samples.two_outputs_model())
    assert [o.name for o in sess.get_outputs()] == ["double", "negated"]
    x = np.array([[1.5, -2.0], [0.0, 3.25]], dtype=np.float32)
    double, negated = sess.run(None, {"x": x})
    np.testing.assert_array_equal(double, x * 2)
    np.testing.assert_array_equal(negated, -x)


def test_topk_and_round() -> None:
    x = np.array([[0.5, 1.5, 2.5, -0.5, -1.7], [3.2, -2.5, 0.49, 7.0, 2.5001]], dtype=np.float32)
    out = _run(samples.unsupported_on_webgpu_model(), {"x": x})
    order = np.argsort(-x, axis=1, kind="stable")[:, :2]
    assert out["indices"].dtype == np.int64
    np.testing.assert_array_equal(out["indices"], order)
    np.testing.assert_array_equal(out["indices"], [[2, 1], [3, 0]])
    np.testing.assert_array_equal(out["values"], np.take_along_axis(x, order, axis=1))
    # Round is half-to-even, like numpy: 0.5 -> 0, 1.5 -> 2, 2.5 -> 2, -2.5 -> -2.
    np.testing.assert_array_equal(out["rounded"], np.round(x))
    np.testing.assert_array_equal(out["rounded"][0, :3], [0.0, 2.0, 2.0])
