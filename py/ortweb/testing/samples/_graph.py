"""What every sample model shares: the stamps, the type tables, the builders' helpers.

The models are stamped with opset 17 (default domain) and IR version 8:
onnxruntime-web 1.30 and native onnxruntime both load that combination, and
newer stamps buy nothing for ops this simple. Weights come from
``numpy.random.default_rng(seed)`` so that two runs (or the browser and the
host) see byte-identical models.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

__all__ = ["ADD_TYPES", "DTYPES", "IR_VERSION", "OPSET", "Shape", "elem_type", "finish", "init",
           "value_info", "weights"]

OPSET = 17
IR_VERSION = 8

Shape = Sequence[int | str | None]

# Read-only so that a test cannot mutate the table every other module relies on.
DTYPES: Mapping[str, np.dtype] = MappingProxyType(
    {
        "tensor(float)": np.dtype(np.float32),
        "tensor(double)": np.dtype(np.float64),
        "tensor(float16)": np.dtype(np.float16),
        "tensor(int8)": np.dtype(np.int8),
        "tensor(int16)": np.dtype(np.int16),
        "tensor(int32)": np.dtype(np.int32),
        "tensor(int64)": np.dtype(np.int64),
        "tensor(uint8)": np.dtype(np.uint8),
        "tensor(uint16)": np.dtype(np.uint16),
        "tensor(uint32)": np.dtype(np.uint32),
        "tensor(uint64)": np.dtype(np.uint64),
        "tensor(bool)": np.dtype(np.bool_),
        # onnxruntime hands strings back as object arrays; it accepts both
        # object and numpy unicode (``<U``) arrays as input.
        "tensor(string)": np.dtype(object),
    }
)

_ELEM_TYPES: Mapping[str, int] = MappingProxyType(
    {
        "tensor(float)": TensorProto.FLOAT,
        "tensor(double)": TensorProto.DOUBLE,
        "tensor(float16)": TensorProto.FLOAT16,
        "tensor(int8)": TensorProto.INT8,
        "tensor(int16)": TensorProto.INT16,
        "tensor(int32)": TensorProto.INT32,
        "tensor(int64)": TensorProto.INT64,
        "tensor(uint8)": TensorProto.UINT8,
        "tensor(uint16)": TensorProto.UINT16,
        "tensor(uint32)": TensorProto.UINT32,
        "tensor(uint64)": TensorProto.UINT64,
        "tensor(bool)": TensorProto.BOOL,
        "tensor(string)": TensorProto.STRING,
    }
)

# The types onnx's Add-14 schema accepts; bool and string have no arithmetic.
ADD_TYPES = frozenset(DTYPES) - {"tensor(bool)", "tensor(string)"}


def elem_type(type_str: str) -> int:
    """The ``TensorProto`` element type of an onnxruntime type string.

    Raises
    ------
    ValueError
        If ``type_str`` is not a key of :data:`DTYPES`.
    """
    try:
        return _ELEM_TYPES[type_str]
    except KeyError:
        known = ", ".join(_ELEM_TYPES)
        raise ValueError(f"unknown tensor type {type_str!r}; expected one of: {known}") from None


def value_info(name: str, elem: int, shape: Shape) -> onnx.ValueInfoProto:
    """A graph input or output: ``elem`` is a ``TensorProto`` element type."""
    return helper.make_tensor_value_info(name, elem, list(shape))


def init(name: str, array: np.ndarray) -> onnx.TensorProto:
    """An initializer named ``name`` holding ``array``."""
    return numpy_helper.from_array(np.ascontiguousarray(array), name=name)


def finish(graph: onnx.GraphProto, doc: str) -> bytes:
    """The stamped, checked, serialized model of ``graph``."""
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", OPSET)],
        ir_version=IR_VERSION,
        producer_name="ortweb.samples",
        doc_string=doc,
    )
    # full_check runs strict shape inference, which catches a declared output
    # shape that disagrees with what the ops produce: onnxruntime-web would
    # otherwise only complain at run time, and inside the browser.
    onnx.checker.check_model(model, full_check=True)
    return model.SerializeToString()


def weights(rng: np.random.Generator, shape: tuple[int, ...], fan_in: int) -> np.ndarray:
    """Random float32 weights of ``shape`` for a layer with ``fan_in`` inputs."""
    # Scaled by 1/sqrt(fan_in) so activations stay O(1) whatever the size,
    # which keeps float32 comparisons against a numpy reference tight.
    return (rng.standard_normal(shape) / np.sqrt(fan_in)).astype(np.float32)
