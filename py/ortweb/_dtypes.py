"""The one table of tensor element types: onnxruntime names, ORT-web names, numpy.

ORT-web names a type ``'float32'``; onnxruntime's Python API says ``'tensor(float)'``;
numpy says ``float32``. Two types need a different *wire* type between Python and
JavaScript: float16 travels as uint16 bits (Pyodide 0.27.7 cannot read a
``Float16Array``) and bool as uint8. The typed array JavaScript reads each wire
type into is ``TYPED_ARRAYS`` in ``bridge_js/tensors.js`` (tests/test_dtypes.py
holds the two tables to each other).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import numpy.typing as npt

__all__ = ["DTYPES", "DType", "by_numpy", "by_onnx", "by_ort"]


@dataclass(frozen=True)
class DType:
    """One tensor element type.

    Attributes
    ----------
    onnx : str
        onnxruntime's spelling, e.g. ``'tensor(float)'``.
    ort : str
        onnxruntime-web's spelling, e.g. ``'float32'``.
    numpy : numpy.dtype
        The numpy dtype users feed and get back (``object`` for strings).
    wire : numpy.dtype or None
        The dtype whose bytes travel to JavaScript (None for strings).
    elem_type : int
        ONNX ``TensorProto.DataType`` value.
    gpu : bool
        Whether ORT-web can keep this type in a WebGPU buffer (``Tensor.fromGpuBuffer``
        takes float32, float16, int32, int64, uint32, uint8 and bool).
    """

    onnx: str
    ort: str
    numpy: np.dtype
    wire: np.dtype | None
    elem_type: int
    gpu: bool = True

    @property
    def itemsize(self) -> int:
        """Bytes per element on the wire (0 for strings)."""
        return 0 if self.wire is None else self.wire.itemsize

    @property
    def is_string(self) -> bool:
        return self.wire is None


def _d(onnx: str, ort: str, npt: Any, wire: Any, elem: int, gpu: bool = True) -> DType:
    return DType(onnx, ort, np.dtype(npt), None if wire is None else np.dtype(wire), elem, gpu)


DTYPES: tuple[DType, ...] = (
    _d("tensor(float)", "float32", np.float32, np.float32, 1),
    _d("tensor(uint8)", "uint8", np.uint8, np.uint8, 2),
    _d("tensor(int8)", "int8", np.int8, np.int8, 3, gpu=False),
    _d("tensor(uint16)", "uint16", np.uint16, np.uint16, 4, gpu=False),
    _d("tensor(int16)", "int16", np.int16, np.int16, 5, gpu=False),
    _d("tensor(int32)", "int32", np.int32, np.int32, 6),
    _d("tensor(int64)", "int64", np.int64, np.int64, 7),
    _d("tensor(string)", "string", object, None, 8, gpu=False),
    _d("tensor(bool)", "bool", np.bool_, np.uint8, 9),
    _d("tensor(float16)", "float16", np.float16, np.uint16, 10),
    _d("tensor(double)", "float64", np.float64, np.float64, 11, gpu=False),
    _d("tensor(uint32)", "uint32", np.uint32, np.uint32, 12),
    _d("tensor(uint64)", "uint64", np.uint64, np.uint64, 13, gpu=False),
)

_BY_ONNX = {d.onnx: d for d in DTYPES}
_BY_ORT = {d.ort: d for d in DTYPES}
_BY_NUMPY = {d.numpy: d for d in DTYPES if not d.is_string}


def by_onnx(name: str) -> DType:
    """Look up ``'tensor(float)'``-style names (also accepts ORT-web names)."""
    found = _BY_ONNX.get(name) or _BY_ORT.get(name)
    if found is None:
        raise KeyError(f"unknown tensor type {name!r}")
    return found


def by_ort(name: str) -> DType:
    """Look up ORT-web names such as ``'float32'``."""
    found = _BY_ORT.get(name)
    if found is None:
        raise KeyError(f"unknown ORT-web tensor type {name!r}")
    return found


def by_numpy(dtype: npt.DTypeLike) -> DType | None:
    """The ortweb type of a numpy dtype (or scalar type, or anything ``np.dtype`` takes).

    Unicode, bytes and object arrays map to string.
    """
    dtype = np.dtype(dtype)
    if dtype.kind in "OUS":
        return _BY_ONNX["tensor(string)"]
    return _BY_NUMPY.get(dtype.newbyteorder("=") if dtype.byteorder == ">" else dtype)
