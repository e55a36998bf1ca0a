"""The engines section: the same models on every engine that can run them, side by side.

One page holds a session of each model on each engine alone (``providers=[name]``,
no fallback). Per round, in rotating order of engines, each session runs ``k`` times
through ortweb (``await sess.run_async``) and ``k`` times through the engine's own
JS call on the very same session (ORT-web's ``session.run``, tract's worker
``predict`` message, wonnx's ``Session.run``), so the two differ in nothing but the
bridge. Then the ONNX node suite runs on each engine through the conformance
runner (``Plan.engines_node_filter`` narrows it).

Figures, per engine ``e`` (``wasm``, ``webgpu``, ``tract``, ``wonnx``):
``engine_<e>_<model>_ms`` (ortweb, per run); ``engine_<e>_bridge_ratio`` (ortweb /
the engine's own call, per round, on the ``cnn`` model; each model's in the
details); ``engine_<e>_bytes`` (the engine's files as served: ORT-web's build,
tractjs's worker, wonnx's JS and wasm); ``engine_<e>_node_pass`` (node cases
passed). An engine that cannot run a model records nothing for it, and its reason
goes to the notes. In the details: ``engine_<e>_call_ms``, what ortweb adds to each
call whatever the model (ortweb's ms minus the engine's own on ``tiny``, per round),
and ``engine_tract_worker_hop_ms``, a round trip of ``tiny``'s input to a worker that
only sends it back (plain JS): what running tract in its own worker costs per call.

Each side of a round runs a pair ``k`` times, ``k`` = ``Plan.engines_k`` or fewer for
a model whose run takes longer than :data:`ROUND_MS` / ``engines_k`` (at least 5), in
blocks of about :data:`BLOCK_MS` (one run at least), the two sides taking turns block
by block: the host's load changes within a round, and blocks this short see the same
load on both sides, where whole sides one after the other did not. The notes'
``engine_blocks`` give each pair's runs a side, runs a block and blocks a round.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Final

from ..browser import Runtime
from .figures import Recorder, alternate, ratios
from .models import engine_models
from .pages import bench_page, call
from .plan import Plan

__all__ = ["ENGINE_MODELS", "ENGINE_NAMES", "RATIO_MODEL", "engines"]

Say = Callable[[str], None]

#: The engines, by their provider names, in the default rule's order.
ENGINE_NAMES: Final = ("wasm", "webgpu", "tract", "wonnx")
#: The models every engine is tried on (see :func:`.models.engine_models`).
ENGINE_MODELS: Final = ("tiny", "conv", "cnn", "digits")
#: The model of the bridge-ratio figure: one that every engine runs and whose run
#: takes milliseconds, as an image model's does. On ``tiny``, ``conv`` and ``digits``
#: a wasm run takes 0.02-0.2 ms and the ratio mostly shows the fixed cost of a call
#: (``engine_<e>_call_ms``); their ratios are in the details.
RATIO_MODEL: Final = "cnn"
#: What one side of a round spends on a pair at most, roughly (see the module's doc).
ROUND_MS: Final = 1000.0
#: What one side's block of runs takes, roughly: long enough that the timer's
#: resolution and a block's own cost do not count, short against changes of load.
BLOCK_MS: Final = 20.0


def engines(runtime: Runtime, plan: Plan, rec: Recorder, say: Say,
            notes: dict[str, Any]) -> list[str]:
    """Run the section into ``rec``; returns its detail keys."""
    models, shapes = engine_models()
    details: list[str] = []
    skipped: dict[str, str] = {}
    with runtime.shared_folder() as (folder, prefix):
        for name, data in models.items():
            (folder / f"engine_{name}.onnx").write_bytes(data)
        page = bench_page(runtime, {n: prefix + f"engine_{n}.onnx" for n in models}, shapes,
                          threads=1, warm_up_s=plan.warm_up_s)
        try:
            ready: list[tuple[str, str]] = []
            #: Each pair's runs a side and runs a block.
            sizes: dict[tuple[str, str], tuple[int, int]] = {}
            for engine in ENGINE_NAMES:
                for model in ENGINE_MODELS:
                    opened = call(page, f"await bench_engine_open({engine!r}, {model!r})")
                    if "error" in opened:
                        skipped[f"{engine}/{model}"] = opened["error"]
                        say(f"bench: engines: {engine} cannot run {model}: {opened['error']}")
                        continue
                    if opened["provider"] != engine:
                        raise RuntimeError(f"{model} asked for {engine} alone and ran on "
                                           f"{opened['provider']}")
                    rec.samples[f"engine_{engine}_bytes"] = [float(opened["bytes"])]
                    notes.setdefault("engine_files", {})[engine] = opened["files"]
                    ready.append((engine, model))
                    run_ms = max(float(opened["run_ms"]), 1e-3)
                    k = min(plan.engines_k, max(5, round(ROUND_MS / run_ms)))
                    sizes[(engine, model)] = k, max(1, min(k, round(BLOCK_MS / run_ms)))
            say(f"bench: engines: {plan.engines_pairs} rounds on {len(ready)} engine/model "
                "pairs, ortweb against each engine's own JS call")
            py: dict[tuple[str, str], list[float]] = {pair: [] for pair in ready}
            js: dict[tuple[str, str], list[float]] = {pair: [] for pair in ready}
            hop: list[float] = []
            for i in range(plan.engines_pairs):
                shift = i % max(1, len(ready))
                for engine, model in ready[shift:] + ready[:shift]:
                    k, block = sizes[(engine, model)]
                    out = call(page, f"await bench_engine({engine!r}, {model!r}, {k}, "
                                     f"{alternate(i)!r}, {block})")
                    py[(engine, model)].append(out["py_ms"])
                    js[(engine, model)].append(out["js_ms"])
                    # The page's own count, the same every round.
                    notes.setdefault("engine_blocks", {})[f"{engine}/{model}"] = {
                        "runs": k, "block": block, "blocks": out["blocks"]}
                if ("tract", "tiny") in sizes:
                    hop.append(call(page, f"await bench_worker_hop('tiny', {plan.engines_k})"))
            if hop:
                rec.add("engine_tract_worker_hop_ms", hop)
                details.append("engine_tract_worker_hop_ms")
            for engine, model in ready:
                pair = (engine, model)
                per_round = ratios(py[pair], js[pair])
                rec.add(f"engine_{engine}_{model}_ms", py[pair])
                if model == RATIO_MODEL:
                    rec.add(f"engine_{engine}_bridge_ratio", per_round)
                rec.add(f"engine_{engine}_{model}_bridge_ratio", per_round)
                rec.add(f"engine_{engine}_{model}_plain_js_ms", js[pair])
                details += [f"engine_{engine}_{model}_bridge_ratio",
                            f"engine_{engine}_{model}_plain_js_ms"]
                if model == "tiny":
                    rec.add(f"engine_{engine}_call_ms",
                            [a - b for a, b in zip(py[pair], js[pair], strict=True)])
                    details.append(f"engine_{engine}_call_ms")
            call(page, "await bench_engine_close()")
        finally:
            page.close()
    notes["engine_skipped"] = skipped
    _node_suite(runtime, plan, rec, say, notes)
    return details


def _node_suite(runtime: Runtime, plan: Plan, rec: Recorder, say: Say,
                notes: dict[str, Any]) -> None:
    """``engine_<e>_node_pass``: the node suite (or the plan's part of it) per engine."""
    from ..conformance import Status, load_cases, run_conformance

    cases = load_cases(["node"], plan.engines_node_filter)
    say(f"bench: engines: {len(cases)} node cases on {', '.join(ENGINE_NAMES)}")
    results = run_conformance(runtime, cases, ENGINE_NAMES,
                              case_timeout=lambda ep: plan.engines_case_timeout,
                              log=lambda line: None)
    for engine, (per_case, seconds) in results.items():
        passed = sum(r.verdict.status is Status.PASS for r in per_case)
        rec.samples[f"engine_{engine}_node_pass"] = [float(passed)]
        notes.setdefault("engine_node_suite", {})[engine] = {
            "cases": len(per_case), "passed": passed, "seconds": round(seconds, 1),
            "filter": plan.engines_node_filter}
    say("bench: engines: node suite " + json.dumps(
        {e: notes["engine_node_suite"][e]["passed"] for e in results}))
