"""numpy ↔ wire conversion: the hop between a user's array and the bridge.

A *wire* array is C-contiguous, native-endian and of the dtype whose bytes the
bridge copies into a JavaScript typed array (float16 as uint16 bits, bool as
uint8). Strings travel as a flat list of ``str``. Nothing here imports ``js``, so
it is unit-tested on the host.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ._dtypes import DType

__all__ = ["WireTensor", "from_wire", "to_wire", "wire_buffer"]


@dataclass(slots=True)
class WireTensor:
    """A tensor ready for the bridge (not frozen only because a frozen dataclass
    costs several times more to build, once per feed per run).

    Attributes
    ----------
    dtype : DType
    dims : tuple of int
    data : numpy.ndarray or list of str
        1-d wire array (or strings), length ``prod(dims)``.
    """

    dtype: DType
    dims: tuple[int, ...]
    data: np.ndarray | list[str]

    @property
    def nbytes(self) -> int:
        return 0 if isinstance(self.data, list) else int(self.data.nbytes)


def to_wire(array: np.ndarray, dtype: DType) -> WireTensor:
    """Make the wire form of ``array`` (already checked to be of ``dtype``).

    Non-contiguous, Fortran-ordered and byte-swapped arrays are copied into C order;
    contiguous native ones are viewed, not copied.
    """
    dims = array.shape  # a tuple of Python ints already
    if dtype.is_string:
        flat = array.reshape(-1)
        return WireTensor(dtype, dims, [_as_str(v) for v in flat.tolist()])
    assert dtype.wire is not None
    data = np.ascontiguousarray(array, dtype=dtype.numpy).reshape(-1)
    if dtype.wire != dtype.numpy:
        data = data.view(dtype.wire)
    return WireTensor(dtype, dims, data)


def _as_str(value: object) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8")
    return str(value)


def wire_buffer(dtype: DType, dims: Sequence[int]) -> np.ndarray:
    """An uninitialised wire array the bridge fills with an output's bytes."""
    assert dtype.wire is not None, "strings have no wire buffer"
    count = math.prod(dims)  # np.prod is far slower in Pyodide; a hot path
    return np.empty(count, dtype=dtype.wire)


def from_wire(dtype: DType, dims: Sequence[int], data: np.ndarray | Sequence[str]) -> np.ndarray:
    """Turn a filled wire buffer (or a list of strings) into the user's array."""
    shape = tuple(map(int, dims))
    if dtype.is_string:
        out = np.empty(len(data), dtype=object)
        out[:] = list(data)
        return out.reshape(shape)
    assert isinstance(data, np.ndarray)
    if dtype.wire != dtype.numpy:
        data = data.view(dtype.numpy)
    return data.reshape(shape)
