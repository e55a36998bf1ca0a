"""Page-wide runtime state: available providers and the default choice."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from . import _bridge
from ._ortvalue import live_cpu_values
from ._providers import normalize_providers

__all__ = [
    "get_available_providers",
    "get_available_providers_async",
    "live_handles",
    "set_default_providers",
    "webgpu_device",
    "webgpu_device_async",
]


async def get_available_providers_async() -> list[str]:
    """Providers this page can use, best first: ``['webgpu', 'wasm']`` or ``['wasm']``."""
    gpu = await _bridge.probe_webgpu()
    return ["webgpu", "wasm"] if gpu.get("available") else ["wasm"]


def get_available_providers() -> list[str]:
    """Synchronous :func:`get_available_providers_async` (as onnxruntime's)."""
    return _bridge.block_on(get_available_providers_async())


def set_default_providers(providers: Sequence[Any] | str | None) -> list[str] | None:
    """Set the providers used by sessions that name none (None restores the default rule).

    Returns
    -------
    list of str or None
        The normalised list now in force.
    """
    value = None if providers is None else normalize_providers(providers)
    bridge = _bridge.get_bridge()
    bridge.defaultProviders = None if value is None else _bridge._js(value)
    return value


def live_handles() -> dict[str, int]:
    """What ortweb holds right now, for leak checks.

    Returns
    -------
    dict
        ``sessions`` (ORT sessions alive in the page), ``cpu_tensors`` (CPU
        OrtValues not disposed), ``gpu_tensors`` (GPU values not disposed) and
        ``finalized`` (GPU values disposed by the garbage collector because nobody
        disposed them: a leak in the caller's code, fixed up).
    """
    stats = _bridge.stats()
    return {
        "sessions": int(stats["sessions"]),
        "cpu_tensors": live_cpu_values(),
        "gpu_tensors": int(stats["values"]["gpu"]),
        "finalized": int(stats["values"]["finalized"]),
    }


async def webgpu_device_async() -> Any:
    """The ``GPUDevice`` ORT's WebGPU sessions run on.

    Create the GPU buffers you feed (``OrtValue.from_gpu_buffer``) on this device.
    With the default ``native`` WebGPU build this is ortweb's own device, given to
    every WebGPU session, so it outlives them all. With the ``jsep`` build ORT
    ignores a given device and makes its own: create a WebGPU session first.
    """
    return await _bridge.webgpu_device()


def webgpu_device() -> Any:
    """Synchronous :func:`webgpu_device_async`."""
    return _bridge.block_on(webgpu_device_async())
