"""``ortweb bench`` end to end on a very small plan: the report's form, sane values.

Speed goals live in the benchmark itself, never in timed tests: this only checks
that the sections run, pair up and produce finite figures under the fixed keys.
"""

from __future__ import annotations

import json
import math

import pytest

from ortweb.host import bench
from versions import ORT_WEB


@pytest.mark.browser
def test_small_bench_reports_every_fixed_key(ortweb_runtime, tmp_path) -> None:
    # A short warm-up: the test checks the report's shape, not its figures.
    plan = bench.Plan(bridge_models=("tiny",), bridge_pairs=2, tiny_k=5,
                      transfer_sizes=(16,), transfer_pairs=2, warm_up_s=0.1)
    result = bench.run_bench(ortweb_runtime, plan, sections=["bridge", "transfer"], log=print)
    bench.write_outputs(result, tmp_path / "r.json", tmp_path / "r.md")
    data = json.loads((tmp_path / "r.json").read_text())

    assert set(bench.FIXED_KEYS) <= set(data["figures"])
    for stats in data["figures"].values():
        assert set(stats) == {"median", "min", "max", "n"}
    meta = data["meta"]
    assert meta["machine"]["cpu_count"] >= 1 and meta["browser"].startswith("Chromium")
    assert meta["versions"]["pyodide"] == "0.27.7"
    assert meta["versions"]["onnxruntime-web"] == ORT_WEB

    extra = data["figures"]["bridge_extra_ms_tiny"]
    assert extra["n"] == 2 and extra["min"] <= extra["median"] <= extra["max"]
    # Per-call figures in milliseconds: finite, and a tiny model is not seconds.
    assert math.isfinite(extra["median"]) and -5 < extra["median"] < 500
    assert 0 < data["details"]["plain_js_run_ms_tiny"]["median"] < 500
    # The sync API and a bare event-loop turn are measured in the same rounds.
    assert data["details"]["bridge_extra_ms_tiny_sync"]["n"] == 2
    assert 0 < data["details"]["pyodide_event_loop_turn_ms"]["median"] < 100
    for key in ("transfer_in_gbps_16mb", "transfer_out_gbps_16mb"):
        s = data["figures"][key]
        assert s["n"] == 2 and 0.01 < s["median"] < 1000, (key, s)
    assert data["details"]["js_set_gbps_16mb"]["n"] == 2
    # Sections not run say so rather than inventing a figure.
    assert data["figures"]["cold_start_ratio"]["n"] == 0
    assert bench.verdict("cold_start_ratio", data["figures"]["cold_start_ratio"]) == "not run"
    table = bench.render_table(data)
    assert all(key in table for key in bench.FIXED_KEYS)


@pytest.mark.browser
def test_large_section_on_a_small_model(ortweb_runtime) -> None:
    """The large-model section's form on 64 MiB of weights, one round: every side
    loads, ratios pair up, peaks come from the renderer and hold the weights."""
    plan = bench.Plan(large_mib=64, large_reps=1, large_webgpu=False, large_over2g_mib=0)
    data = bench.run_bench(ortweb_runtime, plan, sections=["large"], log=print)
    figures, details = data["figures"], data["details"]
    for key in ("large_load_ratio", "large_peak_mem_ratio"):
        s = figures[key]
        assert s["n"] == 1 and 0.2 < s["median"] < 5, (key, s)
    for side in ("plain", "ortweb_url", "ortweb_path", "ortweb_url_nocache"):
        assert 0 < details[f"large_{side}_load_ms"]["median"] < 60_000
        # The renderer held the 64 MiB of weights (at least once) while loading.
        assert details[f"large_{side}_peak_mb"]["median"] > 64 * 1.048, side
    # By URL, ORT-web fetched the data itself: Pyodide's heap did not take 64 MiB.
    assert details["large_ortweb_url_pyodide_heap_growth_mb"]["median"] < 32
    # The second load came from the file cache, without a request for the model.
    warm = figures["large_warm_ratio"]
    assert warm["n"] == 1 and 0 < warm["median"] < 1, (warm, data["notes"])


@pytest.mark.browser
def test_site_section_one_round(ortweb_runtime) -> None:
    """The site section's form, one short round: every figure and detail is there,
    the second visit reached the server only for the manifest (and the service worker's
    update check), the main thread blocked where
    the worker did not."""
    plan = bench.Plan(site_reps=1, site_seconds=3.0, site_calls=50)
    data = bench.run_bench(ortweb_runtime, plan, sections=["site"], log=print)
    figures, details, notes = data["figures"], data["details"], data["notes"]["site"]
    for key in ("site_cold_ratio", "site_warm_ratio", "site_worker_long_tasks",
                "site_worker_max_frame_gap_ms", "site_worker_call_extra_ms"):
        assert figures[key]["n"] == 1, key
    assert 0.2 < figures["site_cold_ratio"]["median"] < 5
    assert 0.05 < figures["site_warm_ratio"]["median"] < 5
    assert details["site_offline_visit_ms"]["median"] > 0
    # The first visit boots as usual; the second from the snapshot the build ships.
    assert details["site_first_visit_from_snapshot"]["median"] == 0
    assert details["site_second_visit_from_snapshot"]["median"] == 1
    # The second visit wrote the wheels the first kept unpacked.
    assert details["site_second_visit_kept_wheels"]["median"] == 1
    assert details["site_kept_wheels_mb"]["median"] > 5
    assert 1 < details["site_snapshot_shipped_mb"]["median"] < 20
    # What a first visit downloads is what the manifest says it needs.
    assert notes["site_first_visit_mb"] < notes["site_size_mb"] - 5  # no snapshot, bytecode
    assert details["site_first_visit_bytes"]["median"] == pytest.approx(
        notes["site_first_visit_mb"] * 1e6, rel=0.05)
    # What reached the server: the service worker's manifest check, and at most the
    # browser's own update check of the service worker's script.
    reached = [u.rsplit("/", 1)[1] for u in notes["second_visit_network_requests"]]
    assert "ortweb-manifest.json" in reached
    assert set(reached) <= {"ortweb-manifest.json", "ortweb-sw.js"}, reached
    assert len(reached) == len(set(reached)), reached
    # On the main thread no frame is drawn while a run computes (whether a run is a
    # long task, over 50 ms, depends on the machine's speed).
    assert (details["site_main_thread_max_frame_gap_ms"]["median"]
            >= 0.8 * details["site_heavy_run_ms_main_thread"]["median"])
    assert details["site_heavy_run_ms_worker"]["median"] > 5
    # Calls of the tiny model are timed in both modes, side by side: the figure is the
    # difference of their medians.
    calls = {m: details[f"site_call_ms_{m}"]["median"] for m in ("worker", "main_thread")}
    assert all(0 < ms < 100 for ms in calls.values()), calls
    assert figures["site_worker_call_extra_ms"]["median"] == pytest.approx(
        calls["worker"] - calls["main_thread"])
    assert details["site_worker_call_extra_mean_ms"]["n"] == 1


@pytest.mark.browser
def test_timed_pages_go_unrouted_like_their_anchors(ortweb_runtime) -> None:
    """The bench times ortweb's pages against plain pages that no router sees
    (Playwright's interception slows big downloads): an unrouted page boots and
    runs with nothing passing the router, a routed one lists every request."""
    with ortweb_runtime.new_page(routed=False) as plain:
        assert plain.run_python("1 + 1") == 2
        assert plain.capture.requests == []
    with ortweb_runtime.new_page() as routed:
        assert routed.run_python("1 + 1") == 2
        assert any(u.endswith("runner.html") or "runner.html?" in u
                   for u in routed.capture.requests), routed.capture.requests[:5]


def test_harness_section_times_tests_on_the_shared_page_and_on_fresh_ones(ortweb_runtime
                                                                          ) -> None:
    plan = bench.Plan(harness_reps=1, harness_tests=6, harness_fresh=2)
    data = bench.run_bench(ortweb_runtime, plan, sections=["harness"], log=print)
    figures = data["figures"]
    first, per_test = figures["harness_first_page_s"], figures["harness_per_test_ms"]
    fresh = data["details"]["harness_fresh_page_per_test_ms"]
    assert first["n"] == 1 and per_test["n"] == 5 and fresh["n"] == 2
    # A test on the shared page costs a round of resets, not a page boot.
    assert 0 < per_test["median"] < fresh["min"], (per_test, fresh)
    assert first["median"] * 1000 > per_test["median"]
    assert data["details"]["harness_fresh_over_reused"]["median"] > 1
    # The same first test with V8's default tiers, in a pytest run of its own.
    assert data["details"]["harness_first_page_all_tiers_s"]["n"] == 1


@pytest.mark.browser
def test_engines_section_runs_every_engine_beside_its_own_js_call(ortweb_runtime) -> None:
    from ortweb.host.bench.engines import ENGINE_MODELS, ENGINE_NAMES

    plan = bench.Plan(engines_pairs=2, engines_k=3, warm_up_s=0.1,
                      engines_node_filter=r"^test_(abs|relu|softmax_example)$")
    data = bench.run_bench(ortweb_runtime, plan, sections=["engines"], log=print)
    figures, details, notes = data["figures"], data["details"], data["notes"]
    # The digits MLP's Gemm or Softmax is outside tract's and wonnx's tables: refused
    # with the table's reason, before loading; every other pair runs.
    skipped = notes["engine_skipped"]
    assert set(skipped) == {"tract/digits", "wonnx/digits"}, skipped
    assert "Softmax-13 gives wrong values on tract" in skipped["tract/digits"]
    assert "Gemm-13 not supported by wonnx" in skipped["wonnx/digits"]
    engines_dir = ortweb_runtime.assets.engines
    for engine in ENGINE_NAMES:
        for model in ENGINE_MODELS:
            if f"{engine}/{model}" in skipped:
                assert figures[f"engine_{engine}_{model}_ms"]["n"] == 0
                continue
            ms = figures[f"engine_{engine}_{model}_ms"]
            assert ms["n"] == 2 and 0 < ms["median"] < 5000, (engine, model, ms)
            assert details[f"engine_{engine}_{model}_plain_js_ms"]["n"] == 2
        ratio = figures[f"engine_{engine}_bridge_ratio"]
        assert ratio["n"] == 2 and 0.2 < ratio["median"] < 50, (engine, ratio)
        assert details[f"engine_{engine}_cnn_bridge_ratio"]["median"] == ratio["median"]
        # What each call adds whatever the model: ortweb's time less the engine's own.
        call_ms = details[f"engine_{engine}_call_ms"]
        assert call_ms["n"] == 2 and call_ms["median"] == pytest.approx(
            figures[f"engine_{engine}_tiny_ms"]["median"]
            - details[f"engine_{engine}_tiny_plain_js_ms"]["median"], abs=0.5)
        # The files each engine needs, each counted as served.
        files = notes["engine_files"][engine]
        want = {"tract": ["tract/tract-worker.js"],
                "wonnx": ["wonnx/wonnx.js", "wonnx/wonnx_bg.wasm"]}.get(engine)
        if want is not None:
            assert files == [f"/engines/{f}" for f in want]
            size = sum((engines_dir / f).stat().st_size for f in want)
        else:
            assert all(f.startswith("/ort/") for f in files) and len(files) == 3
            size = sum((ortweb_runtime.assets.ort / f.removeprefix("/ort/")).stat().st_size
                       for f in files)
        assert figures[f"engine_{engine}_bytes"]["median"] == size
    # The sides take turns in blocks of about 20 ms: a whole side at once for a run
    # of microseconds, a block a run where one run takes longer.
    blocks = notes["engine_blocks"]
    assert set(blocks) == {f"{e}/{m}" for e in ENGINE_NAMES for m in ENGINE_MODELS} - set(skipped)
    for pair, b in blocks.items():
        assert b["runs"] == 3 and b["blocks"] == -(-3 // b["block"]), (pair, b)
    assert blocks["wasm/tiny"]["blocks"] == 1 and blocks["webgpu/cnn"]["blocks"] == 3, blocks
    # tract's worker: a round trip of the tiny input, without tract, is part of its call.
    hop = details["engine_tract_worker_hop_ms"]
    assert hop["n"] == 2 and 0 < hop["median"] < 10, hop
    # Abs and Relu pass everywhere; wonnx's Softmax gives wrong values.
    passed = {e: figures[f"engine_{e}_node_pass"]["median"] for e in ENGINE_NAMES}
    assert passed == {"wasm": 3, "webgpu": 3, "tract": 3, "wonnx": 2}, passed
