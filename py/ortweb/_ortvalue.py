"""``OrtValue``: a tensor on the CPU or in a WebGPU buffer, as onnxruntime's.

Who releases what (onnxruntime-web's rules, kept):

- a value made by :meth:`OrtValue.from_gpu_buffer` wraps the *user's* GPUBuffer:
  ortweb never destroys it; ``dispose()`` only forgets it;
- a value made by :meth:`OrtValue.ortvalue_from_numpy` / ``ortvalue_from_shape_and_type``
  on ``'webgpu'`` owns a buffer ortweb created: ``dispose()`` destroys it;
- an output a session left on the GPU (``preferred_output_location``) belongs to ORT
  until you ``dispose()`` it or read it with ``get_data(release=True)``.

A GPU value that is garbage-collected without being disposed is disposed by a
finalizer, and counted in :func:`live_handles` as ``finalized``, so tests can
catch forgotten ones.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from typing import Any

import numpy as np

from . import _bridge, _dtypes
from ._convert import to_wire
from ._devices import device
from .errors import InvalidArgument

__all__ = ["OrtValue", "live_cpu_values", "resolve_element_type"]

_CPU_VALUES: weakref.WeakSet[OrtValue] = weakref.WeakSet()

def resolve_element_type(element_type: Any) -> _dtypes.DType:
    """numpy dtype, ``'tensor(float)'``, ``'float32'`` or an ONNX element type number
    (``1`` is float, as native onnxruntime takes it) → DType."""
    if isinstance(element_type, int) and not isinstance(element_type, bool):
        for dtype in _dtypes.DTYPES:
            if dtype.elem_type == element_type:
                return dtype
    if isinstance(element_type, str):
        try:
            return _dtypes.by_onnx(element_type)
        except KeyError:
            pass
    try:
        found = _dtypes.by_numpy(np.dtype(element_type))
    except TypeError:
        found = None
    if found is None:
        raise InvalidArgument(
            f"element_type: expected a numpy dtype or a type such as 'tensor(float)', "
            f"got {element_type!r}"
        )
    return found


def _shape(shape: Any) -> tuple[int, ...]:
    try:
        dims = tuple(int(d) for d in shape)
    except TypeError:
        raise InvalidArgument(f"shape: expected a sequence of ints, got {shape!r}") from None
    if any(d < 0 for d in dims):
        raise InvalidArgument(f"shape: dimensions must be non-negative, got {list(dims)}")
    return dims


class OrtValue:
    """A tensor on the CPU (a numpy array) or in a WebGPU buffer.

    Create with :meth:`ortvalue_from_numpy`, :meth:`ortvalue_from_shape_and_type` or
    :meth:`from_gpu_buffer`; sessions return them for outputs kept on the GPU.
    """

    _handle: int | None
    _array: np.ndarray | None
    _dtype: _dtypes.DType
    _dims: tuple[int, ...]
    _owner: str
    _disposed: bool
    _finalizer: weakref.finalize | None

    def __init__(self) -> None:
        raise TypeError(
            "use OrtValue.ortvalue_from_numpy(), ortvalue_from_shape_and_type() or "
            "from_gpu_buffer()"
        )

    @classmethod
    def _make(
        cls, dtype: _dtypes.DType, dims: Sequence[int], *, array: np.ndarray | None = None,
        handle: int | None = None, owner: str = "",
    ) -> OrtValue:
        self = cls.__new__(cls)
        self._dtype = dtype
        self._dims = tuple(int(d) for d in dims)
        self._array = array
        self._handle = handle
        self._owner = owner
        self._disposed = False
        if handle is None:
            _CPU_VALUES.add(self)
            self._finalizer = None
        else:
            self._finalizer = weakref.finalize(self, _bridge.dispose_value, handle, True)
        return self

    # -- construction ---------------------------------------------------------------

    @classmethod
    def _on_cpu(cls, array: Any) -> OrtValue:
        if not isinstance(array, np.ndarray | np.generic):
            raise InvalidArgument(
                f"ortvalue_from_numpy: expected a numpy.ndarray, got {type(array).__name__}"
            )
        array = np.asarray(array)
        dtype = _dtypes.by_numpy(array.dtype)
        if dtype is None:
            raise InvalidArgument(f"ortvalue_from_numpy: unsupported dtype {array.dtype}")
        return cls._make(dtype, array.shape, array=array, owner="cpu")

    @classmethod
    async def ortvalue_from_numpy_async(
        cls, array: Any, device_type: str = "cpu", device_id: int = 0
    ) -> OrtValue:
        """Async :meth:`ortvalue_from_numpy` (the upload to WebGPU is asynchronous)."""
        value = cls._on_cpu(array)
        if device(device_type) == "cpu":
            return value
        # The CPU value only served to check the array; it holds nothing to release.
        dtype, data = value._dtype, value._array
        value.dispose()
        assert data is not None
        if not dtype.gpu:
            raise InvalidArgument(
                f"ortvalue_from_numpy: {dtype.onnx} cannot live in a WebGPU buffer "
                "(onnxruntime-web takes float32, float16, int32, int64, uint32, uint8, bool)"
            )
        handle = await _bridge.upload_value(to_wire(data, dtype))
        return cls._make(dtype, data.shape, handle=handle, owner="ortweb")

    @classmethod
    def ortvalue_from_numpy(
        cls, array: Any, device_type: str = "cpu", device_id: int = 0
    ) -> OrtValue:
        """A value holding ``array``: on the CPU, or copied into a new WebGPU buffer.

        ``device_type='webgpu'`` uploads to the device ORT's WebGPU sessions use
        (blocks through JSPI; in async code use :meth:`ortvalue_from_numpy_async`).
        """
        if device(device_type) == "cpu":
            return cls._on_cpu(array)
        return _bridge.block_on(cls.ortvalue_from_numpy_async(array, device_type, device_id))

    @classmethod
    def ortvalue_from_numpy_with_onnx_type(cls, data: Any, onnx_element_type: int) -> OrtValue:
        """A CPU value of ``data`` read as ONNX element type ``onnx_element_type``
        (``TensorProto.FLOAT`` = 1, ...), for arrays whose numpy dtype is not the
        ONNX type's own (float16 bits in uint16 arrays, ...)."""
        code = onnx_element_type if isinstance(onnx_element_type, int) else None
        dtype = next((d for d in _dtypes.DTYPES if d.elem_type == code), None)
        if dtype is None:
            raise InvalidArgument(
                "onnx_element_type: expected an ONNX TensorProto element type that "
                f"onnxruntime-web supports, got {onnx_element_type!r}"
            ) from None
        array = np.asarray(data)
        if array.dtype.itemsize != dtype.numpy.itemsize and dtype.numpy.kind not in "OUS":
            raise InvalidArgument(
                f"ortvalue_from_numpy_with_onnx_type: {dtype.onnx} takes "
                f"{dtype.numpy.itemsize}-byte elements, the array's are "
                f"{array.dtype.itemsize} bytes ({array.dtype})"
            )
        return cls._on_cpu(array.view(dtype.numpy) if array.dtype.kind not in "OUS" else array)

    @classmethod
    async def ortvalue_from_shape_and_type_async(
        cls, shape: Sequence[int], element_type: Any = np.float32, device_type: str = "cpu",
        device_id: int = 0,
    ) -> OrtValue:
        """Async :meth:`ortvalue_from_shape_and_type`."""
        dtype = resolve_element_type(element_type)
        zeros = np.zeros(_shape(shape), dtype=dtype.numpy)
        return await cls.ortvalue_from_numpy_async(zeros, device_type)

    @classmethod
    def ortvalue_from_shape_and_type(
        cls, shape: Sequence[int], element_type: Any = np.float32, device_type: str = "cpu",
        device_id: int = 0,
    ) -> OrtValue:
        """A zero-filled value, e.g. a pre-allocated output on ``'webgpu'``."""
        dtype = resolve_element_type(element_type)
        zeros = np.zeros(_shape(shape), dtype=dtype.numpy)
        return cls.ortvalue_from_numpy(zeros, device_type)

    @classmethod
    def from_gpu_buffer(cls, buffer: Any, element_type: Any, shape: Sequence[int]) -> OrtValue:
        """Wrap a user's ``GPUBuffer`` (never destroyed by ortweb).

        The buffer must be on the device of :func:`ortweb.webgpu_device` and have
        STORAGE usage (COPY_SRC too, to read it back with :meth:`numpy`). Its usage
        and size are checked now; its device and whether it was destroyed, before
        each run that uses it.
        """
        dtype = resolve_element_type(element_type)
        dims = _shape(shape)
        if not dtype.gpu:
            raise InvalidArgument(
                f"from_gpu_buffer: {dtype.onnx} cannot live in a WebGPU buffer "
                "(onnxruntime-web takes float32, float16, int32, int64, uint32, uint8, bool)"
            )
        handle = _bridge.value_from_gpu_buffer(buffer, dtype, dims)
        return cls._make(dtype, dims, handle=handle, owner="user")

    @classmethod
    def _from_output(cls, output: _bridge.GpuOutput) -> OrtValue:
        return cls._make(output.dtype, output.dims, handle=output.handle, owner="ort")

    # -- properties -------------------------------------------------------------------

    def _check(self) -> None:
        if self._disposed:
            raise InvalidArgument(
                f"this OrtValue ({self._dtype.onnx} {list(self._dims)}) was disposed; "
                "it cannot be read or fed any more"
            )

    def shape(self) -> list[int]:
        """The tensor's dimensions."""
        return list(self._dims)

    def data_type(self) -> str:
        """``'tensor(float)'``, ``'tensor(int64)'``, ..."""
        return self._dtype.onnx

    def element_type(self) -> np.dtype:
        """The numpy dtype of the elements."""
        return self._dtype.numpy

    def device_name(self) -> str:
        """``'cpu'`` or ``'webgpu'``."""
        return "cpu" if self._handle is None else "webgpu"

    def is_tensor(self) -> bool:
        """Always True: ortweb's values are tensors (as onnxruntime's for a tensor)."""
        return True

    def has_value(self) -> bool:
        """Whether the value still holds its data (False once disposed)."""
        return not self._disposed

    def is_tensor_sequence(self) -> bool:
        """Always False: sequences of tensors are not supported."""
        return False

    def is_sparse_tensor(self) -> bool:
        """Always False: sparse tensors are not supported."""
        return False

    def tensor_size_in_bytes(self) -> int:
        """Bytes the elements take (strings: onnxruntime-web stores them as JS strings,
        so their UTF-8 length is counted)."""
        if self._dtype.numpy.kind in "OUS":
            self._check()
            return int(sum(len(str(s).encode()) for s in self.numpy().ravel()))
        return int(np.prod(self._dims, dtype=np.int64)) * self._dtype.numpy.itemsize

    def update_inplace(self, data: Any) -> None:
        """Copy ``data`` (a numpy array or an OrtValue of the same shape and type)
        into this CPU value, keeping the array it wraps."""
        self._check()
        source = data.numpy() if isinstance(data, OrtValue) else data
        if self._handle is not None:
            raise InvalidArgument(
                "update_inplace: this OrtValue is in a WebGPU buffer; write to its "
                "gpu_buffer with device.queue.writeBuffer, or make a new value"
            )
        if not isinstance(source, np.ndarray) or source.shape != self._dims or (
            source.dtype != self._dtype.numpy
        ):
            got = (f"{source.dtype} {list(source.shape)}" if isinstance(source, np.ndarray)
                   else type(source).__name__)
            raise InvalidArgument(
                f"update_inplace: expected a {self._dtype.numpy} array of shape "
                f"{list(self._dims)}, got {got}"
            )
        assert self._array is not None
        np.copyto(self._array, source)

    @property
    def location(self) -> str:
        """``'cpu'`` or ``'gpu-buffer'`` (onnxruntime-web's names)."""
        return "cpu" if self._handle is None else "gpu-buffer"

    @property
    def is_disposed(self) -> bool:
        """Whether :meth:`dispose` has run."""
        return self._disposed

    @property
    def owner(self) -> str:
        """Who releases the memory: ``'cpu'``, ``'ort'``, ``'ortweb'`` or ``'user'``."""
        return self._owner

    @property
    def gpu_buffer(self) -> Any:
        """The JavaScript ``GPUBuffer`` holding the data (GPU values only)."""
        self._check()
        if self._handle is None:
            raise InvalidArgument("gpu_buffer: this OrtValue is on the CPU")
        return _bridge.value_gpu_buffer(self._handle)

    @property
    def handle(self) -> int | None:
        """The bridge's handle of a GPU value (None on the CPU)."""
        return self._handle

    # -- data -------------------------------------------------------------------------

    async def get_data(self, release: bool = False) -> np.ndarray:
        """Copy the data to a numpy array (downloading from the GPU).

        ``release=True`` disposes the value after reading (ORT-web's
        ``getData(true)``).
        """
        self._check()
        if self._handle is None:
            assert self._array is not None
            data = self._array
            if release:
                self.dispose()
            return data
        handle = self._handle
        if release:
            self._mark_disposed()
        return await _bridge.read_value(handle, release)

    def numpy(self) -> np.ndarray:
        """The data as a numpy array (a GPU value is downloaded; blocks through JSPI)."""
        self._check()
        if self._handle is None:
            assert self._array is not None
            return self._array
        return _bridge.block_on(self.get_data())

    def _mark_disposed(self) -> None:
        self._disposed = True
        if self._finalizer is not None:
            self._finalizer.detach()

    def dispose(self) -> None:
        """Release the data now (see the module docstring for who owns what); safe twice."""
        if self._disposed:
            return
        self._mark_disposed()
        if self._handle is not None:
            _bridge.dispose_value(self._handle)
        self._array = None

    def __enter__(self) -> OrtValue:
        return self

    def __exit__(self, *exc: object) -> None:
        self.dispose()

    def __repr__(self) -> str:
        state = " disposed" if self._disposed else ""
        return (f"<ortweb.OrtValue {self._dtype.onnx} {list(self._dims)} "
                f"on {self.location} owner={self._owner}{state}>")


def live_cpu_values() -> int:
    """CPU OrtValues alive and not disposed."""
    return sum(1 for v in _CPU_VALUES if not v.is_disposed)
