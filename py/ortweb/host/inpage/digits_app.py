# mypy: disable-error-code="top-level-await"
"""The digits demo's Python: runs in the browser, inside Pyodide (see ``ortweb demo``).

The page (``templates/digits/digits.js``) draws and plots; everything else is
here: the drawing becomes the model's 64 features with numpy
(``digits_features.py``), the model runs through ortweb on the execution
provider the page's switch names, and the page gets back the probabilities,
the provider that ran and the time the inference took.
"""

from __future__ import annotations

import json
import os
import statistics
import time
from typing import Any

import numpy as np
from digits_features import features_from_rgba

import ortweb

MODEL = os.environ.get("ORTWEB_MODEL", "digits.onnx")
with open("digits_samples.json", encoding="utf-8") as _f:
    SAMPLES: list[dict[str, Any]] = json.load(_f)

_sessions: dict[str, ortweb.InferenceSession] = {}


async def _session(provider: str | None) -> ortweb.InferenceSession:
    """One session per provider (None: the page's default rule), made on first use."""
    key = provider or "default"
    if key not in _sessions:
        sess = await ortweb.InferenceSession.create(
            MODEL, providers=None if provider is None else [provider]
        )
        _sessions[key] = sess
        _sessions.setdefault(sess.provider, sess)
    return _sessions[key]


async def _classify(features: np.ndarray, provider: str | None) -> dict[str, Any]:
    sess = await _session(provider)
    start = time.perf_counter()
    (probabilities,) = await sess.run_async(None, {"pixels": features})
    ms = (time.perf_counter() - start) * 1000.0
    return {
        "provider": sess.provider,
        "ms": ms,
        "ms_per_inference": ms / len(features),
        "probabilities": probabilities,
        "labels": probabilities.argmax(axis=1),
    }


async def predict_canvas(rgba: Any, width: int, height: int, provider: str | None = None) -> dict:
    """Classify a canvas drawing (``ImageData.data``); ``empty`` when nothing is drawn."""
    features = features_from_rgba(rgba, int(width), int(height))
    if not features.any():
        return {"empty": True, "features": features}
    result = await _classify(features[None], provider)
    return {
        "empty": False,
        "label": int(result["labels"][0]),
        "probabilities": result["probabilities"][0],
        "provider": result["provider"],
        "ms": result["ms"],
        "features": features,
    }


async def predict_features(rows: Any, provider: str | None = None) -> dict:
    """Classify rows of 64 features (the data set's own values, 0..16) in one batch."""
    features = np.asarray(rows, dtype=np.float32).reshape(-1, 64)
    return await _classify(features, provider)


def sample(index: int) -> dict:
    """A held-out digit shipped with the page: its 64 values and its true label."""
    s = SAMPLES[int(index) % len(SAMPLES)]
    return {"index": int(index) % len(SAMPLES), "pixels": s["pixels"], "label": s["label"]}


async def benchmark(provider: str | None = None, runs: int = 20) -> dict:
    """Time ``runs`` single-digit inferences (after one warm-up): median and best, in ms."""
    features = np.asarray(SAMPLES[0]["pixels"], dtype=np.float32)[None]
    await _classify(features, provider)
    times = [(await _classify(features, provider))["ms"] for _ in range(int(runs))]
    return {"provider": (await _session(provider)).provider, "runs": len(times),
            "median_ms": statistics.median(times), "best_ms": min(times)}


async def status() -> dict:
    """Which providers this browser offers, the default one, and why others were skipped."""
    default = await _session(None)
    return {
        "available": await ortweb.get_available_providers_async(),
        "default": default.provider,
        "skipped": dict(default.skipped_providers),
        "samples": len(SAMPLES),
    }


# The default session is made while the page shows its progress, so the
# first drawing is answered at once.
_default = await _session(None)
print(f"digits demo: {MODEL} runs on {_default.provider}"
      + (f" (skipped: {_default.skipped_providers})" if _default.skipped_providers else ""))
