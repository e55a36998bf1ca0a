"""Helpers that run inside the page, for the test modules that install this file there.

A module that wants them overrides ``ortweb_module_page`` with
:func:`install_in_page`; its ``@run_in_browser`` bodies then use the module's
top-level ``from pagecode import ...``, which the page runs too. The helpers make
GPU buffers the way a user's own code would (ortweb did not allocate them) and turn
an ortweb error into ``[class name, message]`` so that a case can check both.

Page-only modules (``js``, ``pyodide``, ``ortweb``'s WebGPU calls) are imported in the
functions, so that the host can import this file as well.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["aerror", "error", "gpu_buffer", "install_in_page", "webgpu_device"]


def install_in_page(module_page: Any, *also: str | Path) -> Any:
    """Add this file (and the modules ``also``) to the packages of the shared page
    (``ortweb.testing.ModulePage``); a page already booted without them is renewed,
    so the next test gets one with them (later modules keep them)."""
    new = [path for path in (Path(p).resolve() for p in (__file__, *also))
           if path not in module_page.packages]
    if new:
        module_page.packages.extend(new)
        module_page.renew()
    return module_page


async def webgpu_device() -> Any:
    """ortweb's GPUDevice, or None when the page has no WebGPU."""
    import ortweb

    if "webgpu" in await ortweb.get_available_providers_async():
        return await ortweb.webgpu_device_async()
    return None


def gpu_buffer(device: Any, array: np.ndarray, usage: int | None = None) -> Any:
    """A GPUBuffer of ``device`` holding ``array``'s bytes (padded to 4 bytes, as
    WebGPU wants); STORAGE | COPY_SRC | COPY_DST unless ``usage`` says otherwise."""
    import js
    from pyodide.ffi import to_js

    flags = js.GPUBufferUsage
    if usage is None:
        usage = flags.STORAGE | flags.COPY_SRC | flags.COPY_DST
    data = np.ascontiguousarray(array).view(np.uint8).reshape(-1)
    size = max(4, (data.size + 3) // 4 * 4)
    spec = to_js({"size": size, "usage": usage}, dict_converter=js.Object.fromEntries)
    buf = device.createBuffer(spec)
    if data.size:
        padded = np.zeros(size, np.uint8)
        padded[: data.size] = data
        device.queue.writeBuffer(buf, 0, to_js(padded))
    return buf


def error(fn: Callable[[], Any]) -> list[str]:
    """``[class name, message]`` of the ortweb error ``fn()`` raises, else ``["no error", ""]``."""
    import ortweb

    try:
        fn()
    except ortweb.OrtWebError as exc:
        return [type(exc).__name__, str(exc)]
    return ["no error", ""]


async def aerror(awaitable: Awaitable[Any]) -> list[str]:
    """:func:`error` for an awaitable."""
    import ortweb

    try:
        await awaitable
    except ortweb.OrtWebError as exc:
        return [type(exc).__name__, str(exc)]
    return ["no error", ""]
