"""``close()`` gives each engine's memory back: measured in real Chromium, not assumed.

For every engine, sessions of a model with 4 MiB of weights are opened, run and closed
a few times in one page, and the page's memory is read after each step:

- the browser's own measurement (``performance.measureUserAgentSpecificMemory``, eager
  in ortweb's Chromium; a cross-origin isolated page): what the page's dedicated
  workers hold, where tract's session lives;
- the bridge's meters (``ortweb.memory_info_async``): live GPU buffers, where
  onnxruntime-web's WebGPU EP and wonnx keep weights, and the size of each
  WebAssembly memory, where the wasm EP and wonnx keep theirs. A wasm memory never
  shrinks, so a leak shows as growth over cycles: after the first cycle the engines'
  memories must not grow.

Each measurement must see the session while it is open (its weights in a worker, on
the GPU or in a heap), so a measurement that sees nothing cannot pass.
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from ortweb.testing import run_in_browser

pytestmark = pytest.mark.browser

#: The model's weights: float32 [512, 2048], 4 MiB.
SHAPE = (512, 2048)
WEIGHT_BYTES = SHAPE[0] * SHAPE[1] * 4
CYCLES = 8


def _weighty_add() -> bytes:
    """``y = x + w`` with ``w`` a 4 MiB float32 initializer; every engine runs it."""
    w = onnx.numpy_helper.from_array(
        np.arange(SHAPE[0] * SHAPE[1], dtype=np.float32).reshape(SHAPE), "w")
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "w"], ["y"])], "weighty_add",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(SHAPE))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(SHAPE))], [w])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model.SerializeToString()


@run_in_browser
async def _cycles(ortweb_page, model, engine, cycles):
    """Open, run and close ``cycles`` sessions on ``engine``; the page's memory before,
    while the first is open, and after each close."""
    import gc
    import json
    import time

    import js
    import numpy as np
    import pyodide_js

    import ortweb

    async def measure():
        gc.collect()
        info = await ortweb.memory_info_async()
        browser = json.loads(js.JSON.stringify(
            await js.performance.measureUserAgentSpecificMemory()))
        workers = sum(part["bytes"] for part in browser["breakdown"]
                      if any(a["scope"] == "DedicatedWorkerGlobalScope"
                             for a in part["attribution"]))
        # Every WebAssembly memory but Python's own (which holds the outputs).
        python = pyodide_js._module.HEAP8.buffer.byteLength
        engines = sum(m["bytes"] for m in info["wasm_memories"] if m["bytes"] != python)
        return {"workers": workers, "gpu_buffers": info["gpu_buffers"],
                "gpu_bytes": info["gpu_buffer_bytes"], "wasm": engines}

    steps: dict[str, list[float]] = {}

    async def timed(name, call):
        start = time.perf_counter()
        try:
            return await call
        finally:
            steps.setdefault(name, []).append(round(time.perf_counter() - start, 3))

    x = np.ones((512, 2048), np.float32)
    seen = {"before": await timed("measure", measure()), "closed": [], "steps_s": steps}
    for i in range(cycles):
        s = await timed("create", ortweb.InferenceSession.create(model, providers=[engine]))
        assert s.provider == engine, s.provider_report
        y = await timed("run", s.run_async(None, {"x": x}))
        assert float(y[0][0, 1]) == 2.0
        del y
        if i == 0:
            seen["open"] = await timed("measure", measure())
        await timed("close", s.close_async())
        seen["closed"].append(await timed("measure", measure()))
    return seen


@pytest.fixture(scope="module")
def model_path(ortweb_module_page):
    return ortweb_module_page.put_file("weighty_add.onnx", _weighty_add())


@pytest.mark.parametrize("engine", [
    "wasm", pytest.param("webgpu", marks=pytest.mark.webgpu), "tract",
    pytest.param("wonnx", marks=pytest.mark.webgpu)])
def test_close_gives_the_engine_s_memory_back(ortweb_page, model_path, engine, record_property):
    seen = _cycles(ortweb_page, model_path, engine, CYCLES)
    # Seconds per step in the page, for the JUnit report: the tract case has taken a
    # minute instead of seconds in some full runs, never alone (development page (h)).
    record_property("steps_s", seen["steps_s"])
    before, opened, closed = seen["before"], seen["open"], seen["closed"]
    # Where the engine keeps the weights while a session is open: the measurement sees it.
    if engine == "tract":
        assert opened["workers"] - before["workers"] >= WEIGHT_BYTES, seen
    if engine in ("webgpu", "wonnx"):
        assert opened["gpu_bytes"] - before["gpu_bytes"] >= WEIGHT_BYTES, seen
    for i, after in enumerate(closed):
        # tract's worker, every GPU buffer: gone at each close.
        assert after["workers"] == pytest.approx(before["workers"], abs=64 << 10), (i, seen)
        assert (after["gpu_buffers"], after["gpu_bytes"]) == (
            before["gpu_buffers"], before["gpu_bytes"]), (i, seen)
    # A heap never shrinks, and its allocator may grow it once more for the second
    # session (wonnx's does, by 4 MiB); from then on each session reuses what the last
    # gave back, where a leak would add at least the weights per cycle.
    assert closed[-1]["wasm"] == closed[1]["wasm"], seen
