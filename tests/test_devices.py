"""One device-name table, case-insensitive wherever a device or output location is named.

Host-only: ``OrtValue`` on the CPU, ``IOBinding`` and ``run_with_iobinding`` over a
stand-in session that offers only :class:`ortweb._iobinding.BindingSession`, and the
``preferred_output_location`` normalisation the session gives onnxruntime-web.
(tests/test_iobinding.py runs the same through a real session in the browser.)
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import re
from collections.abc import Coroutine, Sequence
from typing import Any, TypeVar

import numpy as np
import pytest

from ortweb import InvalidArgument, IOBinding, OrtValue, RunOptions
from ortweb._devices import DEVICES, device, location, normalize_locations
from ortweb._iobinding import BindingSession, Fetches, run_with_iobinding
from ortweb._metadata import NodeArg

GPU_NAMES = ["webgpu", "WebGPU", "WEBGPU", "gpu", "GPU", "gpu-buffer", "GPU-Buffer"]
CPU_NAMES = ["cpu", "CPU", "Cpu"]
BAD_NAMES: list[Any] = ["tpu", "cuda", "", "web gpu", None, 0, b"cpu"]

T = TypeVar("T")


def _run(coro: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run`` in a thread of its own: in a full run Playwright's sync API
    keeps an event loop running on the main thread, where asyncio.run refuses."""
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()


def test_table() -> None:
    assert dict(DEVICES) == {"cpu": "cpu", "webgpu": "webgpu", "gpu": "webgpu",
                             "gpu-buffer": "webgpu"}
    assert all(name == name.lower() for name in DEVICES)


@pytest.mark.parametrize("name", GPU_NAMES + CPU_NAMES)
def test_every_case_names_the_same_device(name: str) -> None:
    want = "cpu" if name.lower() == "cpu" else "webgpu"
    assert device(name) == want
    assert location(name) == {"cpu": "cpu", "webgpu": "gpu-buffer"}[want]


@pytest.mark.parametrize("name", BAD_NAMES)
def test_unknown_names_are_refused_with_what_is_expected(name: Any) -> None:
    with pytest.raises(InvalidArgument) as exc:
        device(name)
    assert str(exc.value) == f"device_type: expected 'cpu' or 'webgpu', got {name!r}"
    with pytest.raises(InvalidArgument) as exc:
        location(name)
    assert str(exc.value) == (
        f"preferred_output_location: expected 'cpu' or 'gpu-buffer', got {name!r}")


# -- preferred_output_location, as the session hands it to onnxruntime-web -------------


@pytest.mark.parametrize("name", GPU_NAMES)
def test_preferred_output_location_any_case(name: str) -> None:
    assert normalize_locations(name) == "gpu-buffer"
    assert normalize_locations({"y": name, "z": "CPU"}) == {"y": "gpu-buffer", "z": "cpu"}
    assert normalize_locations(None) is None


def test_preferred_output_location_errors() -> None:
    with pytest.raises(InvalidArgument, match=re.escape(
            "preferred_output_location: expected 'cpu' or 'gpu-buffer', got 'tpu'")):
        normalize_locations("tpu")
    with pytest.raises(InvalidArgument, match=re.escape(
            "preferred_output_location['y']: expected 'cpu' or 'gpu-buffer', got 'vram'")):
        normalize_locations({"y": "vram"})
    with pytest.raises(InvalidArgument, match=re.escape(
            "preferred_output_location: expected 'cpu', 'gpu-buffer' or a dict of output "
            "names to those, got list")):
        normalize_locations(["gpu-buffer"])  # type: ignore[arg-type]


# -- OrtValue ------------------------------------------------------------------------------


@pytest.mark.parametrize("name", CPU_NAMES)
def test_ortvalue_cpu_any_case(name: str) -> None:
    a = np.arange(3, dtype=np.float32)
    value = OrtValue.ortvalue_from_numpy(a, name)
    assert value.device_name() == "cpu" and value.numpy() is a
    zeros = OrtValue.ortvalue_from_shape_and_type([2], np.int64, name)
    assert zeros.numpy().tolist() == [0, 0]


@pytest.mark.parametrize("name", BAD_NAMES)
def test_ortvalue_refuses_unknown_device(name: Any) -> None:
    with pytest.raises(InvalidArgument) as exc:
        OrtValue.ortvalue_from_numpy(np.zeros(2, np.float32), name)
    assert str(exc.value) == f"device_type: expected 'cpu' or 'webgpu', got {name!r}"


# -- IOBinding over the session interface ----------------------------------------------------


class StandIn:
    """A session offering exactly :class:`BindingSession`: y = 2 * x, z = -x."""

    def __init__(self, gpu_outputs: Sequence[str] = ()) -> None:
        self.gpu_outputs = set(gpu_outputs)
        self.calls: list[tuple[dict[str, Any], list[tuple[str, int | None]], Any]] = []

    def get_inputs(self) -> list[NodeArg]:
        return [NodeArg("x", "tensor(float)", ["n"])]

    def get_outputs(self) -> list[NodeArg]:
        return [NodeArg("y", "tensor(float)", ["n"]), NodeArg("z", "tensor(float)", ["n"])]

    def output_location(self, name: str) -> str:
        return "gpu-buffer" if name in self.gpu_outputs else "cpu"

    async def execute_async(
        self, input_feed: Any, fetches: Fetches, run_options: RunOptions | None = None
    ) -> list[Any]:
        self.calls.append((dict(input_feed), list(fetches), run_options))
        x = np.asarray(input_feed["x"].numpy() if isinstance(input_feed["x"], OrtValue)
                       else input_feed["x"])
        return [{"y": 2 * x, "z": -x}[name] for name, _ in fetches]


class OpenRank(StandIn):
    """Output ``y`` declared without a shape: shown as ``[]``, but not a scalar."""

    def get_outputs(self) -> list[NodeArg]:
        return [NodeArg("y", "tensor(float)", [], rank_known=False),
                NodeArg("z", "tensor(float)", ["n"])]


def test_webgpu_output_of_undeclared_shape_is_not_allocated_as_a_scalar() -> None:
    binding = IOBinding(OpenRank())
    with pytest.raises(InvalidArgument, match=r"bind_output 'y' on webgpu: its shape "
                                              r"\(not declared\) is not fixed.*shape="):
        binding.bind_output("y", "webgpu")


def test_the_session_interface_is_what_inference_session_offers() -> None:
    from ortweb import InferenceSession

    wanted = {n for n in dir(BindingSession) if not n.startswith("_")}
    assert wanted == {"get_inputs", "get_outputs", "output_location", "execute_async"}
    for name in wanted:
        assert callable(getattr(InferenceSession, name)), name
        assert callable(getattr(StandIn, name)), name


@pytest.mark.parametrize("name", CPU_NAMES)
def test_iobinding_cpu_any_case_runs(name: str) -> None:
    session = StandIn()
    binding = IOBinding(session)
    x = np.array([1.5, -2.0], np.float32)
    binding.bind_input("x", name, buffer_ptr=x)
    binding.bind_output("z", name)
    target = OrtValue.ortvalue_from_shape_and_type([2], np.float32, name)
    binding.bind_ortvalue_output("y", target)
    options = RunOptions()
    _run(run_with_iobinding(session, binding, options))
    (feeds, fetches, given), = session.calls
    assert feeds["x"] is x and fetches == [("z", None), ("y", None)] and given is options
    z, y = binding.get_outputs()
    assert y is target  # a pre-allocated CPU output is filled in place
    assert target.numpy().tolist() == [3.0, -4.0] and z.numpy().tolist() == [-1.5, 2.0]
    assert [a.tolist() for a in binding.copy_outputs_to_cpu()] == [[-1.5, 2.0], [3.0, -4.0]]


@pytest.mark.parametrize("name", GPU_NAMES)
def test_iobinding_webgpu_any_case(name: str) -> None:
    # An output of open shape on the GPU needs ORT to allocate it: accepted with
    # preferred_output_location, refused with the fix otherwise, in every spelling.
    IOBinding(StandIn(gpu_outputs=["y"])).bind_output("y", name)
    with pytest.raises(InvalidArgument, match="preferred_output_location"):
        IOBinding(StandIn()).bind_output("y", name)


@pytest.mark.parametrize("name", BAD_NAMES)
def test_iobinding_refuses_unknown_device(name: Any) -> None:
    binding = IOBinding(StandIn())
    message = f"device_type: expected 'cpu' or 'webgpu', got {name!r}"
    with pytest.raises(InvalidArgument) as exc:
        binding.bind_output("y", name)
    assert str(exc.value) == message
    with pytest.raises(InvalidArgument) as exc:
        binding.bind_input("x", name, buffer_ptr=np.zeros(2, np.float32))
    assert str(exc.value) == message


def test_run_with_iobinding_refusals() -> None:
    session = StandIn()
    with pytest.raises(InvalidArgument, match="expected an IOBinding of this session"):
        _run(run_with_iobinding(session, IOBinding(StandIn())))
    binding = IOBinding(session)
    with pytest.raises(InvalidArgument, match="no output is bound"):
        _run(run_with_iobinding(session, binding))
    target = OrtValue.ortvalue_from_shape_and_type([2], np.float32)
    binding.bind_cpu_input("x", np.ones(2, np.float32))
    binding.bind_ortvalue_output("y", target)
    target.dispose()
    with pytest.raises(InvalidArgument, match="'y': the OrtValue bound was disposed"):
        _run(run_with_iobinding(session, binding))
    binding.clear_binding_outputs()
    binding.bind_ortvalue_output("y", OrtValue.ortvalue_from_shape_and_type([3], np.float32))
    with pytest.raises(InvalidArgument, match=re.escape(
            "output 'y': the run produced shape [2], the OrtValue bound has [3]")):
        _run(run_with_iobinding(session, binding))
    assert len(session.calls) == 1  # only the last one reached the session
