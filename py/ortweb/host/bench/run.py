"""``run_bench``: the models written, the pages opened, the sections run, the result."""

from __future__ import annotations

import datetime
import json
import os
import platform
import shutil
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

from ..browser import Runtime
from . import sections as sec
from .engines import engines
from .figures import FIXED_KEYS, GOALS, SECTIONS, Recorder
from .harness import harness
from .large import large
from .models import folded_resnet50, unary_model
from .network import network
from .pages import bench_page
from .plan import Plan
from .site import site

__all__ = ["run_bench"]


def _versions(runtime: Runtime) -> dict[str, str]:
    import onnxruntime

    from ... import __version__

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
    rec = Recorder()
    details: list[str] = []
    notes: dict[str, Any] = {}
    tiny_n = 64
    need_resnet = ("bridge" in sections and "resnet50" in plan.bridge_models) or (
        "threads" in sections)
    with runtime.shared_folder() as (folder, prefix):
        # Imported here: the samples import onnx, which `ortweb`'s other commands never load.
        from ...testing.samples import matmul_relu_model

        (folder / "tiny.onnx").write_bytes(matmul_relu_model(tiny_n))
        (folder / "chain_a.onnx").write_bytes(unary_model("Relu", "x", "y"))
        (folder / "chain_b.onnx").write_bytes(unary_model("Sigmoid", "y", "z"))
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
        main = (bench_page(runtime, models, shapes, threads=1, warm_up_s=plan.warm_up_s)
                if page_sections else None)
        try:
            if main is not None and "bridge" in sections:
                details += sec.bridge(main, plan, rec, say)
            if main is not None and "transfer" in sections:
                details += sec.transfer(main, plan, rec, say)
            if main is not None and "chain" in sections:
                details += sec.chain(main, plan, rec, say)
            if main is not None and "threads" in sections:
                details += sec.threads_and_native(runtime, main, models, shapes, plan, rec, say,
                                                  notes)
        finally:
            if main is not None:
                main.close()
        if "cold" in sections:
            details += sec.cold(runtime, runtime.server.url.rstrip("/") + prefix + "tiny.onnx",
                                [1, tiny_n], plan, rec, say)
    if "large" in sections:
        details += large(runtime, plan, rec, say, notes)
    if "site" in sections:
        details += site(runtime, plan, rec, say, notes)
    if "harness" in sections:
        details += harness(plan, rec, say, runtime.browser.executable)
    if "engines" in sections:
        details += engines(runtime, plan, rec, say, notes)
    if "network" in sections:
        details += network(runtime, plan, rec, say, notes)
    meta = {
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": {"cpu_count": os.cpu_count(), "platform": platform.platform(),
                    "machine": platform.machine(),
                    "load_avg_1m": os.getloadavg()[0] if hasattr(os, "getloadavg") else None},
        "browser": f"Chromium {runtime.browser.version}",
        # Endpoint, browser and WebGPU adapter: a figure of SwiftShader is not one of a GPU.
        "where": runtime.where(),
        "versions": _versions(runtime),
        "command": command,
        "sections": list(sections),
        "wall_s": time.perf_counter() - t_start,
    }
    return {"meta": meta, "figures": rec.stats(FIXED_KEYS),
            "details": rec.stats(dict.fromkeys(d for d in details if d not in GOALS)),
            "notes": notes}
