# Runs inside Pyodide for `ortweb run`: the host defines ORTWEB_ARGS (a JSON string)
# before this source. Top-level await is allowed (runPythonAsync).
import json
import sys
import time

import js
import numpy as np

import ortweb

args = json.loads(ORTWEB_ARGS)  # type: ignore[name-defined]
with np.load(args["inputs"], allow_pickle=False) as data:
    feeds = {k: data[k] for k in data.files}

mark = args["progress"]


def report(file, loaded, total):
    # One line per event, on stderr: the host draws the bar (ortweb/cli/_progress.py).
    print(mark + json.dumps([file, loaded, total]), file=sys.stderr, flush=True)


options = ortweb.SessionOptions()
for dim, size in args["dims"].items():
    options.add_free_dimension_override_by_name(dim, size)
providers = args["providers"]
if args["trust"] or args["verify"]:
    providers = ortweb.ProviderPolicy(order=providers,
                                      trust={p: args["trust"] for p in providers},
                                      verify=args["verify"] or False,
                                      verify_tolerance=tuple(args["tolerance"]))
t0 = time.perf_counter()
sess = await ortweb.InferenceSession.create(
    js.location.origin + args["model"], options, providers=providers, cache=False,
    progress=report if mark else None,
)
t1 = time.perf_counter()
outputs = await sess.run_async(None, feeds)
t2 = time.perf_counter()


def _storable(a):
    return np.asarray(a.tolist(), dtype=str).reshape(a.shape) if a.dtype.kind == "O" else a


np.savez(args["outputs"], **{f"out_{i}": _storable(o) for i, o in enumerate(outputs)})
report = {
    "provider": sess.provider,
    "skipped": sess.skipped_providers,
    "verify": sess.provider_report.verify,
    "inputs": [{"name": a.name, "type": a.type, "shape": a.shape} for a in sess.get_inputs()],
    "outputs": [{"name": a.name, "type": a.type, "shape": a.shape} for a in sess.get_outputs()],
    "create_ms": (t1 - t0) * 1000,
    "run_ms": (t2 - t1) * 1000,
}
await sess.close_async()
json.dumps(report)
