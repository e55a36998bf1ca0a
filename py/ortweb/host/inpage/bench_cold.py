# Runs inside Pyodide for `ortweb bench`, first thing in a fresh page (new browser
# context): the rest of ortweb's cold start after Pyodide and numpy are loaded.
# The host defines ORTWEB_ARGS (a JSON string: model URL, input dims). Returns the
# points each step finished at, in ms since navigation start (performance.now()).
import json

import js

marks = {"python_entered": js.performance.now()}
args = json.loads(ORTWEB_ARGS)  # type: ignore[name-defined]

import numpy as np  # noqa: E402

import ortweb  # noqa: E402

marks["ortweb_imported"] = js.performance.now()
sess = await ortweb.InferenceSession.create(args["model"], providers=["wasm"])
marks["session_created"] = js.performance.now()
await sess.run_async(None, {sess.get_inputs()[0].name: np.zeros(args["dims"], np.float32)})
marks["first_run"] = js.performance.now()
await sess.close_async()
resources = js.performance.getEntriesByType("resource")
size = sum(int(e.encodedBodySize or e.transferSize or 0) for e in resources)
json.dumps({"ms": marks["first_run"], "marks": marks, "bytes": size, "count": len(resources)})
