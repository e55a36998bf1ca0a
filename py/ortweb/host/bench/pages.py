"""Driving the bench's pages: the in-page bench, fresh cold-start contexts, native runs."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import Any

import numpy as np

from .. import inpage
from ..browser import PyodidePage, Runtime

__all__ = ["bench_page", "call", "cold_ortweb", "cold_plain", "native_block"]


def call(page: PyodidePage, expr: str) -> Any:
    """Run ``expr`` (a call of the in-page bench's functions) in ``page``; its JSON result."""
    return page.run_json(expr, filename="<ortweb bench>")


def bench_page(runtime: Runtime, models: Mapping[str, str], shapes: Mapping[str, Any],
               threads: int, warm_up_s: float) -> PyodidePage:
    """A new page with ``models`` (name → server URL) loaded into ``inpage/bench_page.py``.

    Parameters
    ----------
    runtime : Runtime
    models : mapping of str to str
        Model name → its URL on the runtime's server.
    shapes : mapping
        Model name → the input shape the page feeds it.
    threads : int
        ORT-web's wasm threads in this page.
    warm_up_s : float
        Seconds each model runs untimed on both sides before its first round
        (:attr:`.Plan.warm_up_s`).
    """
    page = runtime.new_page()
    try:
        for name, url in models.items():
            page.write_file(url, f"/tmp/bench/{name}.onnx")
        args = {"threads": threads, "warm_up_s": warm_up_s, "shapes": dict(shapes),
                "models": {name: f"/tmp/bench/{name}.onnx" for name in models}}
        call(page, f"ORTWEB_ARGS = {json.dumps(json.dumps(args))}\n"
             + inpage.source("bench_page"))
    except BaseException:
        page.close()
        raise
    return page


def native_block(sess: Any, x: np.ndarray, k: int) -> float:
    """Milliseconds per run of ``k`` runs of native onnxruntime's ``sess`` on ``x``."""
    name = sess.get_inputs()[0].name
    t0 = time.perf_counter()
    for _ in range(k):
        sess.run(None, {name: x})
    return (time.perf_counter() - t0) * 1000 / k


def cold_plain(runtime: Runtime, query: str) -> dict[str, Any]:
    """``web/bench_plain.html?query`` in a fresh context: Pyodide or ORT-web alone."""
    # No router: the anchor page loads as in a plain browser, with nothing in between
    # (a remote browser reaches the server only through one, so it gets one).
    context = runtime.browser.new_context(origin=runtime.server.url)
    try:
        page = context.new_page()
        page.goto(runtime.server.url.rstrip("/") + "/bench_plain.html?" + query)
        out = page.evaluate("() => window.benchResult")
    finally:
        context.close()
    if not out.get("ok"):
        raise RuntimeError(f"plain cold-start page failed: {out.get('message')}")
    return dict(out)


def cold_ortweb(runtime: Runtime, model_url: str, dims: list[int]) -> dict[str, Any]:
    """ortweb's page, fresh, to its first inference (``inpage/bench_cold.py``)."""
    # Unrouted, as the anchor (cold_plain).
    with runtime.new_page(routed=False) as page:
        args = {"model": model_url, "dims": dims}
        return dict(page.run_json(f"ORTWEB_ARGS = {json.dumps(json.dumps(args))}\n"
                                  + inpage.source("bench_cold"), filename="<bench cold>"))
