"""The host reference: output comparison, made-up inputs, .npz files, model inputs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from ortweb.host.inputs import InputSpec, load_npz, model_inputs, random_inputs, save_npz
from ortweb.host.native import Comparison, compare, compare_all, run_native

# -- compare ------------------------------------------------------------------------


def test_equal_floats_ok() -> None:
    a = np.array([[1.0, -2.5], [0.0, 1e30]], np.float32)
    c = compare("y", a, a.copy())
    assert c.ok and c.mismatched == 0 and c.problem == ""
    assert c.max_abs == 0.0 and c.max_rel == 0.0
    assert (c.name, c.dtype, c.shape) == ("y", "float32", [2, 2])


def test_nan_in_same_place_ok() -> None:
    got = np.array([np.nan, 1.0, np.inf, -np.inf], np.float32)
    want = np.array([np.nan, 1.0, np.inf, -np.inf], np.float32)
    c = compare("y", got, want)
    assert c.ok, c
    assert c.max_abs == 0.0


@pytest.mark.parametrize(("got", "want"), [(np.nan, 1.0), (1.0, np.nan), (np.nan, np.inf)])
def test_nan_in_one_only_mismatches(got: float, want: float) -> None:
    c = compare("y", np.array([got, 0.0]), np.array([want, 0.0]))
    assert not c.ok
    assert c.mismatched == 1
    assert "1 of 2 elements differ" in c.problem


def test_tolerance() -> None:
    want = np.array([1.0, 100.0, 0.0, -50.0], np.float64)
    # rtol=1e-3, atol=1e-5: |d| <= 1e-5 + 1e-3 * |want|
    inside = want + np.array([1e-3, 0.09, 9e-6, -0.04])
    c = compare("y", inside, want)
    assert c.ok, c
    outside = want + np.array([2e-3, 0.2, 0.0, 0.06])
    c = compare("y", outside, want)
    assert not c.ok
    assert c.mismatched == 3
    assert c.problem.startswith("3 of 4 elements differ; worst at [1]: 100.2 vs native 100 ")
    assert c.max_abs == pytest.approx(0.2)
    assert c.max_rel == pytest.approx(2e-3)
    assert c.tolerance_used == pytest.approx(0.2 / (1e-5 + 0.1))
    near_zero = compare("y", np.array([2e-5]), np.array([0.0]))
    assert not near_zero.ok and near_zero.mismatched == 1
    assert compare("y", outside, want, rtol=1e-2, atol=1e-4).ok


def test_tolerance_used_stays_sane_where_native_is_zero() -> None:
    # Relative to a native 1e-300 the error reads 1e+300; the tolerance used is
    # numpy.allclose's measure: within 1 passes, whatever the reference.
    c = compare("y", np.array([1e-6, 1.0]), np.array([1e-300, 1.0]))
    assert c.ok and c.max_rel is not None and c.max_rel > 1e290
    assert c.tolerance_used == pytest.approx(1e-6 / (1e-5 + 1e-3 * 1e-300))
    bad = compare("y", np.array([1e-4, 1.0]), np.array([0.0, 1.0]))
    assert not bad.ok and bad.tolerance_used == pytest.approx(10.0)
    assert "worst at [0]: 0.0001 vs native 0" in bad.problem
    assert compare("y", np.array([np.inf]), np.array([1.0])).tolerance_used == np.inf


def test_float16_compared_in_float64() -> None:
    # In float16 the difference would overflow to inf.
    c = compare("y", np.array([65504.0], np.float16), np.array([-65504.0], np.float16))
    assert not c.ok
    assert c.max_abs == 131008.0
    want = np.array([1.0, 1.0], np.float16)
    got = np.array([1.0, 1.001953125], np.float16)  # two ulps above 1.0
    assert not compare("y", got, want).ok
    assert compare("y", got, want, rtol=1e-2).ok


def test_infinity_must_match_exactly() -> None:
    want = np.array([np.inf, -np.inf, np.inf], np.float32)
    got = np.array([1.0, np.inf, -np.inf], np.float32)
    c = compare("y", got, want)
    assert not c.ok
    assert c.mismatched == 3


def test_finite_against_inf_reference_got_side() -> None:
    # The other way round the tolerance is finite, so the mismatch is seen.
    c = compare("y", np.array([np.inf]), np.array([1.0]))
    assert not c.ok and c.mismatched == 1


def test_shape_mismatch() -> None:
    c = compare("y", np.zeros((2, 3), np.float32), np.zeros((3, 2), np.float32))
    assert not c.ok
    assert c.problem == "shape [2, 3] != native [3, 2]"
    assert c.shape == [2, 3]


def test_shape_mismatch_same_size_rank() -> None:
    c = compare("y", np.zeros((1, 6)), np.zeros(6))
    assert not c.ok and "shape" in c.problem


@pytest.mark.parametrize(
    ("got", "want"),
    [
        (np.float32, np.float64),
        (np.int32, np.int64),
        (np.uint8, np.int8),
        (np.bool_, np.uint8),
        (np.float32, np.int32),
    ],
)
def test_dtype_mismatch(got: type, want: type) -> None:
    c = compare("y", np.zeros(3, got), np.zeros(3, want))
    assert not c.ok
    assert c.problem == f"dtype {np.dtype(got)} != native {np.dtype(want)}"


def test_string_against_number_is_dtype_mismatch() -> None:
    c = compare("y", np.array(["1"], dtype=object), np.array([1], np.int64))
    assert not c.ok and "dtype" in c.problem


@pytest.mark.parametrize("dtype", [np.int8, np.uint16, np.int32, np.int64, np.uint64])
def test_ints_exact(dtype: type) -> None:
    want: np.ndarray = np.array([0, 1, 2, 100], dtype)
    assert compare("y", want.copy(), want).ok
    got = want.copy()
    got[3] = 101
    c = compare("y", got, want, rtol=1.0, atol=10.0)  # tolerances are for floats only
    assert not c.ok
    assert c.mismatched == 1
    assert c.max_abs == 1.0


def test_bools_exact() -> None:
    want = np.array([[True, False], [False, False]])
    assert compare("y", want.copy(), want).ok
    c = compare("y", ~want, want)
    assert c.mismatched == 4 and not c.ok


def test_strings_exact() -> None:
    want = np.array(["a", "héllo", ""], dtype=object)
    assert compare("y", want.copy(), want).ok
    # The browser returns object arrays, a saved reference may be fixed-width.
    assert compare("y", want, want.astype(str)).ok
    assert compare("y", want.astype(str), want).ok
    c = compare("y", np.array(["a", "hello", ""], dtype=object), want)
    assert not c.ok and c.mismatched == 1
    c = compare("y", np.array(["a", "héllo", " "], dtype=object), want)
    assert not c.ok and c.mismatched == 1


def test_zero_size_ok() -> None:
    c = compare("y", np.zeros((0, 3), np.float32), np.zeros((0, 3), np.float32))
    assert c.ok and c.max_abs == 0.0


def test_compare_all_and_as_dict() -> None:
    want: dict[str, np.ndarray] = {"a": np.ones(2, np.float32), "b": np.arange(3)}
    got: list[np.ndarray] = [np.ones(2, np.float32), np.arange(3) + 1]
    results = compare_all(["a", "b"], got, want)
    assert [r.ok for r in results] == [True, False]
    d = results[1].as_dict()
    assert d["name"] == "b" and d["ok"] is False and d["mismatched"] == 3
    assert set(d) == {f for f in Comparison.__dataclass_fields__}
    with pytest.raises(ValueError):
        compare_all(["a"], got, want)


# -- random_inputs ----------------------------------------------------------------


SPECS = [
    InputSpec("x", np.dtype(np.float32), ["batch", 3, "h"]),
    InputSpec("ids", np.dtype(np.int64), ["batch", "seq"]),
    InputSpec("m", np.dtype(np.bool_), ["seq"]),
    InputSpec("t", np.dtype(object), [2, "seq"]),
    InputSpec("h16", np.dtype(np.float16), [None, "h"]),
    InputSpec("u8", np.dtype(np.uint8), [4, 5]),
    InputSpec("s", np.dtype(np.float64), []),
]


def _equal(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> bool:
    return a.keys() == b.keys() and all(
        a[k].dtype == b[k].dtype and np.array_equal(a[k], b[k]) for k in a
    )


def test_random_inputs_deterministic() -> None:
    first = random_inputs(SPECS, seed=3)
    assert _equal(first, random_inputs(SPECS, seed=3))
    assert not _equal(first, random_inputs(SPECS, seed=4))
    assert list(first) == [s.name for s in SPECS]


def test_random_inputs_dtypes_and_ranges() -> None:
    feeds = random_inputs(SPECS, seed=0)
    for spec in SPECS:
        value = feeds[spec.name]
        if spec.dtype.kind == "O":
            assert value.dtype.kind in "OU"
            assert all(isinstance(v, str) and v for v in value.reshape(-1).tolist())
        else:
            assert value.dtype == spec.dtype, spec
    for name in ("ids", "u8"):
        assert feeds[name].min() >= 0 and feeds[name].max() < 4
    big = random_inputs([InputSpec("i", np.dtype(np.int32), [1000])], seed=1)["i"]
    assert set(np.unique(big).tolist()) == {0, 1, 2, 3}
    assert set(np.unique(feeds["m"]).tolist()) <= {False, True}
    assert feeds["s"].shape == ()
    assert np.isfinite(feeds["x"]).all()


def test_random_inputs_shapes() -> None:
    feeds = random_inputs(SPECS, seed=0)
    batch, h, seq = 1, 8, 8  # leading free axes default to 1, others to 8
    assert feeds["x"].shape == (batch, 3, h)
    assert feeds["ids"].shape == (batch, seq)
    assert feeds["m"].shape == (seq,)
    assert feeds["t"].shape == (2, seq)
    assert feeds["h16"].shape == (1, h)
    assert feeds["u8"].shape == (4, 5)


def test_symbolic_dim_first_seen_on_an_inner_axis_stays_consistent() -> None:
    specs = [
        InputSpec("a", np.dtype(np.float32), [2, "n"]),
        InputSpec("b", np.dtype(np.float32), ["n", "n"]),
    ]
    feeds = random_inputs(specs)
    n = feeds["a"].shape[1]
    assert feeds["b"].shape == (n, n)


def test_random_inputs_overrides() -> None:
    dims = {"batch": 5, "seq": 2, "unused": 9}
    feeds = random_inputs(SPECS, seed=0, dims=dims)
    assert feeds["x"].shape == (5, 3, 8)
    assert feeds["ids"].shape == (5, 2)
    assert feeds["m"].shape == (2,)
    assert feeds["t"].shape == (2, 2)
    assert dims == {"batch": 5, "seq": 2, "unused": 9}


def test_random_inputs_rejects_unknown_kinds() -> None:
    with pytest.raises(ValueError, match="'c'"):
        random_inputs([InputSpec("c", np.dtype(np.complex64), [2])])


# -- .npz -----------------------------------------------------------------------------


def test_npz_round_trip(tmp_path: Path) -> None:
    arrays = {
        "f": np.arange(6, dtype=np.float16).reshape(2, 3),
        "b": np.array([True, False]),
        "i": np.array(7, np.int64),
        "s": np.array([["a", "héllo"], ["日本", ""]], dtype=object),
        "s0": np.array("🙂", dtype=object),
        "u": np.array(["x", "yz"]),
        "e": np.empty((0, 2), dtype=object),
    }
    path = tmp_path / "in.npz"
    save_npz(path, arrays)
    loaded = load_npz(path)
    assert list(loaded) == list(arrays)
    for name, original in arrays.items():
        back = loaded[name]
        assert back.shape == original.shape, name
        assert back.tolist() == original.tolist(), name
        if original.dtype.kind == "O":
            assert back.dtype.kind == "U", name
        else:
            assert back.dtype == original.dtype, name


def test_npz_needs_no_pickle(tmp_path: Path) -> None:
    path = tmp_path / "s.npz"
    save_npz(path, {"s": np.array(["a", "b"], dtype=object)})
    with np.load(path, allow_pickle=False) as data:
        assert data["s"].tolist() == ["a", "b"]


def test_load_npz_refuses_pickled_objects(tmp_path: Path) -> None:
    path = tmp_path / "p.npz"
    np.savez(path, o=np.array([{"a": 1}], dtype=object))
    with pytest.raises(ValueError, match="pickle"):
        load_npz(path)


# -- model_inputs / run_native ----------------------------------------------------


def _model() -> bytes:
    w = numpy_helper.from_array(np.full((3,), 2.0, np.float32), "w")
    graph = helper.make_graph(
        [
            helper.make_node("Mul", ["x", "w"], ["xw"]),
            helper.make_node("Identity", ["xw"], ["y"]),
            helper.make_node("Cast", ["k"], ["kf"], to=TensorProto.FLOAT),
            helper.make_node("Identity", ["t"], ["t_out"]),
        ],
        "g",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3]),
            # An initializer listed as an input too: an overridable default, not a feed.
            helper.make_tensor_value_info("w", TensorProto.FLOAT, [3]),
            helper.make_tensor_value_info("k", TensorProto.INT64, [1, None]),
            helper.make_tensor_value_info("t", TensorProto.STRING, ["n"]),
        ],
        [
            helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 3]),
            helper.make_tensor_value_info("kf", TensorProto.FLOAT, [1, None]),
            helper.make_tensor_value_info("t_out", TensorProto.STRING, ["n"]),
        ],
        initializer=[w],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model.SerializeToString()


def test_model_inputs_skips_initializers(tmp_path: Path) -> None:
    data = _model()
    path = tmp_path / "m.onnx"
    path.write_bytes(data)
    for source in (data, path, str(path)):
        specs = model_inputs(source)
        assert [s.name for s in specs] == ["x", "k", "t"]
        x, k, t = specs
        assert (x.dtype, x.dims) == (np.dtype(np.float32), ["batch", 3])
        assert (k.dtype, k.dims) == (np.dtype(np.int64), [1, None])
        assert (t.dtype, t.dims) == (np.dtype(object), ["n"])
    assert "InputSpec('x'" in repr(specs[0])


def test_model_inputs_feed_native_run() -> None:
    data = _model()
    feeds = random_inputs(model_inputs(data), seed=0)
    assert feeds["k"].shape == (1, 8)
    assert feeds["t"].dtype.kind == "U"
    out = run_native(data, feeds)
    assert set(out) == {"y", "kf", "t_out"}
    np.testing.assert_array_equal(out["y"], feeds["x"] * np.float32(2.0))
    np.testing.assert_array_equal(out["kf"], feeds["k"].astype(np.float32))
    assert out["t_out"].tolist() == feeds["t"].tolist()
    assert compare("t_out", out["t_out"], feeds["t"]).ok
