# Runs inside Pyodide for `ortweb soak`: the host defines ORTWEB_ARGS (a JSON string).
# Many runs with GPU outputs disposed each time, then many session create/close
# cycles; returns the readings (handles, GPU buffers, wasm heap) at each stage.
import gc
import json
import time

import numpy as np

import ortweb

args = json.loads(ORTWEB_ARGS)  # type: ignore[name-defined]
model = open(args["model"], "rb").read()
provider = args["provider"]
x = np.random.default_rng(0).standard_normal(args["shape"]).astype(np.float32)


async def reading(stage):
    gc.collect()
    memory = await ortweb.memory_info_async()
    return {"stage": stage, "time": time.perf_counter(), **ortweb.live_handles(),
            **{k: v for k, v in memory.items() if k != "wasm_memories"}}


readings = [await reading("start")]
gpu_out = "gpu-buffer" if provider == "webgpu" else "cpu"
sess = await ortweb.InferenceSession.create(model, providers=[provider],
                                            preferred_output_location=gpu_out)
feed = x
if provider == "webgpu":
    feed = await ortweb.OrtValue.ortvalue_from_numpy_async(x, "webgpu")
warm = max(1, args["runs"] // 10)
first = None
for i in range(args["runs"]):
    outs = await sess.run_async(None, {"x": feed})
    if first is None:
        first = [np.asarray(o.numpy() if isinstance(o, ortweb.OrtValue) else o) for o in outs]
    for o in outs:
        if isinstance(o, ortweb.OrtValue):
            o.dispose()
    if i + 1 == warm:
        readings.append(await reading(f"after {warm} runs"))
readings.append(await reading(f"after {args['runs']} runs"))
last = await sess.run_async(None, {"x": feed})
same = all(np.array_equal(np.asarray(a.numpy() if isinstance(a, ortweb.OrtValue) else a), b)
           for a, b in zip(last, first, strict=True))
for o in last:
    if isinstance(o, ortweb.OrtValue):
        o.dispose()
if isinstance(feed, ortweb.OrtValue):
    feed.dispose()
await sess.close_async()
readings.append(await reading("runs done, session closed"))
warm_cycles = max(1, args["cycles"] // 10)
for i in range(args["cycles"]):
    s = await ortweb.InferenceSession.create(model, providers=[provider])
    await s.run_async(None, {"x": x})
    await s.close_async()
    if i + 1 == warm_cycles:
        readings.append(await reading(f"after {warm_cycles} create/close cycles"))
readings.append(await reading(f"after {args['cycles']} create/close cycles"))
json.dumps({"readings": readings, "same_answer": same})
