"""``providers="auto"``: time each available provider on this model, keep the fastest.

The choice is remembered in the browser's Cache Storage under (model sha256,
adapter, onnxruntime-web version and build), so the next load of the same model
on the same machine skips measuring.
"""

from __future__ import annotations

import hashlib
import statistics
import time
from collections.abc import Sequence
from typing import Any

from . import _bridge, _dtypes
from ._convert import to_wire
from ._metadata import node_args_from_bridge
from ._synthetic import synthetic_feeds
from .errors import OrtWebError, ProviderUnavailable

__all__ = ["AUTO_BUDGET_S", "AUTO_RUNS", "choose_provider"]

#: Timed runs per provider (after one warm-up run).
AUTO_RUNS = 5
#: Seconds of timed runs per provider at most; a slow first run (shader
#: compilation on WebGPU) counts as the measurement when it alone exceeds this.
AUTO_BUDGET_S = 5.0


async def _cache_key(model: bytes | _bridge.JsBuffer) -> str:
    gpu = await _bridge.probe_webgpu()
    versions = await _bridge.versions("wasm")
    info = gpu.get("info") or {}
    adapter = "/".join(str(info.get(k, "")) for k in ("vendor", "architecture", "device",
                                                       "description")) or "no-adapter"
    build = str(_bridge.settings()["webgpuBuild"])
    if isinstance(model, bytes):
        digest = hashlib.sha256(model).hexdigest()
    else:  # a file kept in JavaScript is hashed there
        digest = await _bridge.sha256_hex(model)
    return f"auto|{digest}|{adapter}|ort-web {versions['ort']}|{build}"


async def _measure(info: dict[str, Any], budget_s: float, runs: int) -> dict[str, float]:
    inputs = node_args_from_bridge([
        {**e, "type": _dtypes.by_ort(e["type"]).onnx} for e in info["inputs"]
    ])
    feeds: list[_bridge.Feed] = [
        (name, to_wire(array, _dtypes.by_numpy(array.dtype) or _dtypes.by_onnx("tensor(float)")))
        for name, array in synthetic_feeds(inputs).items()
    ]
    fetches: list[tuple[str, int | None]] = [(o["name"], None) for o in info["outputs"]]

    async def once() -> float:
        start = time.perf_counter()
        outputs = await _bridge.run_session(int(info["handle"]), feeds, fetches)
        elapsed = (time.perf_counter() - start) * 1000
        for out in outputs:
            if isinstance(out, _bridge.GpuOutput):
                _bridge.dispose_value(out.handle)
        return elapsed

    first = await once()
    deadline = time.perf_counter() + budget_s
    times: list[float] = []
    while len(times) < runs and time.perf_counter() < deadline:
        times.append(await once())
    return {"median_ms": statistics.median(times or [first]), "first_ms": first,
            "runs": float(len(times) or 1)}


async def choose_provider(
    model: bytes | _bridge.JsBuffer,
    candidates: Sequence[str],
    options: dict[str, Any],
    budget_s: float = AUTO_BUDGET_S,
    runs: int = AUTO_RUNS,
) -> tuple[dict[str, Any], dict[str, dict[str, float]], str]:
    """Create the session on the fastest of ``candidates``.

    Returns
    -------
    info : dict
        The bridge's session record (handle, provider, skipped, metadata ...).
    timings : dict
        Per provider measured: ``median_ms``, ``first_ms``, ``runs``.
    how : str
        ``'measured'`` or ``'remembered'``.
    """
    key = await _cache_key(model)
    cached = await _bridge.get_choice(key)
    if cached and cached.get("provider") in candidates:
        order = [cached["provider"], *[c for c in candidates if c != cached["provider"]]]
        info = await _bridge.create_session(model, order, options)
        return info, dict(cached.get("timings") or {}), "remembered"

    made: dict[str, dict[str, Any]] = {}
    timings: dict[str, dict[str, float]] = {}
    skipped: list[dict[str, str]] = []
    for provider in candidates:
        try:
            info = await _bridge.create_session(model, [provider], options)
        except OrtWebError as exc:
            reasons = getattr(exc, "reasons", {}) or {}
            kind = "skipped" if isinstance(exc, ProviderUnavailable) else "failed"
            skipped.append({"provider": provider, "reason": reasons.get(provider, exc.message),
                            "kind": kind})
            continue
        made[provider] = info
        try:
            timings[provider] = await _measure(info, budget_s, runs)
        except OrtWebError as exc:
            await _bridge.release_session(int(info["handle"]))
            del made[provider]
            skipped.append({"provider": provider, "reason": f"failed a synthetic run: {exc}",
                            "kind": "failed"})
    if not made:
        raise ProviderUnavailable(
            "providers='auto': no provider could run this model ("
            + "; ".join(f"{s['provider']}: {s['reason']}" for s in skipped) + ")",
            reasons={s["provider"]: s["reason"] for s in skipped},
        )
    best = min(timings, key=lambda p: timings[p]["median_ms"])
    for provider, info in made.items():
        if provider != best:
            await _bridge.release_session(int(info["handle"]))
            skipped.append({
                "provider": provider, "kind": "measured",
                "reason": f"measured slower ({timings[provider]['median_ms']:.2f} ms vs "
                          f"{timings[best]['median_ms']:.2f} ms on {best})",
            })
    await _bridge.put_choice(key, {"provider": best, "timings": timings})
    chosen = dict(made[best])
    chosen["skipped"] = list(chosen.get("skipped", [])) + skipped
    return chosen, timings, "measured"
