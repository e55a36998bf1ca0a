"""``IOBinding``: bind inputs and outputs to CPU or WebGPU memory, as onnxruntime's.

Every binding is checked when it is made (names, element type, rank, fixed dims,
buffer size) and again before the run (device, destroyed buffers), so a bad
binding raises ``InvalidArgument`` instead of reaching ORT-web, where it would
return garbage or break the session.

The binding talks to its session only through :class:`BindingSession`, the few
public methods ``InferenceSession`` offers for it, and :func:`run_with_iobinding`
runs it; neither reads the other's state.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from . import _bridge
from ._devices import device
from ._metadata import NodeArg, format_shape
from ._ortvalue import OrtValue, resolve_element_type
from ._validate import check_value
from .errors import InvalidArgument

if TYPE_CHECKING:
    from ._options import RunOptions

__all__ = ["BindingSession", "Fetches", "IOBinding", "run_with_iobinding"]

#: The outputs a run computes: each name with the bridge handle of the GPU value ORT
#: writes into, or None to let ORT allocate it.
Fetches = Sequence[tuple[str, int | None]]


class BindingSession(Protocol):
    """What an :class:`IOBinding` needs from its session (``InferenceSession`` offers it).

    Methods
    -------
    get_inputs(), get_outputs()
        The model's inputs and outputs, to check each binding when it is made.
    output_location(name)
        ``'gpu-buffer'`` when a run leaves output ``name`` on the GPU unasked
        (``preferred_output_location``), else ``'cpu'``.
    execute_async(input_feed, fetches, run_options)
        Check and run the feeds once; one numpy array or ``_bridge.GpuOutput`` per
        fetch, in order.
    """

    def get_inputs(self) -> list[NodeArg]: ...

    def get_outputs(self) -> list[NodeArg]: ...

    def output_location(self, name: str) -> str: ...

    async def execute_async(
        self, input_feed: Any, fetches: Fetches, run_options: RunOptions | None = None
    ) -> list[np.ndarray | _bridge.GpuOutput]: ...


def _is_gpu(device_type: Any) -> bool:
    return device(device_type) == "webgpu"


class IOBinding:
    """Inputs and outputs bound for :meth:`InferenceSession.run_with_iobinding`.

    Made by :meth:`InferenceSession.io_binding`. Outputs not bound are not computed
    into anything you can read; bind each output you want.
    """

    def __init__(self, session: BindingSession):
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
        """Forget every bound input (the bound values stay alive)."""
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
        # An output declared without a shape shows [] but is not a scalar.
        if shape is None and arg.rank_known and all(isinstance(d, int) for d in arg.shape):
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
                f"bind_output {name!r} on webgpu: its shape "
                f"{format_shape(arg.shape) if arg.rank_known else '(not declared)'} is not "
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
        """Forget every bound output and the results of the last run."""
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


async def run_with_iobinding(
    session: BindingSession, binding: IOBinding, run_options: RunOptions | None = None
) -> None:
    """Run ``session`` with the inputs and outputs bound in ``binding``; its
    :meth:`IOBinding.get_outputs` then returns them, in the order they were bound.

    Raises
    ------
    InvalidArgument
        When ``binding`` is not one of ``session``'s, binds no output, or binds a
        disposed value or one the run's outputs do not fit.
    """
    if not isinstance(binding, IOBinding) or binding._session is not session:
        raise InvalidArgument("run_with_iobinding: expected an IOBinding of this session")
    bound = dict(binding._outputs)
    if not bound:
        raise InvalidArgument("run_with_iobinding: no output is bound; use bind_output()")
    fetches: list[tuple[str, int | None]] = []
    for name, target in bound.items():
        if isinstance(target, OrtValue):
            if target.is_disposed:
                raise InvalidArgument(f"output {name!r}: the OrtValue bound was disposed")
            # A pre-allocated CPU output comes back all zeros from ORT-web
            # (upstream bug): let ORT allocate and copy into it afterwards.
            fetches.append((name, target.handle))
        else:
            fetches.append((name, None))
    outputs = await session.execute_async(binding._inputs, fetches, run_options)
    pairs = list(zip(bound.items(), outputs, strict=True))
    # GPU outputs ORT allocated for this run: released here unless handed out.
    fresh = {out.handle for (_, target), out in pairs if isinstance(out, _bridge.GpuOutput)
             and not (isinstance(target, OrtValue) and target.handle == out.handle)}
    made: list[OrtValue] = []
    results: list[OrtValue] = []
    try:
        for (name, target), out in pairs:
            if isinstance(target, OrtValue):
                if target.handle is None:
                    if isinstance(out, _bridge.GpuOutput):
                        # The session leaves this output on the GPU
                        # (preferred_output_location): bring it to the CPU value.
                        fresh.discard(out.handle)
                        out = await _bridge.read_value(out.handle, True)
                    _copy_into(name, target, out)
                results.append(target)
            elif isinstance(out, _bridge.GpuOutput):
                fresh.discard(out.handle)
                if target == "cpu":
                    made.append(OrtValue.ortvalue_from_numpy(
                        await _bridge.read_value(out.handle, True)))
                else:
                    made.append(OrtValue._from_output(out))
                results.append(made[-1])
            else:
                made.append(OrtValue.ortvalue_from_numpy(out))
                results.append(made[-1])
    except BaseException:
        for value in made:
            value.dispose()
        for handle in fresh:
            _bridge.dispose_value(handle)
        raise
    binding._results = results


def _copy_into(name: str, target: OrtValue, out: np.ndarray | _bridge.GpuOutput) -> None:
    array = target.numpy()
    if isinstance(out, _bridge.GpuOutput):
        raise InvalidArgument(f"output {name!r}: bound on the CPU but left on the GPU")
    if array.shape != out.shape:
        raise InvalidArgument(
            f"output {name!r}: the run produced shape {list(out.shape)}, the OrtValue "
            f"bound has {list(array.shape)}"
        )
    np.copyto(array, out)
