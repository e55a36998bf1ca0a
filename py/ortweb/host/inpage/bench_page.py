# Runs inside Pyodide for `ortweb bench`: the host defines ORTWEB_ARGS (a JSON string)
# and this script defines the bench_* coroutines the host then calls, one block at a
# time, so that it can interleave blocks across pages and with native onnxruntime.
# Globals persist between runPythonAsync calls in one page.
# Every block times itself in the page (time.perf_counter for Python, performance.now()
# inside JS for the plain-JS anchors), so the host's round trips are never counted.
import asyncio
import json
import time

import numpy as np
from pyodide.code import run_js
from pyodide.ffi import to_js

import ortweb
from ortweb import _bridge, _convert, _dtypes
from ortweb._engines import engine_of

BENCH_ARGS = json.loads(ORTWEB_ARGS)  # type: ignore[name-defined]
if BENCH_ARGS.get("threads"):
    # Before any ORT runtime loads: one thread count per page.
    ortweb.set_num_threads(int(BENCH_ARGS["threads"]))

_plain = await run_js("import('/bench_plain.js')")
# The bridge's own module instance (same URL), for its staging-array pool.
_tensors = await run_js("import('/bridge/tensors.js')")
_F32 = _dtypes.by_ort("float32")
_state = {}
# At least one run of each side, then until this much time has passed (Plan.warm_up_s).
WARM_UP_S = float(BENCH_ARGS["warm_up_s"])


def _read_model(key):
    with open(BENCH_ARGS["models"][key], "rb") as f:
        return f.read()


def _shape(key):
    return [int(d) for d in BENCH_ARGS["shapes"][key]]


async def _wasm_pair(key):
    """ortweb's session and the same ORT session for plain JS to run."""
    if key not in _state:
        model = _read_model(key)
        sess = await ortweb.InferenceSession.create(model, providers=["wasm"])
        js_id = await _plain.adoptSession(sess._handle)
        x = np.random.default_rng(0).standard_normal(_shape(key)).astype(np.float32)
        _state[key] = (sess, js_id, x, to_js(x.ravel()))
        # Warm-up, not compared: the first runs allocate ORT's buffers, and for about
        # the first second of a hot loop V8 recompiles the hottest wasm and JS (both
        # sides' ORT, Pyodide's interpreter) in its optimising tier on a background
        # thread, one of this machine's two cores.
        name, dims = sess.get_inputs()[0].name, to_js(_shape(key))
        deadline = time.perf_counter() + WARM_UP_S
        while True:
            await sess.run_async(None, {name: x})
            sess.run(None, {name: x})
            await _plain.timeRuns(js_id, _state[key][3], dims, 1)
            if time.perf_counter() > deadline:
                break
    return _state[key]


async def _py_runs(sess, x, k):
    name = sess.get_inputs()[0].name
    t0 = time.perf_counter()
    for _ in range(k):
        await sess.run_async(None, {name: x})
    return (time.perf_counter() - t0) * 1000 / k


def _py_sync_runs(sess, x, k):
    name = sess.get_inputs()[0].name
    t0 = time.perf_counter()
    for _ in range(k):
        sess.run(None, {name: x})
    return (time.perf_counter() - t0) * 1000 / k


async def _turns(k):
    # One turn of Pyodide's event loop: what awaiting a JS promise costs on top of the
    # call (a bridge call skips it: the bridge wakes the task in a microtask).
    t0 = time.perf_counter()
    for _ in range(k):
        await asyncio.sleep(0)
    return (time.perf_counter() - t0) * 1000 / k


async def bench_bridge(key, k, first, extra=False):
    """One interleaved round: ms per call through ortweb (``await run_async``) and
    through plain JS; with ``extra``, also the sync ``run`` and a bare event-loop turn."""
    sess, js_id, x, x_js = await _wasm_pair(key)
    dims = to_js(_shape(key))
    sides = ["py", "js"] + (["sync", "turn"] if extra else [])
    out = {}
    for side in (sides if first == "py" else sides[::-1]):
        if side == "py":
            out["py_ms"] = await _py_runs(sess, x, k)
        elif side == "js":
            out["js_ms"] = await _plain.timeRuns(js_id, x_js, dims, k) / k
        elif side == "sync":
            out["sync_ms"] = _py_sync_runs(sess, x, k)
        else:
            out["turn_ms"] = await _turns(k)
    return json.dumps(out)


async def bench_runs(key, k, plain):
    """ms per run of model ``key`` on wasm, through ortweb or plain JS."""
    sess, js_id, x, x_js = await _wasm_pair(key)
    if plain:
        return json.dumps(await _plain.timeRuns(js_id, x_js, to_js(_shape(key)), k) / k)
    return json.dumps(await _py_runs(sess, x, k))


def _transfer_in(a, k):
    # The bridge's own hop for a feed: wire form, then a pooled typed array filled
    # from numpy; the array goes back to the pool as `run` does once ORT copied it.
    t0 = time.perf_counter()
    for _ in range(k):
        buf = _bridge.encode_feed(_convert.to_wire(a, _F32))
        _tensors.recycle("float32", buf)
    return (time.perf_counter() - t0) * 1000 / k


def _transfer_out(js_array, n, k):
    # The bridge's own hop for an output: ORT's typed array read into a new numpy array.
    t0 = time.perf_counter()
    for _ in range(k):
        out = _bridge.read(_F32, [n], js_array)
    ms = (time.perf_counter() - t0) * 1000 / k
    assert out.shape == (n,)
    return ms


async def bench_transfer(mb, k, first):
    """One interleaved triple for ``mb`` MiB of float32: ms per copy in, out, JS set."""
    n = mb * 1024 * 1024 // 4
    key = f"transfer{mb}"
    if key not in _state:
        a = np.random.default_rng(1).standard_normal(n).astype(np.float32)
        js_array = run_js("(n) => { const a = new Float32Array(n); a.fill(1.5); return a; }")(n)
        _state[key] = (a, js_array)
        # Warm-up: the pool's first array and numpy's first buffer of this size.
        _transfer_in(a, 1)
        _transfer_out(js_array, n, 1)
        _plain.timeSet(n * 4, 1)
    a, js_array = _state[key]
    steps = {
        "in_ms": lambda: _transfer_in(a, k),
        "out_ms": lambda: _transfer_out(js_array, n, k),
        "set_ms": lambda: _plain.timeSet(n * 4, k) / k,
    }
    order = list(steps) if first == "py" else list(reversed(steps))
    return json.dumps({name: steps[name]() for name in order})


async def _chain_setup(mb):
    key = f"chain{mb}"
    if key in _state:
        return _state[key]
    model_a, model_b = _read_model("chain_a"), _read_model("chain_b")
    n = mb * 1024 * 1024 // 4
    x = np.random.default_rng(2).standard_normal((1, n)).astype(np.float32)
    a_gpu = await ortweb.InferenceSession.create(
        model_a, providers=["webgpu"], preferred_output_location="gpu-buffer")
    a_cpu = await ortweb.InferenceSession.create(model_a, providers=["webgpu"])
    b = await ortweb.InferenceSession.create(model_b, providers=["webgpu"])
    x_gpu = await ortweb.OrtValue.ortvalue_from_numpy_async(x, "webgpu")
    device = await ortweb.webgpu_device_async()
    js_a_gpu = await _plain.createSession("webgpu", to_js(model_a), device, True)
    js_a_cpu = await _plain.createSession("webgpu", to_js(model_a), device, False)
    js_b = await _plain.createSession("webgpu", to_js(model_b), device, False)
    x_js = to_js(x.ravel())
    x_js_gpu = _plain.gpuBufferOf(device, x_js)
    _state[key] = (a_gpu, a_cpu, b, x, x_gpu, js_a_gpu, js_a_cpu, js_b, x_js, x_js_gpu)
    for gpu in (True, False):  # warm-up: shader compilation, buffer pools
        await _py_chain(_state[key], 1, gpu)
        await _plain.timeChain(js_a_gpu if gpu else js_a_cpu, js_b,
                               x_js_gpu if gpu else x_js, to_js([1, n]), 1, gpu)
    return _state[key]


async def _py_chain(st, k, gpu):
    a_gpu, a_cpu, b, x, x_gpu = st[:5]
    t0 = time.perf_counter()
    for _ in range(k):
        if gpu:
            # A's output stays on the GPU and feeds B; only B's result comes back.
            (y,) = await a_gpu.run_async(None, {"x": x_gpu})
            (z,) = await b.run_async(None, {"y": y})
            y.dispose()
        else:
            # The CPU round trip: A's output downloaded to numpy and uploaded again.
            (y,) = await a_cpu.run_async(None, {"x": x})
            (z,) = await b.run_async(None, {"y": y})
    ms = (time.perf_counter() - t0) * 1000 / k
    assert z.shape == x.shape
    return ms


async def bench_chain(mb, k, first):
    """One interleaved round: ms per chain pass, GPU-kept and CPU round trip,
    through ortweb and in plain JS."""
    st = await _chain_setup(mb)
    n = st[3].size
    js_a_gpu, js_a_cpu, js_b, x_js, x_js_gpu = st[5:]
    dims = to_js([1, n])
    steps = {
        "py_gpu_ms": lambda: _py_chain(st, k, True),
        "py_cpu_ms": lambda: _py_chain(st, k, False),
        "js_gpu_ms": lambda: _plain.timeChain(js_a_gpu, js_b, x_js_gpu, dims, k, True),
        "js_cpu_ms": lambda: _plain.timeChain(js_a_cpu, js_b, x_js, dims, k, False),
    }
    order = list(steps) if first == "py" else list(reversed(steps))
    out = {}
    for name in order:
        ms = await steps[name]()
        out[name] = ms if name.startswith("py") else ms / k
    return json.dumps(out)


def _on_ort(provider):
    return engine_of(provider).name == "ort"


async def bench_engine_open(provider, key):
    """Model ``key`` on ``provider`` alone (no fallback), warmed up on both sides;
    the files its engine downloaded and their bytes, or why it could not."""
    if (provider, key) not in _state:
        try:
            sess = await ortweb.InferenceSession.create(_read_model(key), providers=[provider])
        except Exception as exc:  # the engine's reason, as ortweb gives it
            return json.dumps({"error": f"{type(exc).__name__}: {exc}"})
        adopt = _plain.adoptSession if _on_ort(provider) else _plain.adoptEngine
        js_id = await adopt(sess._handle)
        x = np.random.default_rng(0).standard_normal(_shape(key)).astype(np.float32)
        _state[(provider, key)] = (sess, js_id, x, to_js(x.ravel()))
        deadline = time.perf_counter() + WARM_UP_S
        while True:  # as _wasm_pair: the first runs compile and allocate, not compared
            await _py_runs(sess, x, 1)
            await _plain_runs(provider, key, 1)
            if time.perf_counter() > deadline:
                break
    sess = _state[(provider, key)][0]
    got = (await _plain.engineBytes(sess._handle)).to_py()
    return json.dumps({"provider": sess.provider, "files": list(got["files"]),
                       "bytes": int(got["bytes"]),
                       "run_ms": await _plain_runs(provider, key, 1)})


async def bench_worker_hop(key, k):
    """ms per round trip of model ``key``'s input to a worker that sends it back: what
    tract's own worker adds to each call before tract does any work."""
    return json.dumps(await _plain.timeWorkerHop(_state[("tract", key)][3], k) / k)


async def _plain_runs(provider, key, k):
    _, js_id, _, x_js = _state[(provider, key)]
    dims = to_js(_shape(key))
    if _on_ort(provider):
        return await _plain.timeRuns(js_id, x_js, dims, k) / k
    return await _plain.timeEngineRuns(js_id, x_js, dims, k) / k


async def bench_engine(provider, key, k, first, block):
    """One interleaved round on ``provider``: ms per run through ortweb and through
    the engine's own JS call, on the very same session, ``k`` runs a side in blocks of
    ``block`` runs, the sides taking turns block by block (py js js py ...: whichever
    goes first alternates), so that a change in the host's load falls on both."""
    sess, _, x, _ = _state[(provider, key)]
    runs = {"py": lambda n: _py_runs(sess, x, n), "js": lambda n: _plain_runs(provider, key, n)}
    total = {"py": 0.0, "js": 0.0}
    order = ["py", "js"] if first == "py" else ["js", "py"]
    done = blocks = 0
    while done < k:
        n = min(block, k - done)
        blocks += 1
        for side in order:
            total[side] += await runs[side](n) * n
        order.reverse()
        done += n
    return json.dumps({"py_ms": total["py"] / k, "js_ms": total["js"] / k, "blocks": blocks})


async def bench_engine_close():
    """Close every engine session of the section (tract's workers, wonnx's GPU)."""
    for name in [n for n in _state if isinstance(n, tuple)]:
        await _state.pop(name)[0].close_async()
    return json.dumps(True)


async def bench_runtime_info():
    """Threads ORT actually uses, per loaded build, and the page's isolation."""
    info = await ortweb.runtime_info_async()
    return json.dumps({"builds": info.get("builds"),
                       "cross_origin_isolated": info.get("cross_origin_isolated"),
                       "hardware_concurrency": info.get("hardware_concurrency"),
                       "event_loop": _bridge.event_loop(),
                       "bridge_wakeup": _bridge.bridge_wakeup()}, default=str)


json.dumps({"ok": True})
