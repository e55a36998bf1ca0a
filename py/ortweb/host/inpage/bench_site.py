# mypy: disable-error-code="top-level-await"
"""The script of the site ``ortweb bench --sections site`` builds (runs in the page).

At start-up it makes the first inference, on the model the site ships, so the page's
``ready`` mark is the time to first inference. Page JS then calls :func:`heavy`
(one run of the ~50-100 ms model) and :func:`tiny` (one run of a tiny model, for the
cost of ``window.ortweb.call`` itself).
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

import numpy as np

import ortweb

_heavy = await ortweb.InferenceSession.create(os.environ["ORTWEB_MODEL"], providers=["wasm"])
with open("bench_site.json", encoding="utf-8") as _f:
    _shape = json.load(_f)["shape"]
_x = np.ones(_shape, np.float32)
(_first,) = await _heavy.run_async(None, {"x": _x})
_tiny = await ortweb.InferenceSession.create("tiny.onnx", providers=["wasm"])
print("first inference done", _first.shape)


async def heavy() -> float:
    """One run of the heavy model; its time in ms."""
    start = time.perf_counter()
    await _heavy.run_async(None, {"x": _x})
    return (time.perf_counter() - start) * 1000.0


async def tiny(data: Any) -> float:
    """One run of the tiny model on ``data`` (a Float32Array of 64); the sum of its output."""
    x = np.frombuffer(data, np.float32).reshape(1, 64)
    (y,) = await _tiny.run_async(None, {"x": x})
    return float(y.sum())
