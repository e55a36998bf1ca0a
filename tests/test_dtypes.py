"""The DTYPES table agrees with ONNX, onnxruntime, numpy and JavaScript typed arrays."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

from ortweb import _dtypes
from ortweb._dtypes import DTYPES, by_numpy, by_onnx, by_ort

IDS = [d.ort for d in DTYPES]

# Bytes per element of each JavaScript typed array, and the numpy kind whose
# bytes it reads; the bridge copies raw bytes, so both must match the wire dtype.
TYPED_ARRAYS = {
    "Float32Array": (4, "f"),
    "Float64Array": (8, "f"),
    "Int8Array": (1, "i"),
    "Int16Array": (2, "i"),
    "Int32Array": (4, "i"),
    "BigInt64Array": (8, "i"),
    "Uint8Array": (1, "u"),
    "Uint16Array": (2, "u"),
    "Uint32Array": (4, "u"),
    "BigUint64Array": (8, "u"),
}


def _inner(onnx_name: str) -> str:
    assert onnx_name.startswith("tensor(") and onnx_name.endswith(")"), onnx_name
    return onnx_name[len("tensor("):-1]


def test_names_are_unique() -> None:
    for attr in ("onnx", "ort", "elem_type"):
        values = [getattr(d, attr) for d in DTYPES]
        assert len(values) == len(set(values)), attr
    numeric = [d.numpy for d in DTYPES if not d.is_string]
    assert len(numeric) == len(set(numeric))
    assert sum(d.is_string for d in DTYPES) == 1


def test_covers_every_ort_web_tensor_type() -> None:
    # ORT-web's Tensor.Type union, less the 4-bit types ortweb does not feed.
    assert {d.ort for d in DTYPES} == {
        "float32", "uint8", "int8", "uint16", "int16", "int32", "int64",
        "string", "bool", "float16", "float64", "uint32", "uint64",
    }


@pytest.mark.parametrize("d", DTYPES, ids=IDS)
def test_elem_type_matches_onnx(d: _dtypes.DType) -> None:
    assert d.elem_type == TensorProto.DataType.Value(_inner(d.onnx).upper())
    np_dtype = np.dtype(helper.tensor_dtype_to_np_dtype(d.elem_type))
    assert np_dtype == (np.dtype(object) if d.is_string else d.numpy)
    assert d.numpy == np_dtype


@pytest.mark.parametrize("d", DTYPES, ids=IDS)
def test_onnx_name_is_what_onnxruntime_reports(d: _dtypes.DType) -> None:
    # The metadata a session reports must round-trip through by_onnx.
    x = helper.make_tensor_value_info("x", d.elem_type, [2])
    y = helper.make_tensor_value_info("y", d.elem_type, [2])
    graph = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "g", [x], [y])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    assert sess.get_inputs()[0].type == d.onnx
    assert by_onnx(sess.get_outputs()[0].type) is d


@pytest.mark.parametrize("d", DTYPES, ids=IDS)
def test_wire_dtype(d: _dtypes.DType) -> None:
    if d.is_string:
        assert d.wire is None and d.typed_array is None
        assert d.itemsize == 0
        assert d.numpy == np.dtype(object)
        assert d.gpu is False
        return
    assert d.wire is not None
    assert d.wire.itemsize == d.numpy.itemsize == d.itemsize
    assert d.wire.isnative
    assert d.wire.kind in "iuf"
    # ORT-web spells every numeric type as numpy names it.
    assert d.ort == d.numpy.name
    size, kind = TYPED_ARRAYS[d.typed_array or ""]
    assert (d.wire.itemsize, d.wire.kind) == (size, kind)


def test_wire_types_that_differ_from_numpy() -> None:
    differ = {d.ort: d.wire for d in DTYPES if not d.is_string and d.wire != d.numpy}
    assert differ == {"float16": np.dtype(np.uint16), "bool": np.dtype(np.uint8)}


@pytest.mark.parametrize("d", DTYPES, ids=IDS)
def test_lookups(d: _dtypes.DType) -> None:
    assert by_onnx(d.onnx) is d
    assert by_onnx(d.ort) is d
    assert by_ort(d.ort) is d
    if not d.is_string:
        assert by_numpy(d.numpy) is d
        assert by_numpy(d.numpy.type) is d


def test_by_ort_rejects_onnx_spelling() -> None:
    with pytest.raises(KeyError, match="tensor"):
        by_ort("tensor(float)")


@pytest.mark.parametrize("name", ["float", "tensor(bfloat16)", "tensor(int4)", "", "Float32"])
def test_unknown_names_raise_key_error(name: str) -> None:
    with pytest.raises(KeyError):
        by_onnx(name)
    with pytest.raises(KeyError):
        by_ort(name)


@pytest.mark.parametrize(
    "spelling", [">f4", ">f8", ">f2", ">i2", ">i4", ">i8", ">u2", ">u4", ">u8", "<f4", "=i8"]
)
def test_by_numpy_ignores_byte_order(spelling: str) -> None:
    dt = np.dtype(spelling)
    found = by_numpy(dt)
    assert found is not None
    assert found.numpy == dt.newbyteorder("=")
    assert found.numpy.isnative


@pytest.mark.parametrize("spelling", ["U", "U7", "<U3", ">U3", "S", "S5", "O"])
def test_by_numpy_strings(spelling: str) -> None:
    found = by_numpy(np.dtype(spelling))
    assert found is not None and found.is_string
    assert found.onnx == "tensor(string)"


# long double only differs from float64 where the platform gives it more bytes.
UNSUPPORTED = ["c8", "c16", ">c8", "M8[s]", "m8[ns]", "V4"] + (
    ["g"] if np.dtype("g").itemsize > 8 else []
)


@pytest.mark.parametrize("spelling", UNSUPPORTED)
def test_by_numpy_unsupported_is_none(spelling: str) -> None:
    assert by_numpy(np.dtype(spelling)) is None


def test_by_numpy_platform_aliases() -> None:
    # C-level aliases must land on the same entry as the fixed-width names.
    assert by_numpy(np.dtype(np.intc)) is by_numpy(np.dtype(np.int32))
    assert by_numpy(np.dtype(np.longlong)) is by_numpy(np.dtype(np.int64))
    assert by_numpy(np.dtype(np.ulonglong)) is by_numpy(np.dtype(np.uint64))
    assert by_numpy(np.dtype(np.double)) is by_numpy(np.dtype(np.float64))
    assert by_numpy(np.dtype(np.half)) is by_numpy(np.dtype(np.float16))
