"""OrtValue methods native code calls, on CPU values, compared with native onnxruntime's."""

from __future__ import annotations

import numpy as np
import onnxruntime as native
import pytest
from onnx import TensorProto

from ortweb import InvalidArgument, OrtValue


@pytest.mark.parametrize("array", [np.ones((2, 3), np.float32), np.arange(5, dtype=np.int64),
                                   np.zeros((0, 4), np.float16), np.array(True)])
def test_like_native(array: np.ndarray) -> None:
    ours, theirs = OrtValue.ortvalue_from_numpy(array), native.OrtValue.ortvalue_from_numpy(array)
    assert ours.tensor_size_in_bytes() == theirs.tensor_size_in_bytes()
    assert ours.is_tensor_sequence() is theirs.is_tensor_sequence() is False
    assert ours.is_sparse_tensor() is theirs.is_sparse_tensor() is False


def test_update_inplace_keeps_the_array() -> None:
    base = np.zeros((2, 2), np.float32)
    value = OrtValue.ortvalue_from_numpy(base)
    value.update_inplace(np.full((2, 2), 3, np.float32))
    assert value.numpy() is base and base.tolist() == [[3, 3], [3, 3]]
    value.update_inplace(OrtValue.ortvalue_from_numpy(np.ones((2, 2), np.float32)))
    assert base.tolist() == [[1, 1], [1, 1]]
    for bad in (np.ones((2, 3), np.float32), np.ones((2, 2), np.float64), [[1, 2], [3, 4]]):
        with pytest.raises(InvalidArgument, match="update_inplace: expected a float32 array"):
            value.update_inplace(bad)


def test_from_numpy_with_onnx_type() -> None:
    bits = np.array([0x3C00, 0xC000], np.uint16)  # float16 1.0 and -2.0
    value = OrtValue.ortvalue_from_numpy_with_onnx_type(bits, TensorProto.FLOAT16)
    theirs = native.OrtValue.ortvalue_from_numpy_with_onnx_type(bits, TensorProto.FLOAT16)
    assert value.data_type() == theirs.data_type() == "tensor(float16)"
    assert value.numpy().tolist() == [1.0, -2.0]
    with pytest.raises(InvalidArgument, match="2-byte elements, the array's are 4 bytes"):
        OrtValue.ortvalue_from_numpy_with_onnx_type(np.ones(2, np.float32), TensorProto.FLOAT16)
    with pytest.raises(InvalidArgument, match=r"onnx_element_type.*got 99"):
        OrtValue.ortvalue_from_numpy_with_onnx_type(bits, 99)


def test_shape_and_type_takes_onnx_element_type_numbers() -> None:
    value = OrtValue.ortvalue_from_shape_and_type([2, 3], TensorProto.FLOAT)
    theirs = native.OrtValue.ortvalue_from_shape_and_type([2, 3], TensorProto.FLOAT)
    assert value.data_type() == theirs.data_type() == "tensor(float)"
    assert value.shape() == theirs.shape() == [2, 3]
    int64 = OrtValue.ortvalue_from_shape_and_type([4], TensorProto.INT64)
    assert int64.data_type() == native.OrtValue.ortvalue_from_shape_and_type(
        [4], TensorProto.INT64).data_type() == "tensor(int64)"
    with pytest.raises(InvalidArgument, match="element_type"):
        OrtValue.ortvalue_from_shape_and_type([2], 999)
