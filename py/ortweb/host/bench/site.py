"""The site section: a site made by ``ortweb site``, as a visitor gets it.

Two sites are built from one script (``inpage/bench_site.py``, whose start-up makes
the first inference): worker mode (the default) and ``--main-thread``; both are
served by the bench's server, each in a folder of its own. Per round, in rotating
order, each in a fresh browser context:

``visits``
    the worker site's first visit (time to first inference: the page's ``ready``
    mark, ms since navigation start; the bytes of the site's files requested until
    then), its second visit once the service worker stored every file and the first
    visit kept its unpacked wheels (``web/site/unpacked.js``; ``site_kept_wheels_mb``,
    ``site_second_visit_kept_wheels``) (both visits boot from the Pyodide snapshot the
    build ships, ``web/site/snapshot.js``;
    ``site_snapshot_mb`` and ``site_snapshot_make_ms`` only where a page made one
    itself), and a visit with the network cut;
``pyodide``
    the anchor: Pyodide's core and numpy alone (``web/bench_plain.html?mode=pyodide``);
``worker`` / ``main``
    10 s of back-to-back ``window.ortweb.call('heavy')`` (a model of ~50-100 ms a
    run on wasm) while the page counts its long tasks (``PerformanceObserver``
    ``longtask``) and the worst gap between animation frames;
``calls``
    both sites open side by side, taking turns, a batch of ``window.ortweb.call``
    of a tiny model each, every call timed.

Figures: ``site_cold_ratio`` (first visit / Pyodide + numpy alone), ``site_warm_ratio``
(second visit / first), ``site_worker_long_tasks``, ``site_worker_max_frame_gap_ms``
and ``site_worker_call_extra_ms`` (the median call in the worker minus the median call
on the main thread; the difference of the means is a detail beside it).
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

import numpy as np

from .. import inpage
from ..browser import Runtime
from ..build.site import MANIFEST_NAME, build_site
from ..build.site_hashed import by_name
from .figures import Recorder
from .pages import cold_plain
from .plan import Plan

__all__ = ["ready_ms", "site", "site_model"]

Say = Callable[[str], None]

#: The Pyodide snapshot the build ships (made at build time, gzipped).
_SNAPSHOT_FILE: Final = "ortweb/pyodide-snapshot.gz"

#: The heavy model's input: ``[batch, width]`` through ``layers`` MatMul+Relu.
_BATCH: Final = 384
_WIDTH: Final = 512
_LAYERS: Final = 8

#: In the page: long tasks and frame gaps while `seconds` of back-to-back heavy calls run.
_RESPONSIVENESS: Final = """async (seconds) => {
  await window.ortweb.ready;
  let longTasks = 0;
  const observer = new PerformanceObserver((list) => { longTasks += list.getEntries().length; });
  observer.observe({ type: 'longtask' });
  let maxGap = 0, last = 0, frames = 0, running = true;
  const frame = (t) => {
    if (last) maxGap = Math.max(maxGap, t - last);
    last = t; frames += 1;
    if (running) requestAnimationFrame(frame);
  };
  requestAnimationFrame(frame);
  const times = [];
  const end = performance.now() + seconds * 1000;
  while (performance.now() < end) times.push(await window.ortweb.call('heavy'));
  await new Promise((resolve) => setTimeout(resolve, 100));
  running = false;
  observer.disconnect();
  times.sort((a, b) => a - b);
  return { longTasks, maxGap, frames, runs: times.length, runMs: times[times.length >> 1] };
}"""

#: In the page: `calls` calls of the tiny model, each timed (ms), after `warm` untimed.
_CALLS: Final = """async ([calls, warm]) => {
  await window.ortweb.ready;
  const data = new Float32Array(64).fill(0.5);
  for (let i = 0; i < warm; i++) await window.ortweb.call('tiny', data);
  const times = [];
  for (let i = 0; i < calls; i++) {
    const t0 = performance.now();
    await window.ortweb.call('tiny', data);
    times.push(performance.now() - t0);
  }
  return times;
}"""

#: Batches each mode's calls are split into, taken in turn (worker, main thread, ...).
_CALL_BATCHES: Final = 10


def site_model(batch: int = _BATCH, width: int = _WIDTH, layers: int = _LAYERS) -> bytes:
    """``layers`` MatMul+Relu of ``[batch, width] @ [width, width]``, input ``x``."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    nodes, inits, name = [], [], "x"
    for i in range(layers):
        w = (rng.standard_normal((width, width)) / np.sqrt(width)).astype(np.float32)
        inits.append(numpy_helper.from_array(w, f"w{i}"))
        out = "y" if i == layers - 1 else f"h{i}"
        nodes += [helper.make_node("MatMul", [name, f"w{i}"], [f"m{i}"]),
                  helper.make_node("Relu", [f"m{i}"], [out])]
        name = out
    graph = helper.make_graph(
        nodes, "site_bench",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", width])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", width])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    return bytes(model.SerializeToString())


def _build(work: Path, out: Path, *, worker: bool) -> dict[str, Any]:
    inputs = work / "inputs"
    inputs.mkdir(parents=True, exist_ok=True)
    (inputs / "heavy.onnx").write_bytes(site_model())
    # Imported here: the samples import onnx, which `ortweb`'s other commands never load.
    from ...testing.samples import matmul_relu_model

    (inputs / "tiny.onnx").write_bytes(matmul_relu_model(64))
    (inputs / "bench_site.json").write_text(json.dumps({"shape": [_BATCH, _WIDTH]}))
    (inputs / "bench_site.py").write_text(inpage.source("bench_site"))
    build_site(inputs / "heavy.onnx", inputs / "bench_site.py", out, providers=["wasm"],
               files=[inputs / "tiny.onnx", inputs / "bench_site.json"], worker=worker,
               title="ortweb bench site")
    return dict(json.loads((out / MANIFEST_NAME).read_text())["files"])


def ready_ms(page: Any, timeout_s: float = 300.0) -> float:
    """When a site's page was ready (its ``ready`` mark, ms since navigation start),
    waiting up to ``timeout_s``; a page that failed to start raises with its error."""
    page.wait_for_function(
        "() => ['ready', 'failed'].includes(document.documentElement.dataset.ortweb)",
        timeout=timeout_s * 1000)
    state = page.evaluate("() => document.documentElement.dataset.ortweb")
    if state != "ready":
        text = page.evaluate("() => document.getElementById('ortweb-error')?.innerText ?? ''")
        raise RuntimeError(f"the bench site failed to start: {text}")
    return float(page.evaluate("() => window.ortweb.timings.ready"))


#: The URLs a realm (the page, a worker, a service worker) had requested by ``until``
#: (ms since the epoch, the browser's clock), from its Resource Timing, and whether
#: that buffer was full (it would have dropped some).
_REQUESTED_BY = """(until) => {
  const entries = performance.getEntriesByType('resource');
  const named = [...performance.getEntriesByType('navigation'), ...entries]
    .filter((e) => performance.timeOrigin + e.startTime <= until).map((e) => e.name);
  const sw = globalThis.navigator?.serviceWorker?.controller?.scriptURL;
  return { urls: sw ? [...named, sw] : named, full: entries.length >= 250 };
}"""


def _requested(context: Any, page: Any) -> list[str]:
    """What the page, its workers and the context's service workers requested until the
    page was ready (their own records: listening to the browser's requests from here
    would slow the visit, and the anchor is timed without)."""
    until = page.evaluate("() => performance.timeOrigin + window.ortweb.timings.ready")
    urls: list[str] = []
    for realm in [page, *page.workers, *context.service_workers]:
        got = realm.evaluate(_REQUESTED_BY, until)
        if got["full"]:
            raise RuntimeError("a realm's Resource Timing buffer is full: requests not counted")
        urls += got["urls"]
    return urls


def _visits(runtime: Runtime, url: str, files: dict[str, Any]) -> dict[str, Any]:
    """First, second and offline visit of the worker site in one fresh context."""
    context = runtime.browser.new_context()
    try:
        page = context.new_page()
        page.goto(url)
        first = ready_ms(page)
        first_boot = page.evaluate("() => window.ortweb.pythonBoot")
        # The site's own files requested until the first inference (worker included).
        rel = [u[len(url):].split("?")[0] or "index.html"
               for u in _requested(context, page) if u.startswith(url)]
        first_bytes = sum(files[p]["size"] for p in set(rel) if p in files)
        stored = page.evaluate("() => window.ortweb.offline")
        # Pyodide's memory snapshot and the unpacked wheels, kept after the first
        # inference for the next visit.
        snapshot = page.evaluate("() => window.ortweb.snapshot")
        packages = page.evaluate("() => window.ortweb.packages")
        page.close()
        if not stored or stored["stored"] != stored["total"]:
            raise RuntimeError(f"the service worker did not store the site: {stored}")
        # What reached the server: the service worker answers the rest.
        with runtime.server.watching() as served:
            page = context.new_page()
            page.goto(url)
            second = ready_ms(page)
            second_boot = page.evaluate("() => window.ortweb.pythonBoot")
            second_packages = page.evaluate("() => window.ortweb.packages")
            page.wait_for_timeout(500)
            page.close()
        second_requests = [runtime.server.url.rstrip("/") + path for path in served]
        context.set_offline(True)
        page = context.new_page()
        page.goto(url)
        offline = ready_ms(page)
        page.close()
    finally:
        context.close()
    return {"first": first, "second": second, "offline": offline, "bytes": first_bytes,
            "second_requests": second_requests, "snapshot": snapshot, "packages": packages,
            "second_packages": second_packages,
            "first_boot": first_boot, "second_boot": second_boot}


def _settled(page: Any, url: str) -> None:
    page.goto(url)
    ready_ms(page)
    # Once ready, the first visit stores the site for an offline visit and keeps
    # Pyodide's memory snapshot and its unpacked wheels: measured after that, as a
    # visitor's page runs for long.
    for kept in ("offline", "snapshot", "packages"):
        page.evaluate(f"() => window.ortweb.{kept}")


def _responsiveness(runtime: Runtime, url: str, seconds: float) -> dict[str, Any]:
    context = runtime.browser.new_context()
    try:
        page = context.new_page()
        _settled(page, url)
        return dict(page.evaluate(_RESPONSIVENESS, seconds))
    finally:
        context.close()


def _call_times(runtime: Runtime, urls: dict[str, str], calls: int) -> dict[str, list[float]]:
    """Per-call times (ms) of the tiny model in each mode, measured side by side.

    Both sites are open at once in one fresh context and take turns, a batch of
    calls each, so that the host's load at any moment weighs on both modes alike.
    """
    context = runtime.browser.new_context()
    try:
        pages = {}
        for mode, url in urls.items():
            pages[mode] = context.new_page()
            _settled(pages[mode], url)
        per_batch = max(1, calls // _CALL_BATCHES)
        times: dict[str, list[float]] = {mode: [] for mode in urls}
        for batch in range(_CALL_BATCHES):
            for mode, page in pages.items():
                warm = 20 if batch == 0 else 2
                times[mode] += page.evaluate(_CALLS, [per_batch, warm])
        return times
    finally:
        context.close()


def site(runtime: Runtime, plan: Plan, rec: Recorder, say: Say,
         notes: dict[str, Any]) -> list[str]:
    """The site section (see the module's docstring); returns its detail rows."""
    with runtime.shared_folder() as (folder, prefix):
        base = runtime.server.url.rstrip("/") + prefix
        say("bench: site: building the worker-mode and main-thread sites")
        files = _build(folder / "work", folder / "worker", worker=True)
        _build(folder / "work", folder / "main", worker=False)
        urls = {"worker": base + "worker/", "main": base + "main/"}
        say(f"bench: site: {plan.site_reps} rounds of fresh contexts (first, second and "
            f"offline visit; Pyodide + numpy alone; {plan.site_seconds:g} s of back-to-back "
            "inference in worker and main-thread mode)")
        steps: dict[str, Callable[[], dict[str, Any]]] = {
            "visits": lambda: _visits(runtime, urls["worker"], files),
            "pyodide": lambda: cold_plain(runtime, "mode=pyodide"),
            "worker": lambda: _responsiveness(runtime, urls["worker"], plan.site_seconds),
            "main": lambda: _responsiveness(runtime, urls["main"], plan.site_seconds),
            "calls": lambda: _call_times(runtime, urls, plan.site_calls),
        }
        order = list(steps)
        requests: list[int] = []
        for i in range(plan.site_reps):
            shift = i % len(order)
            got = {name: steps[name]() for name in order[shift:] + order[:shift]}
            v, py, w, m = got["visits"], got["pyodide"], got["worker"], got["main"]
            calls = {mode: statistics.median(t) for mode, t in got["calls"].items()}
            means = {mode: statistics.fmean(t) for mode, t in got["calls"].items()}
            rec.add("site_cold_ratio", [v["first"] / py["ms"]])
            rec.add("site_warm_ratio", [v["second"] / v["first"]])
            rec.add("site_worker_long_tasks", [w["longTasks"]])
            rec.add("site_worker_max_frame_gap_ms", [w["maxGap"]])
            rec.add("site_worker_call_extra_ms", [calls["worker"] - calls["main"]])
            rec.add("site_first_visit_ms", [v["first"]])
            rec.add("site_second_visit_ms", [v["second"]])
            rec.add("site_offline_visit_ms", [v["offline"]])
            rec.add("site_pyodide_numpy_ms", [py["ms"]])
            rec.add("site_first_visit_bytes", [v["bytes"]])
            rec.add("site_main_thread_long_tasks", [m["longTasks"]])
            rec.add("site_main_thread_max_frame_gap_ms", [m["maxGap"]])
            rec.add("site_heavy_run_ms_worker", [w["runMs"]])
            rec.add("site_heavy_run_ms_main_thread", [m["runMs"]])
            rec.add("site_call_ms_worker", [calls["worker"]])
            rec.add("site_call_ms_main_thread", [calls["main"]])
            rec.add("site_worker_call_extra_mean_ms", [means["worker"] - means["main"]])
            rec.add("site_first_visit_from_snapshot", [int(v["first_boot"] == "snapshot")])
            rec.add("site_second_visit_from_snapshot", [int(v["second_boot"] == "snapshot")])
            if snapshot := by_name(files).get(_SNAPSHOT_FILE):
                rec.add("site_snapshot_shipped_mb", [snapshot["size"] / 1e6])
            rec.add("site_second_visit_kept_wheels",
                    [int((v["second_packages"] or {}).get("from") == "kept")])
            if (v["packages"] or {}).get("stored"):
                rec.add("site_kept_wheels_mb", [v["packages"]["bytes"] / 1e6])
            if v["snapshot"] and v["snapshot"].get("stored"):
                rec.add("site_snapshot_mb", [v["snapshot"]["bytes"] / 1e6])
                rec.add("site_snapshot_make_ms", [v["snapshot"]["ms"]])
            requests.append(len(v["second_requests"]))
            notes.setdefault("site", {})["second_visit_network_requests"] = v["second_requests"]
        notes.setdefault("site", {}).update({
            "model": f"{_LAYERS} x MatMul+Relu [{_BATCH}, {_WIDTH}] on wasm",
            "site_size_mb": sum(f["size"] for f in files.values()) / 1e6,
            "site_first_visit_mb": sum(f["size"] for f in files.values()
                                       if f["first_visit"]) / 1e6,
            "second_visit_network_requests_per_round": requests,
            "median_second_visit_requests": statistics.median(requests) if requests else None,
        })
    return ["site_first_visit_ms", "site_pyodide_numpy_ms", "site_second_visit_ms",
            "site_first_visit_from_snapshot", "site_second_visit_from_snapshot",
            "site_second_visit_kept_wheels", "site_kept_wheels_mb",
            "site_snapshot_shipped_mb", "site_snapshot_mb", "site_snapshot_make_ms",
            "site_offline_visit_ms", "site_first_visit_bytes", "site_main_thread_long_tasks",
            "site_main_thread_max_frame_gap_ms", "site_heavy_run_ms_worker",
            "site_heavy_run_ms_main_thread", "site_call_ms_worker", "site_call_ms_main_thread",
            "site_worker_call_extra_mean_ms"]
