"""``ortweb bench``: speed figures, each measured side by side with its anchor.

A shared machine is noisy, so no figure is an absolute time taken
alone: every comparison runs its two sides in alternating blocks (A, B, A, B, ...,
the first side swapped every pair) in one run, a figure is computed per pair, and
the report gives the median, min and max over the pairs. Timings are taken inside
the page (``time.perf_counter`` in Python, ``performance.now()`` in JS), so the
host's round trips to the page are never counted.

Sections and what they compare:

``bridge``
    ``sess.run_async`` from Python vs the same ``session.run`` from plain JS, same
    page, same ORT module, wasm EP: a tiny MatMul+Relu model and resnet50.
``transfer``
    ortweb's own hop for a feed (``to_wire`` + ``_encode``) and for an output
    (``_read``), 1/16/64 MiB float32, next to a JS ``Float32Array.set``.
``chain``
    Two WebGPU models chained with the intermediate kept on the GPU vs a CPU round
    trip, through ortweb and in plain JS, 1 and 16 MiB.
``threads``
    resnet50 on wasm with 2 threads vs 1 (two fresh pages), and ORT-web wasm (plain
    JS, 1 thread) vs native onnxruntime on the host (1 thread).
``cold``
    Fresh browser contexts: ortweb's page to first inference vs Pyodide+numpy alone
    plus onnxruntime-web alone to first inference.
``large``
    A model of 1 GiB of float32 weights in external data, each load in a fresh
    browser context: ortweb by URL (and by path) vs plain onnxruntime-web by the same
    URL, time to a ready session and the renderer's peak memory from the OS; the
    second load from ortweb's file cache (OPFS); the model over 2 GB once (:mod:`.large`).
``site``
    A site made by ``ortweb site``, in fresh contexts: first visit to first inference
    vs Pyodide+numpy alone, second and offline visits, and the page's long tasks,
    frame gaps and per-call cost in worker vs main-thread mode (:mod:`.site`).

Modules: :mod:`.figures` (the goals, the statistics over pairs), :mod:`.plan`
(rounds per section), :mod:`.models` (resnet50 folded, the chain's links, the
generated large models), :mod:`.procmem` (a process's memory from ``/proc``),
:mod:`.pages` (driving the bench pages), :mod:`.sections` (one function a
section), :mod:`.run` (:func:`run_bench`), :mod:`.report` (table, Markdown, files).
The in-page halves are ``host/inpage/bench_page.py``, ``bench_cold.py`` and
``bench_large.py``; the plain-JS anchors ``web/bench_plain.js``, ``bench_cold.js`` and
``large_plain.js``.
"""

from __future__ import annotations

from .figures import (
    FIXED_KEYS,
    GOALS,
    SECTIONS,
    Goal,
    alternate,
    differences,
    gbps,
    ratios,
    summarize,
    verdict,
)
from .models import folded_resnet50
from .plan import Plan
from .report import render_markdown, render_table, write_outputs
from .run import run_bench

__all__ = [
    "FIXED_KEYS",
    "GOALS",
    "SECTIONS",
    "Goal",
    "Plan",
    "alternate",
    "differences",
    "folded_resnet50",
    "gbps",
    "ratios",
    "render_markdown",
    "render_table",
    "run_bench",
    "summarize",
    "verdict",
    "write_outputs",
]
