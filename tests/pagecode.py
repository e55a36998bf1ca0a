"""Python run inside the page by several test modules: GPU buffer helpers and error capture."""

GPU_PRELUDE = """
import json, numpy as np, ortweb, js
from ortweb import OrtValue
from pyodide.ffi import to_js
X = np.array([[1.5, -2.0], [3.25, 4.0]], dtype=np.float32)
Usage = js.GPUBufferUsage
device = (await ortweb.webgpu_device_async()
          if "webgpu" in await ortweb.get_available_providers_async() else None)

def gpu_buffer(array, usage=None, dev=None):
    usage = usage if usage is not None else (Usage.STORAGE | Usage.COPY_SRC | Usage.COPY_DST)
    dev = dev or device
    data = np.ascontiguousarray(array).view(np.uint8).reshape(-1)
    size = max(4, (data.size + 3) // 4 * 4)
    spec = to_js({"size": size, "usage": usage}, dict_converter=js.Object.fromEntries)
    buf = dev.createBuffer(spec)
    if data.size:
        padded = np.zeros(size, np.uint8); padded[:data.size] = data
        dev.queue.writeBuffer(buf, 0, to_js(padded))
    return buf

def error(coro_or_fn):
    try:
        r = coro_or_fn()
        return ["no error", ""]
    except ortweb.OrtWebError as exc:
        return [type(exc).__name__, str(exc)]

async def aerror(coro):
    try:
        await coro
        return ["no error", ""]
    except ortweb.OrtWebError as exc:
        return [type(exc).__name__, str(exc)]
"""
