"""Runs inside Pyodide: one batch of conformance cases through ortweb's Python API.

The host sends this file's text followed by ``await run_batch(ARGS_JSON)``. The
batch's models and inputs arrive as one ``.npz`` in Pyodide's file system
(``m{k}`` the model bytes, ``i{k}_{j}`` the inputs); the outputs leave as one
``.npz`` (``o{k}_{j}``) and the return value is a JSON list with one record per
case. Before each case a progress line goes to stdout, so that the host knows
which case was running when a page hangs or crashes.
"""

from __future__ import annotations

import json
import re
import time
from typing import Any

import numpy as np

import ortweb

# After these, ORT-web's wasm instance is likely dead: stop the batch and let the
# host continue in a fresh page.
_FATAL = re.compile(
    r"Aborted\(|RuntimeError: unreachable|memory access out of bounds|out of memory"
    r"|table index is out of bounds|null function|Maximum call stack|device (was )?lost",
    re.I,
)


def _storable(a: np.ndarray) -> np.ndarray:
    # np.savez without pickles cannot hold object arrays: strings go as unicode.
    if a.dtype.kind == "O":
        return np.asarray([str(v) for v in a.reshape(-1).tolist()], dtype=str).reshape(a.shape)
    return a


async def run_batch(args_json: str) -> str:
    """Run every case of the batch described by ``args_json``; returns JSON records."""
    args = json.loads(args_json)
    tag = args["tag"]
    providers = args["providers"]
    outputs: dict[str, np.ndarray] = {}
    records: list[dict[str, Any]] = []
    with np.load(args["batch"], allow_pickle=False) as data:
        for k, case in enumerate(args["cases"]):
            print(f"{tag}start {k}", flush=True)
            record: dict[str, Any] = {"index": k}
            model = data[f"m{k}"].tobytes()
            feeds = {name: data[f"i{k}_{j}"] for j, name in enumerate(case["feeds"])}
            sess = None
            try:
                t0 = time.perf_counter()
                chosen: Any = providers
                if providers[0] not in ("webgpu", "wasm"):
                    chosen = ortweb.ProviderPolicy(require=providers[0],
                                                   trust={providers[0]: case["ops"]})
                sess = await ortweb.InferenceSession.create(model, providers=chosen)
                t1 = time.perf_counter()
                record["provider"] = sess.provider
                record["create_ms"] = round((t1 - t0) * 1000, 3)
                results = await sess.run_async(None, feeds)
                record["run_ms"] = round((time.perf_counter() - t1) * 1000, 3)
                record["outputs"] = len(results)
                for j, out in enumerate(results):
                    outputs[f"o{k}_{j}"] = _storable(np.asarray(out))
            except Exception as exc:
                record["error_type"] = type(exc).__name__
                record["error"] = str(exc)
                reasons = getattr(exc, "reasons", None)
                if reasons:
                    record["reasons"] = dict(reasons)
                if _FATAL.search(str(exc)):
                    record["fatal"] = True
            finally:
                if sess is not None:
                    try:
                        await sess.close_async()
                    except Exception as exc:
                        record.setdefault("error_type", type(exc).__name__)
                        record.setdefault("error", f"close: {exc}")
            records.append(record)
            if record.get("fatal"):
                break
    print(f"{tag}saving", flush=True)
    # numpy's stubs read **outputs as its own keyword arguments.
    np.savez(args["out"], **outputs)  # type: ignore[arg-type]
    return json.dumps(records)
