"""``IOBinding``: bind inputs and outputs to CPU or WebGPU memory, as onnxruntime's.

Every binding is checked when it is made (names, element type, rank, fixed dims,
buffer size) and again before the run (device, destroyed buffers), so a bad
binding raises ``InvalidArgument`` instead of reaching ORT-web, where it would
return garbage or break the session.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ._metadata import NodeArg, format_shape
from ._ortvalue import OrtValue, resolve_element_type
from ._validate import check_value
from .errors import InvalidArgument

if TYPE_CHECKING:
    from ._session import InferenceSession

__all__ = ["IOBinding"]

_CPU = ("cpu",)
_GPU = ("webgpu", "gpu", "gpu-buffer")


def _is_gpu(device_type: Any) -> bool:
    name = str(device_type).lower()
    if name in _GPU:
        return True
    if name in _CPU:
        return False
    raise InvalidArgument(f"device_type: expected 'cpu' or 'webgpu', got {device_type!r}")


class IOBinding:
    """Inputs and outputs bound for :meth:`InferenceSession.run_with_iobinding`.

    Made by :meth:`InferenceSession.io_binding`. Outputs not bound are not computed
    into anything you can read; bind each output you want.
    """

    def __init__(self, session: InferenceSession):
        self._session = session
        self._inputs: dict[str, np.ndarray | OrtValue] = {}
        self._outputs: dict[str, OrtValue | str] = {}  # value, or 'cpu' / 'webgpu'
        self._results: list[OrtValue] = []

    def _output_arg(self, name: str) -> NodeArg:
        for arg in self._session.get_outputs():
            if arg.name == name:
                return arg
        known = ", ".join(repr(a.name) for a in self._session.get_outputs())
        raise InvalidArgument(f"unknown output name {name!r}; the model's outputs are: {known}")

    def _input_arg(self, name: str) -> NodeArg:
        for arg in self._session.get_inputs():
            if arg.name == name:
                return arg
        known = ", ".join(repr(a.name) for a in self._session.get_inputs())
        raise InvalidArgument(f"unknown input name {name!r}; the model's inputs are: {known}")

    # -- inputs -------------------------------------------------------------------------

    def bind_cpu_input(self, name: str, arr_on_cpu: np.ndarray) -> None:
        """Bind a numpy array to input ``name``."""
        self._input_arg(name)
        self._inputs[name] = arr_on_cpu

    def bind_input(
        self, name: str, device_type: str = "cpu", device_id: int = 0,
        element_type: Any = None, shape: Any = None, buffer_ptr: Any = None,
    ) -> None:
        """Bind input ``name``: a numpy array on ``'cpu'``, a ``GPUBuffer`` on ``'webgpu'``.

        For ``'webgpu'``, ``buffer_ptr`` is the user's GPUBuffer, and ``element_type``
        and ``shape`` describe its contents (as :meth:`OrtValue.from_gpu_buffer`).
        """
        arg = self._input_arg(name)
        if not _is_gpu(device_type):
            if buffer_ptr is None:
                raise InvalidArgument(f"bind_input {name!r}: give the numpy array as buffer_ptr")
            self._inputs[name] = buffer_ptr
            return
        if buffer_ptr is None or shape is None:
            raise InvalidArgument(
                f"bind_input {name!r} on webgpu: give the GPUBuffer as buffer_ptr, and shape"
            )
        dtype = resolve_element_type(element_type if element_type is not None else arg.type)
        self._inputs[name] = OrtValue.from_gpu_buffer(buffer_ptr, dtype.numpy, shape)

    def bind_ortvalue_input(self, name: str, ortvalue: OrtValue) -> None:
        """Bind an :class:`OrtValue` (CPU or WebGPU) to input ``name``."""
        self._input_arg(name)
        if not isinstance(ortvalue, OrtValue):
            raise InvalidArgument(
                f"bind_ortvalue_input {name!r}: expected an OrtValue, got {type(ortvalue).__name__}"
            )
        self._inputs[name] = ortvalue

    def clear_binding_inputs(self) -> None:
        self._inputs.clear()

    # -- outputs ------------------------------------------------------------------------

    def _check_preallocated(self, arg: NodeArg, value: OrtValue) -> None:
        check_value(arg, value, role="output")

    def bind_output(
        self, name: str, device_type: str = "cpu", device_id: int = 0,
        element_type: Any = None, shape: Any = None, buffer_ptr: Any = None,
    ) -> None:
        """Bind output ``name`` to ``'cpu'`` or ``'webgpu'``.

        On ``'webgpu'``: with ``buffer_ptr`` (a GPUBuffer) and ``shape``, ORT writes
        into that buffer; with ``shape`` only, ortweb allocates the buffer; with
        neither, ORT allocates it, which needs the session to have been created with
        ``preferred_output_location`` naming this output (ORT-web decides output
        locations when the session is created), or a fully fixed output shape.
        """
        arg = self._output_arg(name)
        if not _is_gpu(device_type):
            self._outputs[name] = "cpu"
            return
        dtype = resolve_element_type(element_type if element_type is not None else arg.type)
        if buffer_ptr is not None:
            if shape is None:
                raise InvalidArgument(f"bind_output {name!r}: give the shape of the GPUBuffer")
            value = OrtValue.from_gpu_buffer(buffer_ptr, dtype.numpy, shape)
            self._check_preallocated(arg, value)
            self._outputs[name] = value
            return
        if shape is None and all(isinstance(d, int) for d in arg.shape):
            shape = arg.shape
        if shape is not None:
            value = OrtValue.ortvalue_from_shape_and_type(shape, dtype.numpy, "webgpu")
            try:
                self._check_preallocated(arg, value)
            except InvalidArgument:
                value.dispose()
                raise
            self._outputs[name] = value
            return
        if self._session.output_location(name) != "gpu-buffer":
            raise InvalidArgument(
                f"bind_output {name!r} on webgpu: its shape {format_shape(arg.shape)} is not "
                "fixed, so ORT must allocate it, and ORT-web decides that when the session is "
                "created: create the session with preferred_output_location={"
                f"{name!r}: 'gpu-buffer'}}, or pass shape= here"
            )
        self._outputs[name] = "webgpu"

    def bind_ortvalue_output(self, name: str, ortvalue: OrtValue) -> None:
        """Bind a pre-allocated :class:`OrtValue`; the run writes into it."""
        arg = self._output_arg(name)
        if not isinstance(ortvalue, OrtValue):
            raise InvalidArgument(
                f"bind_ortvalue_output {name!r}: expected an OrtValue, "
                f"got {type(ortvalue).__name__}"
            )
        self._check_preallocated(arg, ortvalue)
        self._outputs[name] = ortvalue

    def clear_binding_outputs(self) -> None:
        self._outputs.clear()
        self._results = []

    # -- results ------------------------------------------------------------------------

    def get_outputs(self) -> list[OrtValue]:
        """The outputs of the last run, in the order they were bound."""
        return list(self._results)

    def copy_outputs_to_cpu(self) -> list[np.ndarray]:
        """The outputs of the last run as numpy arrays (GPU ones downloaded)."""
        return [v.numpy() for v in self._results]

    async def copy_outputs_to_cpu_async(self) -> list[np.ndarray]:
        """Async :meth:`copy_outputs_to_cpu`."""
        return [await v.get_data() for v in self._results]

    def synchronize_inputs(self) -> None:
        """Nothing to do: ortweb reads bound inputs when the run starts."""

    def synchronize_outputs(self) -> None:
        """Nothing to do: the run resolves after the outputs are written."""
