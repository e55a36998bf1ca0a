"""Page-wide runtime state: available providers and the default choice."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

from . import _bridge
from ._ortvalue import live_cpu_values
from ._providers import PROVIDERS, normalize_providers
from .errors import InvalidArgument

__all__ = [
    "get_available_providers",
    "get_available_providers_async",
    "live_handles",
    "memory_info",
    "memory_info_async",
    "runtime_info",
    "runtime_info_async",
    "set_default_providers",
    "set_num_threads",
    "webgpu_device",
    "webgpu_device_async",
]


async def get_available_providers_async() -> list[str]:
    """Providers this page can run: ``['webgpu', 'wasm', 'tract', 'wonnx']`` with a
    WebGPU adapter, ``['wasm', 'tract']`` without (``'webgpu'`` and ``'wonnx'`` need
    one). Finding out downloads no engine."""
    reasons = await _bridge.provider_reasons()
    return [p for p in PROVIDERS if reasons.get(p) == ""]


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
    _bridge.set_default_providers(value)
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


_warned_isolation = False


def set_num_threads(n: int) -> int:
    """Ask onnxruntime-web for ``n`` wasm threads (``env.wasm.numThreads``).

    ORT-web has one thread count per page, read when each of its runtimes starts,
    so this applies to runtimes not loaded yet. Threads need a cross-origin-isolated
    page (COOP: same-origin and COEP: require-corp headers); without isolation ORT
    silently runs one thread, so ortweb warns once with the fix.

    Returns
    -------
    int
        The thread count that will actually be used by runtimes loaded from now on.
    """
    if not isinstance(n, int) or isinstance(n, bool) or n < 0:
        raise InvalidArgument(f"set_num_threads: expected a non-negative int, got {n!r}")
    global _warned_isolation
    _bridge.configure(num_threads=n or None)
    if n > 1 and not _bridge.cross_origin_isolated():
        if not _warned_isolation:
            _warned_isolation = True
            warnings.warn(
                f"ortweb: {n} wasm threads were asked for, but this page is not "
                "cross-origin isolated, so onnxruntime-web runs 1 thread. Serve the page "
                "with the headers 'Cross-Origin-Opener-Policy: same-origin' and "
                "'Cross-Origin-Embedder-Policy: require-corp' (`ortweb serve` does), or "
                "build the page with `ortweb site`, whose service worker gives isolation on "
                "hosts that cannot send headers",
                RuntimeWarning, stacklevel=2,
            )
        return 1
    loaded = list(_bridge.stats()["builds"])
    # Without isolation every runtime runs one thread whatever was asked, so a count
    # of 0 or 1 changes nothing for those already started: no warning then.
    if loaded and _bridge.cross_origin_isolated():
        warnings.warn(
            f"ortweb: onnxruntime-web runtimes already started ({', '.join(loaded)}) keep "
            "their thread count; the new count applies to runtimes loaded later",
            RuntimeWarning, stacklevel=2,
        )
    return n


async def runtime_info_async() -> dict[str, Any]:
    """What this page's runtime is.

    Returns
    -------
    dict
        ``ortweb`` version; ``onnxruntime_web`` version; ``webgpu_build`` (``'native'``
        or ``'jsep'``, a setting); ``builds`` loaded, each with its version and the
        wasm thread count ORT actually uses; ``webgpu`` (available, reason, adapter
        info, features such as ``shader-f16``); ``cross_origin_isolated``;
        ``simd``; ``requested_threads``; ``hardware_concurrency``; ``in_worker``;
        ``event_loop``: ``'ortweb'`` when asyncio's callbacks run through the bridge's
        faster scheduler, ``'pyodide'`` when through Pyodide's own (in a worker, or
        turned off with ``ortwebConfig.fastEventLoop = false``); ``bridge_wakeup``:
        ``'microtask'`` when a task awaiting a bridge call is woken as soon as the call
        settles, ``'event-loop'`` when after a turn of the loop (turned off).
    """
    from . import __version__

    info = await _bridge.runtime_info()
    versions = await _bridge.versions("wasm", context="runtime_info")
    return {
        "ortweb": __version__,
        "onnxruntime_web": versions.get("ort"),
        "webgpu_build": info["webgpuBuild"],
        "builds": info["builds"],
        "webgpu": info["webgpu"],
        "cross_origin_isolated": info["crossOriginIsolated"],
        "simd": info["simd"],
        "requested_threads": info["requestedThreads"],
        "hardware_concurrency": info["hardwareConcurrency"],
        "in_worker": info["inWorker"],
        "event_loop": _bridge.event_loop(),
        "bridge_wakeup": _bridge.bridge_wakeup(),
    }


def runtime_info() -> dict[str, Any]:
    """Synchronous :func:`runtime_info_async`."""
    return _bridge.block_on(runtime_info_async())


def memory_info() -> dict[str, Any]:
    """Memory the page holds now, for soak tests and leak hunting.

    Returns
    -------
    dict
        ``gpu_buffers`` and ``gpu_buffer_bytes`` (GPU buffers created and not yet
        destroyed or collected, ORT's and yours), ``wasm_bytes`` (all WebAssembly
        memories: ORT's heaps and Pyodide's) and ``wasm_memories`` (each with its
        size).
    """
    return _memory(_bridge.meters())


async def memory_info_async() -> dict[str, Any]:
    """:func:`memory_info` read after a JavaScript garbage collection (where the page
    allows ``gc()``), so buffers that were only dropped are not counted as alive."""
    return _memory(await _bridge.settled_meters())


def _memory(m: dict[str, Any]) -> dict[str, Any]:
    return {
        "gpu_buffers": int(m["gpuBuffers"]),
        "gpu_buffer_bytes": int(m["gpuBufferBytes"]),
        "wasm_bytes": int(m["wasmBytes"]),
        "wasm_memories": [dict(x) for x in m["wasmMemories"]],
    }
