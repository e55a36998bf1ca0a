"""Host unit tests of ``ortweb bench``'s statistics, verdicts and report writers."""

from __future__ import annotations

import json

import pytest

from ortweb.host import bench


def test_summarize_gives_median_min_max_n() -> None:
    assert bench.summarize([3.0, 1.0, 2.0]) == {"median": 2.0, "min": 1.0, "max": 3.0, "n": 3}
    assert bench.summarize([1, 2, 3, 4])["median"] == 2.5
    assert bench.summarize([]) == {"median": None, "min": None, "max": None, "n": 0}


def test_ratios_and_differences_are_per_pair() -> None:
    assert bench.ratios([2.0, 9.0], [1.0, 3.0]) == [2.0, 3.0]
    assert bench.differences([2.0, 9.0], [1.0, 3.0]) == [1.0, 6.0]
    with pytest.raises(ValueError, match="unpaired"):
        bench.ratios([1.0], [1.0, 2.0])


def test_alternate_swaps_the_first_side_every_pair() -> None:
    assert [bench.alternate(i) for i in range(4)] == ["py", "js", "py", "js"]


def test_gbps() -> None:
    assert bench.gbps(16 * 1024 * 1024, 4.0) == pytest.approx(4.194304)


def test_verdicts_judge_the_median_against_the_goal() -> None:
    assert bench.verdict("bridge_ratio_resnet50", bench.summarize([1.01, 1.2, 1.02])) == "met"
    assert bench.verdict("bridge_extra_ms_tiny", bench.summarize([0.5])) == "MISSED"
    assert bench.verdict("transfer_in_gbps_16mb", bench.summarize([3.0])) == "met"
    assert bench.verdict("threads_speedup_resnet50", bench.summarize([1.5])) == "MISSED"
    assert bench.verdict("web_vs_native_resnet50", bench.summarize([4.0])) == "context"
    assert bench.verdict("cold_start_ratio", bench.summarize([])) == "not run"


def test_fixed_keys_are_the_issues() -> None:
    assert bench.FIXED_KEYS == (
        "bridge_ratio_resnet50", "bridge_extra_ms_tiny", "transfer_in_gbps_16mb",
        "transfer_in_gbps_64mb", "transfer_out_gbps_16mb", "transfer_out_gbps_64mb",
        "cold_start_ratio", "gpu_chain_speedup_1mb", "gpu_chain_speedup_16mb",
        "threads_speedup_resnet50", "web_vs_native_resnet50", "large_load_ratio",
        "large_peak_mem_ratio", "large_warm_ratio", "site_cold_ratio", "site_warm_ratio",
        "site_worker_long_tasks", "site_worker_max_frame_gap_ms", "site_worker_call_extra_ms",
        "harness_first_page_s", "harness_per_test_ms",
        *(f"engine_{e}_{key}" for e in ("wasm", "webgpu", "tract", "wonnx")
          for key in ("tiny_ms", "conv_ms", "cnn_ms", "digits_ms", "bridge_ratio", "bytes",
                      "node_pass")),
        *(f"net_{p}_{key}" for p in ("broadband", "mobile")
          for key in ("first_visit_s", "floor_s", "ratio")),
        "net_first_visit_bytes", "net_bytes_ratio", "net_second_visit_requests")


def _result() -> dict:
    figures = {k: bench.summarize([]) for k in bench.FIXED_KEYS}
    figures["bridge_extra_ms_tiny"] = bench.summarize([0.2, 0.25, 0.4])
    figures["transfer_in_gbps_16mb"] = bench.summarize([2.0, 2.5])
    return {
        "meta": {"date": "2026-01-01 00:00 UTC", "machine": {"platform": "Linux", "cpu_count": 2},
                 "browser": "Chromium 1", "versions": {"ortweb": "0.1.0"},
                 "command": "ortweb bench --quick", "wall_s": 12.0},
        "figures": figures,
        "details": {"js_set_gbps_16mb": bench.summarize([5.0])},
        "notes": {},
    }


def test_table_shows_goals_and_verdicts() -> None:
    text = bench.render_table(_result())
    line = next(ln for ln in text.splitlines() if ln.startswith("bridge_extra_ms_tiny"))
    assert "0.25" in line and "<= 0.3" in line and line.endswith("met")
    line = next(ln for ln in text.splitlines() if ln.startswith("transfer_in_gbps_16mb"))
    assert ">= 3" in line and line.endswith("MISSED")
    assert "js_set_gbps_16mb" in text
    assert all(key in text for key in bench.FIXED_KEYS)


def test_markdown_has_header_row_per_key_and_facts() -> None:
    md = bench.render_markdown(_result())
    assert "ortweb bench --quick" in md and "Chromium 1" in md and "2 CPUs" in md
    rows = [ln for ln in md.splitlines() if ln.startswith("| ")]
    assert rows[0].startswith("| figure | median")
    for key in bench.FIXED_KEYS:
        assert any(r.startswith(f"| {key} |") for r in rows)
    assert "| transfer_in_gbps_16mb | 2.25 | 2 | 2.5 | 2 | GB/s | >= 3 | MISSED |" in md


def test_write_outputs(tmp_path) -> None:
    result = _result()
    bench.write_outputs(result, tmp_path / "a" / "r.json", tmp_path / "b" / "r.md")
    assert json.loads((tmp_path / "a" / "r.json").read_text())["figures"] == result["figures"]
    assert (tmp_path / "b" / "r.md").read_text().startswith("Date:")


def test_proc_status_fields_are_read_in_bytes() -> None:
    from ortweb.host.bench.procmem import parse_status, peak_bytes, rss_bytes

    text = "Name:\tchrome\nVmHWM:\t  2048 kB\nVmRSS:\t  1024 kB\nThreads:\t12\n"
    assert parse_status(text) == {"VmHWM": 2048 * 1024, "VmRSS": 1024 * 1024}
    # This very process, from the OS: resident now <= its peak.
    import os

    assert 0 < rss_bytes(os.getpid()) <= peak_bytes(os.getpid())


def test_large_goals_are_the_issues() -> None:
    assert bench.verdict("large_load_ratio", bench.summarize([1.04])) == "met"
    assert bench.verdict("large_peak_mem_ratio", bench.summarize([1.2])) == "MISSED"
    assert bench.verdict("large_warm_ratio", bench.summarize([])) == "not run"
    assert "large" in bench.SECTIONS


def test_site_goals_are_the_issues() -> None:
    assert bench.verdict("site_cold_ratio", bench.summarize([1.04])) == "met"
    assert bench.verdict("site_warm_ratio", bench.summarize([0.6])) == "MISSED"
    assert bench.verdict("site_worker_long_tasks", bench.summarize([0, 0, 1])) == "met"
    assert bench.verdict("site_worker_long_tasks", bench.summarize([1, 1, 0])) == "MISSED"
    assert bench.verdict("site_worker_max_frame_gap_ms", bench.summarize([51])) == "MISSED"
    assert bench.verdict("site_worker_call_extra_ms", bench.summarize([0.3])) == "met"
    assert "harness" in bench.SECTIONS
    assert "site" in bench.SECTIONS


def test_plan_quick_is_smaller() -> None:
    quick, full = bench.Plan.quick(), bench.Plan()
    assert quick.bridge_pairs < full.bridge_pairs and quick.cold_reps < full.cold_reps
    assert quick.resnet_pairs < full.resnet_pairs
    assert bench.Plan().transfer_k(64) >= 2


def test_unknown_section_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown bench sections"):
        bench.run_bench(None, sections=["nope"])  # type: ignore[arg-type]
