"""``ortweb bench``: speed figures, each measured side by side with its anchor.

This machine is noisy (two shared cores), so no figure is an absolute time taken
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
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import shutil
import statistics
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..testing.samples import matmul_relu_model
from . import inpage
from .browser import PyodidePage, Runtime

__all__ = [
    "FIXED_KEYS",
    "GOALS",
    "SECTIONS",
    "Goal",
    "Plan",
    "alternate",
    "differences",
    "folded_resnet50",
    "ratios",
    "render_markdown",
    "render_table",
    "run_bench",
    "summarize",
    "verdict",
]

SECTIONS = ("bridge", "transfer", "chain", "threads", "cold")


@dataclass(frozen=True)
class Goal:
    """A figure's goal from issue 9: ``op`` is ``">="``, ``"<="`` or ``""`` (context)."""

    label: str
    unit: str
    op: str = ""
    target: float = 0.0

    def text(self) -> str:
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
}
FIXED_KEYS = tuple(GOALS)


# -- statistics -------------------------------------------------------------------


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


# -- rendering ----------------------------------------------------------------------


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3g}" if abs(value) < 1000 else f"{value:.0f}"
    return str(value)


def _rows(result: Mapping[str, Any]) -> list[list[str]]:
    rows = []
    for key in FIXED_KEYS:
        s = result["figures"].get(key) or summarize([])
        goal = GOALS[key]
        rows.append([key, _fmt(s["median"]), _fmt(s["min"]), _fmt(s["max"]), str(s["n"]),
                     goal.unit, goal.text(), verdict(key, s)])
    return rows


_HEAD = ["figure", "median", "min", "max", "n", "unit", "goal", "verdict"]


def _detail_rows(result: Mapping[str, Any]) -> list[list[str]]:
    return [[key, _fmt(s["median"]), _fmt(s["min"]), _fmt(s["max"]), str(s["n"])]
            for key, s in result.get("details", {}).items()]


def render_table(result: Mapping[str, Any]) -> str:
    """The fixed figures with their goals as a plain-text table, then the details."""
    def block(head: list[str], rows: list[list[str]]) -> list[str]:
        widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
        return ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
                for r in [head, *rows]]

    lines = block(_HEAD, _rows(result))
    details = _detail_rows(result)
    if details:
        lines += ["", "details (anchors and parts):"]
        lines += block(["detail", "median", "min", "max", "n"], details)
    return "\n".join(lines)


def render_markdown(result: Mapping[str, Any]) -> str:
    """The same as :func:`render_table`, as Markdown tables with a header of facts."""
    meta = result["meta"]
    out = [
        f"Date: {meta['date']}; machine: {meta['machine']['platform']}, "
        f"{meta['machine']['cpu_count']} CPUs; {meta['browser']}; "
        + ", ".join(f"{k} {v}" for k, v in meta["versions"].items())
        + f"; command: `{meta['command']}` ({meta['wall_s']:.0f} s).",
        "",
        "| " + " | ".join(_HEAD) + " |",
        "|" + "---|" * len(_HEAD),
    ]
    out += ["| " + " | ".join(r) + " |" for r in _rows(result)]
    details = _detail_rows(result)
    if details:
        out += ["", "| detail | median | min | max | n |", "|---|---|---|---|---|"]
        out += ["| " + " | ".join(r) + " |" for r in details]
    return "\n".join(out) + "\n"


# -- models ---------------------------------------------------------------------------


def _cache_dir() -> Path:
    from .build.assets import find_assets

    return find_assets().root / "build" / "bench"


def folded_resnet50(cache: Path | None = None) -> Path:
    """resnet50 from the ``onnx`` wheel's light models with its weights folded in.

    The light model makes its weights with ConstantOfShape at run time; onnxruntime's
    basic (ONNX-only) graph optimisations fold them into real-size initializers
    (about 100 MB), so the page runs the real model. Cached under ``build/bench/``.
    """
    import onnx
    import onnxruntime as ort

    src = Path(onnx.__file__).parent / "backend/test/data/light/light_resnet50.onnx"
    cache = cache or _cache_dir()
    out = cache / f"resnet50_folded_v2_ort{ort.__version__}.onnx"
    if not out.exists():
        cache.mkdir(parents=True, exist_ok=True)
        tmp = out.with_suffix(".tmp")
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
        options.optimized_model_filepath = str(tmp)
        options.log_severity_level = 3
        ort.InferenceSession(str(src), options, providers=["CPUExecutionProvider"])
        # Folding leaves the shape inputs of the ConstantOfShape nodes it removed as
        # graph inputs (and, IR 3, every initializer too), which native onnxruntime
        # then demands in the feed: keep only the image input, as IR 4 allows.
        model = onnx.load(str(tmp))
        inits = {i.name for i in model.graph.initializer}
        used = {name for node in model.graph.node for name in node.input}
        keep = [i for i in model.graph.input if i.name in used and i.name not in inits]
        del model.graph.input[:]
        model.graph.input.extend(keep)
        model.ir_version = max(model.ir_version, 4)
        onnx.save(model, str(tmp))
        tmp.replace(out)
    return out


def _unary_model(op: str, name_in: str, name_out: str) -> bytes:
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node(op, [name_in], [name_out])], f"bench_{op.lower()}",
        [helper.make_tensor_value_info(name_in, TensorProto.FLOAT, [1, "n"])],
        [helper.make_tensor_value_info(name_out, TensorProto.FLOAT, [1, "n"])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return bytes(model.SerializeToString())


# -- the run ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Plan:
    """How many interleaved pairs and runs per block each section takes."""

    bridge_models: tuple[str, ...] = ("tiny", "resnet50")
    bridge_pairs: int = 8
    tiny_k: int = 200
    resnet_k: int = 2
    #: resnet50's ratio is ~1.001 in truth (the bridge adds 0.2-0.3 ms to a 450 ms
    #: run) but single rounds spread 0.82-1.22 here: more rounds steady the median.
    resnet_pairs: int = 16
    transfer_sizes: tuple[int, ...] = (1, 16, 64)
    transfer_pairs: int = 8
    chain_sizes: tuple[int, ...] = (1, 16)
    chain_pairs: int = 5
    chain_k: Mapping[int, int] = field(default_factory=lambda: {1: 4, 16: 2})
    threads_reps: int = 6
    threads_k: int = 2
    cold_reps: int = 4

    @classmethod
    def quick(cls) -> Plan:
        """Under 5 minutes on two shared cores."""
        return cls(bridge_pairs=5, tiny_k=100, resnet_k=2, resnet_pairs=6, transfer_pairs=4,
                   chain_pairs=3, chain_k={1: 2, 16: 1}, threads_reps=3, threads_k=2,
                   cold_reps=2)

    def transfer_k(self, mb: int) -> int:
        return max(2, 32 // mb)


class _Recorder:
    """Samples by key; turned into ``{median, min, max, n}`` at the end."""

    def __init__(self) -> None:
        self.samples: dict[str, list[float]] = {}

    def add(self, key: str, values: Iterable[float]) -> None:
        self.samples.setdefault(key, []).extend(values)

    def stats(self, keys: Iterable[str]) -> dict[str, dict[str, Any]]:
        return {k: summarize(self.samples.get(k, [])) for k in keys}


def _call(page: PyodidePage, expr: str) -> Any:
    return page.run_json(expr, filename="<ortweb bench>")


def _bench_page(runtime: Runtime, models: Mapping[str, str], shapes: Mapping[str, Any],
                threads: int) -> PyodidePage:
    page = runtime.new_page()
    try:
        for name, url in models.items():
            page.write_file(url, f"/tmp/bench/{name}.onnx")
        args = {"threads": threads, "shapes": dict(shapes),
                "models": {name: f"/tmp/bench/{name}.onnx" for name in models}}
        _call(page, f"ORTWEB_ARGS = {json.dumps(json.dumps(args))}\n"
              + inpage.source("bench_page"))
    except BaseException:
        page.close()
        raise
    return page


def _native_block(sess: Any, x: np.ndarray, k: int) -> float:
    name = sess.get_inputs()[0].name
    t0 = time.perf_counter()
    for _ in range(k):
        sess.run(None, {name: x})
    return (time.perf_counter() - t0) * 1000 / k


def _cold_plain(runtime: Runtime, query: str) -> dict[str, Any]:
    # No router: the anchor page loads as in a plain browser, with nothing in between.
    context = runtime.browser.new_context()
    try:
        page = context.new_page()
        page.goto(runtime.server.url.rstrip("/") + "/bench_plain.html?" + query)
        out = page.evaluate("() => window.benchResult")
    finally:
        context.close()
    if not out.get("ok"):
        raise RuntimeError(f"plain cold-start page failed: {out.get('message')}")
    return dict(out)


def _cold_ortweb(runtime: Runtime, model_url: str, dims: list[int]) -> dict[str, Any]:
    with runtime.new_page() as page:
        args = {"model": model_url, "dims": dims}
        return dict(page.run_json(f"ORTWEB_ARGS = {json.dumps(json.dumps(args))}\n"
                                  + inpage.source("bench_cold"), filename="<bench cold>"))


def _versions(runtime: Runtime) -> dict[str, str]:
    import onnxruntime

    from .. import __version__

    lock = json.loads((runtime.assets.pyodide / "pyodide-lock.official.json").read_text())
    ort_pkg = json.loads((runtime.assets.ort_package / "package.json").read_text())
    return {"ortweb": __version__, "pyodide": str(lock["info"]["version"]),
            "onnxruntime-web": str(ort_pkg["version"]),
            "onnxruntime (native)": onnxruntime.__version__}


def run_bench(
    runtime: Runtime,
    plan: Plan | None = None,
    sections: Sequence[str] = SECTIONS,
    log: Callable[[str], None] | None = None,
    command: str = "ortweb bench",
) -> dict[str, Any]:
    """Run the benchmark sections; returns the JSON-able result.

    Returns
    -------
    dict
        ``meta`` (machine, browser, versions, date, command, wall time), ``figures``
        (every key of :data:`FIXED_KEYS` → ``{median, min, max, n}``; ``n`` is 0 for
        sections not run), ``details`` (anchors and parts, same form) and ``notes``.
    """
    plan = plan or Plan()
    say = log or (lambda line: print(line, file=sys.stderr, flush=True))
    unknown = set(sections) - set(SECTIONS)
    if unknown:
        raise ValueError(f"unknown bench sections {sorted(unknown)}; known: {SECTIONS}")
    t_start = time.perf_counter()
    rec = _Recorder()
    details: list[str] = []
    notes: dict[str, Any] = {}
    tiny_n = 64
    need_resnet = ("bridge" in sections and "resnet50" in plan.bridge_models) or (
        "threads" in sections)
    with runtime.shared_folder() as (folder, prefix):
        (folder / "tiny.onnx").write_bytes(matmul_relu_model(tiny_n))
        (folder / "chain_a.onnx").write_bytes(_unary_model("Relu", "x", "y"))
        (folder / "chain_b.onnx").write_bytes(_unary_model("Sigmoid", "y", "z"))
        models = {"tiny": prefix + "tiny.onnx"}
        shapes: dict[str, list[int]] = {"tiny": [1, tiny_n], "resnet50": [1, 3, 224, 224]}
        if need_resnet:
            say("bench: folding resnet50's weights (cached in build/bench/)")
            resnet = folded_resnet50()
            shutil.copyfile(resnet, folder / "resnet50.onnx")
            models["resnet50"] = prefix + "resnet50.onnx"
        if "chain" in sections:
            models.update(chain_a=prefix + "chain_a.onnx", chain_b=prefix + "chain_b.onnx")
        page_sections = {"bridge", "transfer", "chain", "threads"} & set(sections)
        main = _bench_page(runtime, models, shapes, threads=1) if page_sections else None
        try:
            if main is not None and "bridge" in sections:
                for key in plan.bridge_models:
                    k = plan.tiny_k if key == "tiny" else plan.resnet_k
                    pairs = plan.resnet_pairs if key == "resnet50" else plan.bridge_pairs
                    say(f"bench: bridge overhead, {key}: {pairs} pairs of {k} runs")
                    # On the tiny model also the sync API and one bare turn of
                    # Pyodide's event loop (what awaiting any JS promise adds; a
                    # bridge call skips it), which also shows how fast the machine is.
                    extra = key == "tiny"
                    py, js, sync, turn = [], [], [], []
                    for i in range(pairs):
                        out = _call(main, f"await bench_bridge({key!r}, {k}, "
                                          f"{alternate(i)!r}, {extra!r})")
                        py.append(out["py_ms"])
                        js.append(out["js_ms"])
                        if extra:
                            sync.append(out["sync_ms"])
                            turn.append(out["turn_ms"])
                    rec.add(f"bridge_ratio_{key}", ratios(py, js))
                    rec.add(f"bridge_extra_ms_{key}", differences(py, js))
                    rec.add(f"ortweb_run_ms_{key}", py)
                    rec.add(f"plain_js_run_ms_{key}", js)
                    details += [f"bridge_ratio_{key}", f"bridge_extra_ms_{key}",
                                f"ortweb_run_ms_{key}", f"plain_js_run_ms_{key}"]
                    if extra:
                        rec.add(f"bridge_extra_ms_{key}_sync", differences(sync, js))
                        rec.add(f"ortweb_sync_run_ms_{key}", sync)
                        rec.add("pyodide_event_loop_turn_ms", turn)
                        details += [f"bridge_extra_ms_{key}_sync", f"ortweb_sync_run_ms_{key}",
                                    "pyodide_event_loop_turn_ms"]
            if main is not None and "transfer" in sections:
                for mb in plan.transfer_sizes:
                    k = plan.transfer_k(mb)
                    say(f"bench: transfer {mb} MiB: {plan.transfer_pairs} rounds of {k}")
                    nbytes = mb * 1024 * 1024
                    for i in range(plan.transfer_pairs):
                        out = _call(main, f"await bench_transfer({mb}, {k}, {alternate(i)!r})")
                        rec.add(f"transfer_in_gbps_{mb}mb", [gbps(nbytes, out["in_ms"])])
                        rec.add(f"transfer_out_gbps_{mb}mb", [gbps(nbytes, out["out_ms"])])
                        rec.add(f"js_set_gbps_{mb}mb", [gbps(nbytes, out["set_ms"])])
                    details.append(f"js_set_gbps_{mb}mb")
                    if mb not in (16, 64):
                        details += [f"transfer_in_gbps_{mb}mb", f"transfer_out_gbps_{mb}mb"]
            if main is not None and "chain" in sections:
                for mb in plan.chain_sizes:
                    k = plan.chain_k.get(mb, 1)
                    say(f"bench: GPU chain {mb} MiB: {plan.chain_pairs} rounds of {k} "
                        "(first round compiles shaders)")
                    for i in range(plan.chain_pairs):
                        out = _call(main, f"await bench_chain({mb}, {k}, {alternate(i)!r})")
                        rec.add(f"gpu_chain_speedup_{mb}mb",
                                [out["py_cpu_ms"] / out["py_gpu_ms"]])
                        rec.add(f"plain_js_chain_speedup_{mb}mb",
                                [out["js_cpu_ms"] / out["js_gpu_ms"]])
                        rec.add(f"ortweb_chain_gpu_ms_{mb}mb", [out["py_gpu_ms"]])
                        rec.add(f"plain_js_chain_gpu_ms_{mb}mb", [out["js_gpu_ms"]])
                        rec.add(f"ortweb_chain_cpu_ms_{mb}mb", [out["py_cpu_ms"]])
                        rec.add(f"plain_js_chain_cpu_ms_{mb}mb", [out["js_cpu_ms"]])
                    details += [f"plain_js_chain_speedup_{mb}mb", f"ortweb_chain_gpu_ms_{mb}mb",
                                f"plain_js_chain_gpu_ms_{mb}mb", f"ortweb_chain_cpu_ms_{mb}mb",
                                f"plain_js_chain_cpu_ms_{mb}mb"]
            if main is not None and "threads" in sections:
                _threads_and_native(runtime, main, models, shapes, plan, rec, say, notes)
                details += ["plain_js_threads_speedup_resnet50",
                            "ortweb_ms_resnet50_1thread", "ortweb_ms_resnet50_2threads",
                            "plain_js_ms_resnet50_1thread", "plain_js_ms_resnet50_2threads",
                            "native_ms_resnet50_1thread"]
        finally:
            if main is not None:
                main.close()
        if "cold" in sections:
            _cold(runtime, runtime.server.url.rstrip("/") + prefix + "tiny.onnx", [1, tiny_n],
                  plan, rec, say)
            details += ["cold_ortweb_ms", "cold_pyodide_numpy_ms", "cold_plain_ort_ms",
                        "cold_ortweb_mb", "cold_plain_mb", "cold_ortweb_python_entered_ms",
                        "cold_numpy_ortweb_import_ms", "cold_ortweb_session_ms",
                        "cold_ortweb_first_run_ms", "cold_plain_ort_session_ms"]
    meta = {
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": {"cpu_count": os.cpu_count(), "platform": platform.platform(),
                    "machine": platform.machine(),
                    "load_avg_1m": os.getloadavg()[0] if hasattr(os, "getloadavg") else None},
        "browser": f"Chromium {runtime.browser.version}",
        "versions": _versions(runtime),
        "command": command,
        "sections": list(sections),
        "wall_s": time.perf_counter() - t_start,
    }
    return {"meta": meta, "figures": rec.stats(FIXED_KEYS),
            "details": rec.stats(dict.fromkeys(d for d in details if d not in GOALS)),
            "notes": notes}


def _threads_and_native(
    runtime: Runtime, main: PyodidePage, models: Mapping[str, str],
    shapes: Mapping[str, Any], plan: Plan, rec: _Recorder, say: Callable[[str], None],
    notes: dict[str, Any],
) -> None:
    """Per round, in rotating order: resnet50 through ortweb in the 1-thread page and
    in a 2-thread page, plain JS in the 1-thread page, native onnxruntime 1 thread."""
    import onnxruntime as ort

    say("bench: threads (second page, 2 threads) and native onnxruntime: "
        f"{plan.threads_reps} rounds of {plan.threads_k} runs")
    two = _bench_page(runtime, {"resnet50": models["resnet50"]}, shapes, threads=2)
    try:
        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        native = ort.InferenceSession(str(folded_resnet50()), options,
                                      providers=["CPUExecutionProvider"])
        x = np.random.default_rng(0).standard_normal((1, 3, 224, 224)).astype(np.float32)
        _native_block(native, x, 1)
        k = plan.threads_k
        blocks: dict[str, Callable[[], float]] = {
            "ortweb_ms_resnet50_1thread":
                lambda: _call(main, f"await bench_runs('resnet50', {k}, False)"),
            "ortweb_ms_resnet50_2threads":
                lambda: _call(two, f"await bench_runs('resnet50', {k}, False)"),
            "plain_js_ms_resnet50_1thread":
                lambda: _call(main, f"await bench_runs('resnet50', {k}, True)"),
            # The engine's own speed-up, in the same two pages: what ortweb can reach.
            "plain_js_ms_resnet50_2threads":
                lambda: _call(two, f"await bench_runs('resnet50', {k}, True)"),
            "native_ms_resnet50_1thread": lambda: _native_block(native, x, k),
        }
        for name in ("ortweb_ms_resnet50_2threads", "plain_js_ms_resnet50_1thread",
                     "plain_js_ms_resnet50_2threads"):
            blocks[name]()  # warm-up: each session's first run
        order = list(blocks)
        for i in range(plan.threads_reps):
            shift = i % len(order)
            got = {name: blocks[name]() for name in order[shift:] + order[:shift]}
            for name, ms in got.items():
                rec.add(name, [ms])
            rec.add("threads_speedup_resnet50", [got["ortweb_ms_resnet50_1thread"]
                                                 / got["ortweb_ms_resnet50_2threads"]])
            rec.add("plain_js_threads_speedup_resnet50", [
                got["plain_js_ms_resnet50_1thread"] / got["plain_js_ms_resnet50_2threads"]])
            rec.add("web_vs_native_resnet50", [got["plain_js_ms_resnet50_1thread"]
                                               / got["native_ms_resnet50_1thread"]])
        notes["threads_used"] = {"1-thread page": _call(main, "await bench_runtime_info()"),
                                 "2-thread page": _call(two, "await bench_runtime_info()")}
    finally:
        two.close()


def _cold(runtime: Runtime, model_url: str, dims: list[int], plan: Plan, rec: _Recorder,
          say: Callable[[str], None]) -> None:
    """Per round, in rotating order, three fresh contexts: ortweb's page to first
    inference, a page loading Pyodide+numpy alone, a page running ORT-web alone."""
    say(f"bench: cold start: {plan.cold_reps} rounds of three fresh browser contexts")
    dims_q = ",".join(str(d) for d in dims)
    steps: dict[str, Callable[[], dict[str, Any]]] = {
        "ortweb": lambda: _cold_ortweb(runtime, model_url, dims),
        "pyodide": lambda: _cold_plain(runtime, "mode=pyodide"),
        "ort": lambda: _cold_plain(runtime, f"mode=ort&model={model_url}&dims={dims_q}"),
    }
    order = list(steps)
    for i in range(plan.cold_reps):
        got = {name: steps[name]() for name in order[i % 3:] + order[:i % 3]}
        ow, py, js = got["ortweb"], got["pyodide"], got["ort"]
        rec.add("cold_start_ratio", [ow["ms"] / (py["ms"] + js["ms"])])
        rec.add("cold_ortweb_ms", [ow["ms"]])
        rec.add("cold_pyodide_numpy_ms", [py["ms"]])
        rec.add("cold_plain_ort_ms", [js["ms"]])
        rec.add("cold_ortweb_mb", [ow["bytes"] / 1e6])
        rec.add("cold_plain_mb", [(py["bytes"] + js["bytes"]) / 1e6])
        m = ow["marks"]
        rec.add("cold_ortweb_python_entered_ms", [m["python_entered"]])
        rec.add("cold_numpy_ortweb_import_ms", [m["ortweb_imported"] - m["python_entered"]])
        rec.add("cold_ortweb_session_ms", [m["session_created"] - m["ortweb_imported"]])
        rec.add("cold_ortweb_first_run_ms", [m["first_run"] - m["session_created"]])
        rec.add("cold_plain_ort_session_ms",
                [js["marks"]["session_created"] - js["marks"]["ort_imported"]])


def write_outputs(result: Mapping[str, Any], json_out: Path | None,
                  markdown_out: Path | None) -> None:
    """Write the JSON and/or Markdown report (folders created as needed)."""
    if json_out is not None:
        json_out.parent.mkdir(parents=True, exist_ok=True)
        json_out.write_text(json.dumps(result, indent=2) + "\n")
    if markdown_out is not None:
        markdown_out.parent.mkdir(parents=True, exist_ok=True)
        markdown_out.write_text(render_markdown(result))
