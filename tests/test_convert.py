"""numpy ↔ wire conversion: exact round trips whatever the array's memory layout."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from ortweb._convert import WireTensor, from_wire, to_wire, wire_buffer
from ortweb._dtypes import DTYPES, DType, by_ort

NUMERIC = [d for d in DTYPES if not d.is_string]
STRING = by_ort("string")
IDS = [d.ort for d in NUMERIC]


def _bits(a: np.ndarray) -> np.ndarray:
    """Native, C-ordered raw bits, so NaN payloads and -0.0 compare exactly."""
    c = np.ascontiguousarray(a, dtype=a.dtype.newbyteorder("="))
    if c.dtype == np.bool_:
        return c.view(np.uint8)
    return c.view(np.dtype(f"u{c.dtype.itemsize}"))


def _sample(d: DType, shape: tuple[int, ...], seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape, dtype=np.int64))
    if d.ort == "bool":
        return rng.integers(0, 2, n).astype(bool).reshape(shape)
    if d.numpy.kind == "f":
        return (rng.standard_normal(n) * 100).astype(d.numpy).reshape(shape)
    info = np.iinfo(d.numpy)
    # Extremes included: int64/uint64 must not pass through a float anywhere.
    values = rng.integers(info.min, info.max, n, dtype=d.numpy, endpoint=True)
    if n >= 2:
        values[0], values[1] = info.min, info.max
    return values.reshape(shape)


def _check_wire(w: WireTensor, d: DType, shape: tuple[int, ...]) -> np.ndarray:
    assert w.dtype is d
    assert w.dims == shape
    assert all(type(x) is int for x in w.dims)
    data = w.data
    assert isinstance(data, np.ndarray)
    assert data.ndim == 1
    assert data.flags.c_contiguous
    assert data.dtype == d.wire and data.dtype.isnative
    assert data.size == int(np.prod(shape, dtype=np.int64))
    assert w.nbytes == data.size * d.itemsize
    return data


def _round_trip(a: np.ndarray, d: DType) -> np.ndarray:
    w = to_wire(a, d)
    data = _check_wire(w, d, a.shape)
    # The bridge hands back a fresh buffer; from_wire must not rely on the input's.
    buf = wire_buffer(d, list(w.dims))
    buf[...] = data
    out = from_wire(d, w.dims, buf)
    assert out.dtype == d.numpy
    assert out.shape == a.shape
    np.testing.assert_array_equal(_bits(out), _bits(a))
    return out


# Each keeps the shape and values but changes strides or byte order; 0-d arrays have
# no axes to rearrange (and np.asfortranarray would make them 1-d).
LAYOUTS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "c": lambda a: a,
    "fortran": lambda a: np.asfortranarray(a) if a.ndim else a,
    "transposed": lambda a: np.ascontiguousarray(a.T).T if a.ndim else a,
    "stepped": lambda a: np.repeat(a, 2, axis=0)[::2] if a.ndim else a,
    "reversed": lambda a: a[::-1] if a.ndim else a,
    "byteswapped": lambda a: a.astype(a.dtype.newbyteorder()),
}

SHAPES = [(), (0,), (3, 0, 2), (1,), (7,), (2, 3), (2, 3, 4), (1, 2, 1, 3)]


@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("d", NUMERIC, ids=IDS)
def test_round_trip(d: DType, shape: tuple[int, ...], layout: str) -> None:
    a = LAYOUTS[layout](_sample(d, shape))
    assert a.shape == shape
    _round_trip(a, d)


@pytest.mark.parametrize("d", NUMERIC, ids=IDS)
def test_non_contiguous_views(d: DType) -> None:
    base = _sample(d, (6, 8, 5), seed=1)
    views = [
        base[::2, 1::3, ::-2],
        base[:, 3],
        base.transpose(2, 0, 1),
        base.swapaxes(0, 2)[1:, ::2],
        base[..., 4],
        base[1:1],
    ]
    for v in views:
        assert not v.flags.c_contiguous or v.size == 0 or v.ndim < 2
        out = _round_trip(v, d)
        np.testing.assert_array_equal(_bits(out), _bits(v.copy()))


@pytest.mark.parametrize("d", NUMERIC, ids=IDS)
def test_contiguous_native_is_not_copied(d: DType) -> None:
    for a in (_sample(d, (4, 5)), _sample(d, (3,)), _sample(d, (2, 3, 4))[1]):
        assert a.flags.c_contiguous
        w = to_wire(a, d)
        assert np.shares_memory(w.data, a)


@pytest.mark.parametrize("d", NUMERIC, ids=IDS)
def test_non_native_layouts_are_copied(d: DType) -> None:
    for a in (np.asfortranarray(_sample(d, (4, 5))), _sample(d, (9,))[::3]):
        w = to_wire(a, d)
        assert not np.shares_memory(w.data, a)


def test_float16_bit_patterns_survive() -> None:
    d = by_ort("float16")
    patterns = np.array(
        [
            0x0000,  # +0
            0x8000,  # -0
            0x7C00,  # +inf
            0xFC00,  # -inf
            0x7E00,  # quiet NaN
            0x7C01,  # signalling NaN
            0xFE01,  # negative NaN with payload
            0x0001,  # smallest subnormal
            0x03FF,  # largest subnormal
            0x7BFF,  # largest finite
            0x3C00,  # 1.0
        ],
        dtype=np.uint16,
    )
    a = patterns.view(np.float16)
    for variant in (a, a[::-1], a.astype(">f2"), a.reshape(1, -1).T):
        w = to_wire(variant, d)
        assert isinstance(w.data, np.ndarray)
        assert w.data.dtype == np.uint16
        np.testing.assert_array_equal(w.data, _bits(variant).reshape(-1))
        out = from_wire(d, w.dims, w.data.copy())
        np.testing.assert_array_equal(_bits(out), _bits(variant))
    assert np.signbit(from_wire(d, [1], np.array([0x8000], np.uint16)))[0]


def test_float_special_values() -> None:
    for name in ("float32", "float64"):
        d = by_ort(name)
        a = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, np.finfo(d.numpy).tiny], d.numpy)
        out = _round_trip(a, d)
        assert np.signbit(out[1]) and not np.signbit(out[0])
        assert np.isnan(out[4])


def test_bool_travels_as_zero_or_one() -> None:
    d = by_ort("bool")
    a = np.array([[True, False], [False, True]])
    w = to_wire(a, d)
    assert isinstance(w.data, np.ndarray)
    assert w.data.dtype == np.uint8
    assert w.data.tolist() == [1, 0, 0, 1]
    assert from_wire(d, [2, 2], np.array([1, 0, 0, 1], np.uint8)).tolist() == a.tolist()


def test_int64_extremes_exact() -> None:
    for name in ("int64", "uint64"):
        d = by_ort(name)
        info = np.iinfo(d.numpy)
        a = np.array([info.min, info.max, info.max - 1, 2**53 + 1], dtype=d.numpy)
        out = _round_trip(a, d)
        assert out.tolist() == a.tolist()


# -- strings ------------------------------------------------------------------------

WORDS = ["", "a", "héllo", "日本語", "🙂 emoji", "tab\tnew\nline", "Ωmega" * 20]


@pytest.mark.parametrize("shape", [(), (0,), (2, 0), (7,), (7, 1), (1, 7)], ids=str)
@pytest.mark.parametrize("kind", ["object", "unicode"])
def test_string_round_trip(kind: str, shape: tuple[int, ...]) -> None:
    n = int(np.prod(shape, dtype=np.int64))
    values = WORDS[:n] if shape != () else ["héllo"]
    a = np.empty(len(values), dtype=object)
    a[:] = values
    a = a.reshape(shape)
    if kind == "unicode":
        a = a.astype(str) if a.size else np.zeros(shape, dtype="U1")
    w = to_wire(a, STRING)
    assert w.dims == shape
    assert isinstance(w.data, list)
    assert all(type(s) is str for s in w.data)
    assert w.data == [str(v) for v in a.reshape(-1).tolist()]
    assert w.nbytes == 0
    out = from_wire(STRING, w.dims, list(w.data))
    assert out.dtype == np.dtype(object)
    assert out.shape == shape
    assert out.tolist() == a.tolist()


def test_strings_non_contiguous_order() -> None:
    a = np.array([["a", "b", "c"], ["d", "é", "f"]], dtype=object)
    assert to_wire(a.T, STRING).data == ["a", "d", "b", "é", "c", "f"]
    assert to_wire(np.asfortranarray(a), STRING).data == ["a", "b", "c", "d", "é", "f"]
    assert to_wire(a[:, ::-2], STRING).data == ["c", "a", "f", "d"]


def test_bytes_elements_decode_as_utf8() -> None:
    a = np.array([b"caf\xc3\xa9", "日本", b"", b"plain"], dtype=object)
    assert to_wire(a, STRING).data == ["café", "日本", "", "plain"]
    s = np.array([b"ab", b"\xe2\x82\xac"])  # fixed-width bytes ('S')
    assert s.dtype.kind == "S"
    assert to_wire(s, STRING).data == ["ab", "€"]


def test_from_wire_string_keeps_list_elements_as_str() -> None:
    out = from_wire(STRING, [2, 2], ["a", "bb", "", "ü"])
    assert out.shape == (2, 2)
    assert [type(v) for v in out.reshape(-1)] == [str] * 4
    assert out[1, 1] == "ü"


# -- wire_buffer ----------------------------------------------------------------------


@pytest.mark.parametrize("d", NUMERIC, ids=IDS)
@pytest.mark.parametrize("dims", [[], [0], [3], [2, 3, 4], [5, 0, 2]], ids=str)
def test_wire_buffer(d: DType, dims: list[int]) -> None:
    buf = wire_buffer(d, dims)
    assert buf.dtype == d.wire
    assert buf.ndim == 1 and buf.flags.c_contiguous and buf.flags.writeable
    assert buf.size == int(np.prod(dims, dtype=np.int64))
    assert from_wire(d, dims, buf).shape == tuple(dims)


def test_wire_buffer_refuses_strings() -> None:
    with pytest.raises(AssertionError):
        wire_buffer(STRING, [2])


# -- property test ------------------------------------------------------------------


@st.composite
def _arrays(draw: st.DrawFn) -> tuple[DType, np.ndarray]:
    d = draw(st.sampled_from(NUMERIC))
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=4))
    base = draw(hnp.arrays(d.numpy, shape))
    layout = draw(st.sampled_from(sorted(LAYOUTS)))
    return d, LAYOUTS[layout](base)


@settings(max_examples=300, deadline=None)
@given(_arrays())
def test_round_trip_property(case: tuple[DType, np.ndarray]) -> None:
    d, a = case
    _round_trip(a, d)


@st.composite
def _string_arrays(draw: st.DrawFn) -> np.ndarray:
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=3))
    n = int(np.prod(shape, dtype=np.int64))
    # No NUL: numpy's fixed-width unicode strips trailing NULs, ORT strings do not.
    text = st.text(st.characters(blacklist_categories=["Cs"], blacklist_characters="\x00"))
    values = draw(st.lists(text, min_size=n, max_size=n))
    a = np.empty(n, dtype=object)
    a[:] = values
    a = a.reshape(shape)
    if draw(st.booleans()) and a.ndim >= 2:
        a = a.T
    return a


@settings(max_examples=150, deadline=None)
@given(_string_arrays())
def test_string_round_trip_property(a: np.ndarray) -> None:
    w = to_wire(a, STRING)
    out = from_wire(STRING, w.dims, w.data)
    assert out.shape == a.shape
    assert out.tolist() == a.tolist()
