"""Soak: many runs and session cycles in one page, with leak and growth figures.

``ortweb soak`` prints, at each stage, ortweb's live handles (sessions, CPU and GPU
tensors, finalized), the GPU buffers alive in the page (ORT's included) and the
total WebAssembly memory (ORT's heaps and Pyodide's). It fails when handles or GPU
buffers grow after warm-up, or the wasm heaps grow by more than the bound.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ..testing.samples import mlp_model
from . import inpage
from .browser import PyodidePage, Runtime

__all__ = ["HEAP_GROWTH_BOUND", "SoakResult", "run_soak"]

#: Allowed growth of all wasm memories between warm-up and the end (bytes).
HEAP_GROWTH_BOUND = 64 * 1024**2


@dataclass
class SoakResult:
    """Readings at each stage and the verdicts drawn from them."""

    provider: str
    runs: int
    cycles: int
    readings: list[dict[str, Any]]
    same_answer: bool

    def _at(self, prefix: str) -> dict[str, Any]:
        return next(r for r in self.readings if r["stage"].startswith(prefix))

    def problems(self) -> list[str]:
        """Why the soak failed; empty when it passed."""
        out = []
        warm, end = self._at(f"after {max(1, self.runs // 10)} runs"), self._at(
            f"after {self.runs} runs")
        for key in ("sessions", "gpu_tensors", "cpu_tensors", "finalized", "gpu_buffers"):
            if end[key] > warm[key]:
                out.append(f"{key} grew during the runs: {warm[key]} -> {end[key]}")
        start, closed = self.readings[0], self._at("runs done")
        for key in ("sessions", "gpu_tensors"):
            if closed[key] != start[key]:
                out.append(f"{key} not back to the start after close: {start[key]} -> "
                           f"{closed[key]}")
        cw = self._at(f"after {max(1, self.cycles // 10)} create/close")
        ce = self._at(f"after {self.cycles} create/close")
        for key in ("sessions", "gpu_tensors", "gpu_buffers"):
            if ce[key] > cw[key]:
                out.append(f"{key} grew during the create/close cycles: {cw[key]} -> {ce[key]}")
        for a, b, what in ((warm, end, "runs"), (cw, ce, "create/close cycles")):
            growth = b["wasm_bytes"] - a["wasm_bytes"]
            if growth > HEAP_GROWTH_BOUND:
                out.append(f"wasm heaps grew {growth / 1024**2:.1f} MiB during the {what} "
                           f"(bound {HEAP_GROWTH_BOUND / 1024**2:.0f} MiB)")
        if not self.same_answer:
            out.append("the last run's answer differs from the first's")
        return out

    def table(self) -> str:
        head = (f"{'stage':<38} {'s':>3} {'cpu':>4} {'gpu':>4} {'fin':>4} {'gpubuf':>6} "
                f"{'gpu MiB':>8} {'wasm MiB':>9} {'t (s)':>7}")
        t0 = self.readings[0]["time"]
        rows = [head]
        for r in self.readings:
            rows.append(
                f"{r['stage']:<38} {r['sessions']:>3} {r['cpu_tensors']:>4} "
                f"{r['gpu_tensors']:>4} {r['finalized']:>4} {r['gpu_buffers']:>6} "
                f"{r['gpu_buffer_bytes'] / 1024**2:>8.2f} {r['wasm_bytes'] / 1024**2:>9.1f} "
                f"{r['time'] - t0:>7.1f}")
        return "\n".join(rows)


def run_soak(
    runtime: Runtime, page: PyodidePage, provider: str = "webgpu", runs: int = 10_000,
    cycles: int = 1_000, model: bytes | None = None, shape: tuple[int, ...] = (4, 64),
) -> SoakResult:
    """Soak ``model`` (default: a small MLP) on ``provider`` inside ``page``."""
    with runtime.shared_folder() as (folder, prefix):
        (folder / "soak.onnx").write_bytes(model or mlp_model())
        page.write_file(prefix + "soak.onnx", "/tmp/soak.onnx")
        args = {"model": "/tmp/soak.onnx", "provider": provider, "runs": runs,
                "cycles": cycles, "shape": list(shape)}
        out = page.run_json(f"ORTWEB_ARGS = {json.dumps(json.dumps(args))}\n"
                            + inpage.source("soak"), filename="<ortweb soak>")
    return SoakResult(provider, runs, cycles, out["readings"], bool(out["same_answer"]))
