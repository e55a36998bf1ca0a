"""The bench's sections, each measuring its figures side by side with their anchors.

Each takes the recorder to add samples to and returns the names of its detail rows
(anchors and parts), in table order.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from ..browser import PyodidePage, Runtime
from .figures import Recorder, alternate, differences, gbps, ratios
from .models import folded_resnet50
from .pages import bench_page, call, cold_ortweb, cold_plain, native_block
from .plan import Plan

__all__ = ["bridge", "chain", "cold", "threads_and_native", "transfer"]

Say = Callable[[str], None]


def bridge(main: PyodidePage, plan: Plan, rec: Recorder, say: Say) -> list[str]:
    """``sess.run_async`` vs plain JS ``session.run`` on the same session, per model."""
    details: list[str] = []
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
            out = call(main, f"await bench_bridge({key!r}, {k}, {alternate(i)!r}, {extra!r})")
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
    return details


def transfer(main: PyodidePage, plan: Plan, rec: Recorder, say: Say) -> list[str]:
    """ortweb's own hop for a feed and an output vs a JS ``Float32Array.set``, per size."""
    details: list[str] = []
    for mb in plan.transfer_sizes:
        k = plan.transfer_k(mb)
        say(f"bench: transfer {mb} MiB: {plan.transfer_pairs} rounds of {k}")
        nbytes = mb * 1024 * 1024
        for i in range(plan.transfer_pairs):
            out = call(main, f"await bench_transfer({mb}, {k}, {alternate(i)!r})")
            rec.add(f"transfer_in_gbps_{mb}mb", [gbps(nbytes, out["in_ms"])])
            rec.add(f"transfer_out_gbps_{mb}mb", [gbps(nbytes, out["out_ms"])])
            rec.add(f"js_set_gbps_{mb}mb", [gbps(nbytes, out["set_ms"])])
        details.append(f"js_set_gbps_{mb}mb")
        if mb not in (16, 64):
            details += [f"transfer_in_gbps_{mb}mb", f"transfer_out_gbps_{mb}mb"]
    return details


def chain(main: PyodidePage, plan: Plan, rec: Recorder, say: Say) -> list[str]:
    """Two WebGPU models chained on the GPU vs through the CPU, ortweb and plain JS."""
    details: list[str] = []
    for mb in plan.chain_sizes:
        k = plan.chain_k.get(mb, 1)
        say(f"bench: GPU chain {mb} MiB: {plan.chain_pairs} rounds of {k} "
            "(first round compiles shaders)")
        for i in range(plan.chain_pairs):
            out = call(main, f"await bench_chain({mb}, {k}, {alternate(i)!r})")
            rec.add(f"gpu_chain_speedup_{mb}mb", [out["py_cpu_ms"] / out["py_gpu_ms"]])
            rec.add(f"plain_js_chain_speedup_{mb}mb", [out["js_cpu_ms"] / out["js_gpu_ms"]])
            rec.add(f"ortweb_chain_gpu_ms_{mb}mb", [out["py_gpu_ms"]])
            rec.add(f"plain_js_chain_gpu_ms_{mb}mb", [out["js_gpu_ms"]])
            rec.add(f"ortweb_chain_cpu_ms_{mb}mb", [out["py_cpu_ms"]])
            rec.add(f"plain_js_chain_cpu_ms_{mb}mb", [out["js_cpu_ms"]])
        details += [f"plain_js_chain_speedup_{mb}mb", f"ortweb_chain_gpu_ms_{mb}mb",
                    f"plain_js_chain_gpu_ms_{mb}mb", f"ortweb_chain_cpu_ms_{mb}mb",
                    f"plain_js_chain_cpu_ms_{mb}mb"]
    return details


def threads_and_native(
    runtime: Runtime, main: PyodidePage, models: Mapping[str, str],
    shapes: Mapping[str, Any], plan: Plan, rec: Recorder, say: Say,
    notes: dict[str, Any],
) -> list[str]:
    """Per round, in rotating order: resnet50 through ortweb in the 1-thread page and
    in a 2-thread page, plain JS in the 1-thread page, native onnxruntime 1 thread."""
    import onnxruntime as ort

    say("bench: threads (second page, 2 threads) and native onnxruntime: "
        f"{plan.threads_reps} rounds of {plan.threads_k} runs")
    two = bench_page(runtime, {"resnet50": models["resnet50"]}, shapes, threads=2,
                     warm_up_s=plan.warm_up_s)
    try:
        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        native = ort.InferenceSession(str(folded_resnet50()), options,
                                      providers=["CPUExecutionProvider"])
        x = np.random.default_rng(0).standard_normal((1, 3, 224, 224)).astype(np.float32)
        native_block(native, x, 1)
        k = plan.threads_k
        blocks: dict[str, Callable[[], float]] = {
            "ortweb_ms_resnet50_1thread":
                lambda: call(main, f"await bench_runs('resnet50', {k}, False)"),
            "ortweb_ms_resnet50_2threads":
                lambda: call(two, f"await bench_runs('resnet50', {k}, False)"),
            "plain_js_ms_resnet50_1thread":
                lambda: call(main, f"await bench_runs('resnet50', {k}, True)"),
            # The engine's own speed-up, in the same two pages: what ortweb can reach.
            "plain_js_ms_resnet50_2threads":
                lambda: call(two, f"await bench_runs('resnet50', {k}, True)"),
            "native_ms_resnet50_1thread": lambda: native_block(native, x, k),
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
        notes["threads_used"] = {"1-thread page": call(main, "await bench_runtime_info()"),
                                 "2-thread page": call(two, "await bench_runtime_info()")}
    finally:
        two.close()
    return ["plain_js_threads_speedup_resnet50",
            "ortweb_ms_resnet50_1thread", "ortweb_ms_resnet50_2threads",
            "plain_js_ms_resnet50_1thread", "plain_js_ms_resnet50_2threads",
            "native_ms_resnet50_1thread"]


def cold(runtime: Runtime, model_url: str, dims: list[int], plan: Plan, rec: Recorder,
         say: Say) -> list[str]:
    """Per round, in rotating order, three fresh contexts: ortweb's page to first
    inference, a page loading Pyodide+numpy alone, a page running ORT-web alone."""
    say(f"bench: cold start: {plan.cold_reps} rounds of three fresh browser contexts")
    dims_q = ",".join(str(d) for d in dims)
    steps: dict[str, Callable[[], dict[str, Any]]] = {
        "ortweb": lambda: cold_ortweb(runtime, model_url, dims),
        "pyodide": lambda: cold_plain(runtime, "mode=pyodide"),
        "ort": lambda: cold_plain(runtime, f"mode=ort&model={model_url}&dims={dims_q}"),
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
    return ["cold_ortweb_ms", "cold_pyodide_numpy_ms", "cold_plain_ort_ms",
            "cold_ortweb_mb", "cold_plain_mb", "cold_ortweb_python_entered_ms",
            "cold_numpy_ortweb_import_ms", "cold_ortweb_session_ms",
            "cold_ortweb_first_run_ms", "cold_plain_ort_session_ms"]
