"""The figures ``ortweb bench`` reports: their goals, and the statistics over pairs."""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "FIXED_KEYS",
    "GOALS",
    "SECTIONS",
    "Goal",
    "Recorder",
    "alternate",
    "differences",
    "gbps",
    "ratios",
    "summarize",
    "verdict",
]

SECTIONS = ("bridge", "transfer", "chain", "threads", "cold", "large", "site", "harness",
            "engines", "network")


@dataclass(frozen=True)
class Goal:
    """A figure's goal from issue 9: ``op`` is ``">="``, ``"<="`` or ``""`` (context)."""

    label: str
    unit: str
    op: str = ""
    target: float = 0.0

    def text(self) -> str:
        """The goal as the table shows it: ``">= 3"``, or ``"(context)"``."""
        return f"{self.op} {self.target:g}" if self.op else "(context)"


#: The fixed JSON keys, in table order, with their goals.
GOALS: dict[str, Goal] = {
    "bridge_ratio_resnet50": Goal("ortweb / plain JS per run, resnet50 wasm", "x", "<=", 1.03),
    "bridge_extra_ms_tiny": Goal("ortweb - plain JS per run, MatMul+Relu wasm", "ms", "<=", 0.3),
    "transfer_in_gbps_16mb": Goal("numpy -> ORT feed, 16 MiB", "GB/s", ">=", 3.0),
    "transfer_in_gbps_64mb": Goal("numpy -> ORT feed, 64 MiB", "GB/s", ">=", 3.0),
    "transfer_out_gbps_16mb": Goal("ORT output -> numpy, 16 MiB", "GB/s", ">=", 3.0),
    "transfer_out_gbps_64mb": Goal("ORT output -> numpy, 64 MiB", "GB/s", ">=", 3.0),
    "cold_start_ratio": Goal("ortweb first inference / (Pyodide+numpy + plain ORT)", "x",
                             "<=", 1.10),
    "gpu_chain_speedup_1mb": Goal("GPU-kept chain vs CPU round trip, 1 MiB (ortweb)", "x"),
    "gpu_chain_speedup_16mb": Goal("GPU-kept chain vs CPU round trip, 16 MiB (ortweb)", "x",
                                   ">=", 1.7),
    "threads_speedup_resnet50": Goal("wasm 2 threads vs 1, resnet50", "x", ">=", 1.6),
    "web_vs_native_resnet50": Goal("ORT-web wasm / native onnxruntime, 1 thread, resnet50",
                                   "x"),
    "large_load_ratio": Goal("ortweb / plain JS, time to a ready session, 1 GiB model by URL",
                             "x", "<=", 1.05),
    "large_peak_mem_ratio": Goal("ortweb / plain JS, renderer peak memory loading it", "x",
                                 "<=", 1.10),
    "large_warm_ratio": Goal("second load (file cache, OPFS) / first load, no request", "x",
                             "<=", 0.5),
    "site_cold_ratio": Goal("ortweb site, first visit to first inference / Pyodide+numpy alone",
                            "x", "<=", 1.05),
    "site_warm_ratio": Goal("ortweb site, second visit / first visit, to first inference", "x",
                            "<=", 0.5),
    "site_worker_long_tasks": Goal("page long tasks in 10 s of back-to-back inference, worker",
                                   "", "<=", 0),
    "site_worker_max_frame_gap_ms": Goal("worst gap between animation frames then, worker",
                                         "ms", "<=", 50),
    "site_worker_call_extra_ms": Goal("median window.ortweb.call of a tiny model, worker - "
                                      "main thread, side by side", "ms", "<=", 0.3),
    "harness_first_page_s": Goal("ortweb.testing: first trivial browser test of a pytest "
                                 "process (browser and page included)", "s", "<=", 1.0),
    "harness_per_test_ms": Goal("ortweb.testing: each later trivial browser test", "ms",
                                "<=", 50),
}


def _engine_goals() -> dict[str, Goal]:
    """The engines section's figures, per engine (issue 28)."""
    goals: dict[str, Goal] = {}
    for engine, what in (("wasm", "onnxruntime-web wasm"), ("webgpu", "onnxruntime-web WebGPU"),
                         ("tract", "tract (tractjs)"), ("wonnx", "wonnx")):
        for model, label in (("tiny", "Add+Relu 64"), ("conv", "2 Conv 3x32x32"),
                             ("cnn", "2 Conv 3x64x64"), ("digits", "digits MLP")):
            goals[f"engine_{engine}_{model}_ms"] = Goal(f"{what}: ortweb run, {label}", "ms")
        goals[f"engine_{engine}_bridge_ratio"] = Goal(
            f"{what}: ortweb / the engine's own JS call, same session, 2 Conv 3x64x64", "x",
            "<=", 1.05)
        goals[f"engine_{engine}_bytes"] = Goal(f"{what}: the engine's files as served", "B")
        goals[f"engine_{engine}_node_pass"] = Goal(f"{what}: ONNX node cases passed", "")
    return goals


def _network_goals() -> dict[str, Goal]:
    """The network section's figures (issue 30): per emulated link, then bytes."""
    goals: dict[str, Goal] = {}
    for profile, link in (("broadband", "50 Mbit/s, 20 ms"), ("mobile", "10 Mbit/s, 80 ms")):
        goals[f"net_{profile}_first_visit_s"] = Goal(
            f"ortweb site, first visit to first inference, {link}", "s")
        goals[f"net_{profile}_floor_s"] = Goal(
            f"floor: Pyodide+numpy and plain ORT-web + model at once, {link}", "s")
        goals[f"net_{profile}_ratio"] = Goal(f"site first visit / floor, {link}", "x",
                                             "<=", 1.10)
    goals["net_first_visit_bytes"] = Goal("ortweb site, compressed bytes before the first "
                                          "inference", "B")
    goals["net_bytes_ratio"] = Goal("those bytes / the floor's", "x", "<=", 1.05)
    goals["net_second_visit_requests"] = Goal("second visit: requests for assets (not the "
                                              "manifest and service worker checks)", "",
                                              "<=", 0)
    return goals


GOALS.update(_engine_goals())
GOALS.update(_network_goals())
FIXED_KEYS = tuple(GOALS)


def summarize(values: Iterable[float]) -> dict[str, Any]:
    """``{median, min, max, n}`` of ``values`` (all None when there are none)."""
    vals = [float(v) for v in values]
    if not vals:
        return {"median": None, "min": None, "max": None, "n": 0}
    return {"median": statistics.median(vals), "min": min(vals), "max": max(vals),
            "n": len(vals)}


def ratios(a: Sequence[float], b: Sequence[float]) -> list[float]:
    """``a[i] / b[i]`` for each interleaved pair (pairs must line up)."""
    if len(a) != len(b):
        raise ValueError(f"unpaired samples: {len(a)} vs {len(b)}")
    return [x / y for x, y in zip(a, b, strict=True)]


def differences(a: Sequence[float], b: Sequence[float]) -> list[float]:
    """``a[i] - b[i]`` for each interleaved pair."""
    if len(a) != len(b):
        raise ValueError(f"unpaired samples: {len(a)} vs {len(b)}")
    return [x - y for x, y in zip(a, b, strict=True)]


def alternate(i: int) -> str:
    """Which side goes first in pair ``i``: ``"py"`` on even pairs, ``"js"`` on odd,
    so neither side always runs right after the other's warm caches."""
    return "py" if i % 2 == 0 else "js"


def gbps(nbytes: int, ms: float) -> float:
    """Bytes moved in ``ms`` milliseconds, as GB/s (10**9 bytes per second)."""
    return nbytes / (ms * 1e-3) / 1e9


def verdict(key: str, stats: Mapping[str, Any]) -> str:
    """``"met"``/``"missed"`` (judged on the median), ``"context"``, or ``"not run"``."""
    goal = GOALS.get(key)
    median = stats.get("median")
    if median is None:
        return "not run"
    if goal is None or not goal.op:
        return "context"
    ok = median >= goal.target if goal.op == ">=" else median <= goal.target
    return "met" if ok else "MISSED"


class Recorder:
    """Samples by key; turned into ``{median, min, max, n}`` at the end."""

    def __init__(self) -> None:
        self.samples: dict[str, list[float]] = {}

    def add(self, key: str, values: Iterable[float]) -> None:
        """Append ``values`` to the samples of ``key``."""
        self.samples.setdefault(key, []).extend(values)

    def stats(self, keys: Iterable[str]) -> dict[str, dict[str, Any]]:
        """:func:`summarize` of each key's samples (``n`` 0 for keys never added)."""
        return {k: summarize(self.samples.get(k, [])) for k in keys}
