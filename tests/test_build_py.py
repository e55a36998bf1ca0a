"""build.py on the host (loaded by path, as it is stdlib-only): the onnxruntime-web
among those assets.lock.json pins that ``ORTWEB_ONNXRUNTIME_WEB`` chooses, and the
phases ``build.py test`` runs the suite in."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _build_py() -> ModuleType:
    spec = importlib.util.spec_from_file_location("_ortweb_build_py", ROOT / "build.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


build = _build_py()
PINS: list[dict[str, Any]] = json.loads((ROOT / "assets.lock.json").read_text())["npm"]


def _versions(pins: list[dict[str, Any]], name: str) -> list[str]:
    return [p["version"] for p in pins if p["name"] == name]


def test_the_default_is_the_first_pin_and_the_other_stays_pinned() -> None:
    assert _versions(PINS, "onnxruntime-web") == ["1.30.0", "1.31.1"]
    chosen = build.chosen_npm(PINS)
    assert _versions(chosen, "onnxruntime-web") == ["1.30.0"]
    # Every other package keeps its one pin, in order.
    assert [p["name"] for p in chosen] == list(dict.fromkeys(p["name"] for p in PINS))


def test_the_setting_picks_a_pinned_version() -> None:
    chosen = build.chosen_npm(PINS, "1.31.1")
    assert _versions(chosen, "onnxruntime-web") == ["1.31.1"]
    assert _versions(chosen, "pyodide") == ["0.27.7"]


def test_an_unpinned_version_is_refused_with_the_pinned_ones() -> None:
    with pytest.raises(SystemExit, match=r"ORTWEB_ONNXRUNTIME_WEB=1\.29\.0 is not a pinned "
                       r"onnxruntime-web version; assets\.lock\.json pins 1\.30\.0, 1\.31\.1"):
        build.chosen_npm(PINS, "1.29.0")


def test_every_pinned_version_pins_the_same_files() -> None:
    # The bridge's builds (bridge_js/builds.json) load the same files of either version.
    files = [sorted(p["files"]) for p in PINS if p["name"] == "onnxruntime-web"]
    assert len(files) == 2 and files[0] == files[1]
    builds = json.loads((ROOT / "bridge_js" / "builds.json").read_text())
    for build_files in builds.values():
        for name in (build_files["module"], build_files["wasm"]):
            assert f"dist/{name}" in files[0], name


def test_setup_reads_the_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ORTWEB_ONNXRUNTIME_WEB", "1.31.1")
    assert _versions(build.load_manifest()["npm"], "onnxruntime-web") == ["1.31.1"]
    monkeypatch.delenv("ORTWEB_ONNXRUNTIME_WEB")
    assert _versions(build.load_manifest()["npm"], "onnxruntime-web") == ["1.30.0"]
    assert _versions(build.load_manifest(every_pin=True)["npm"], "onnxruntime-web") == [
        "1.30.0", "1.31.1"]


def test_sites_check_the_files_of_the_version_set_up(tmp_path: Path) -> None:
    from types import SimpleNamespace

    from ortweb.host.build.site_runtime import pinned_hashes

    (tmp_path / "assets.lock.json").write_text(json.dumps({"npm": PINS}))
    by_version = {p["version"]: p["files"] for p in PINS if p["name"] == "onnxruntime-web"}
    package = tmp_path / "build" / "npm" / "onnxruntime-web" / "package.json"
    package.parent.mkdir(parents=True)
    for version in ("1.31.1", "1.30.0"):
        package.write_text(json.dumps({"version": version}))
        hashes = pinned_hashes(SimpleNamespace(root=tmp_path))  # type: ignore[arg-type]
        assert hashes["onnxruntime-web"] == by_version[version]
        assert hashes["pyodide"] == PINS[0]["files"]
    assert by_version["1.31.1"] != by_version["1.30.0"]


def test_the_whole_suite_runs_in_a_parallel_phase_then_the_serial_one() -> None:
    assert build.suite_phases([]) == [
        ["-n", "auto", "--dist", "loadfile", "-m", "not serial"],
        ["-p", "no:xdist", "-m", "serial"]]
    # ARGS go to both phases; a mark of their own joins each phase's; each phase writes
    # its own report.
    assert build.suite_phases(["-k", "site", "-m", "webgpu", "--junitxml=out/r.xml"]) == [
        ["-n", "auto", "--dist", "loadfile", "-m", "(webgpu) and not serial", "-k", "site",
         "--junitxml=out/r.xml"],
        ["-p", "no:xdist", "-m", "(webgpu) and serial", "-k", "site",
         "--junitxml=out/r.serial.xml"]]


def test_a_phase_reports_its_wall_and_cpu_time() -> None:
    import os
    import subprocess

    before = build.host_cpu_s()
    if before is None:
        pytest.skip("no /proc/stat here")
    # A child that spins for a while: the host's CPUs were busy at least that long.
    subprocess.run([sys.executable, "-c",
                    "import time\nt = time.process_time()\n"
                    "while time.process_time() - t < 0.3: pass"], check=True)
    after = build.host_cpu_s()
    assert after is not None and after - before >= 0.25
    line = build.phase_line(100.0, 150.0)
    assert line == (f"pytest phase: 100 s wall, 150 s of busy CPU on the host (1.50 of "
                    f"{os.cpu_count()} CPUs)")
    assert build.phase_line(100.0, None) == "pytest phase: 100 s wall"


def test_args_naming_tests_or_workers_run_once_as_given() -> None:
    for args in (["tests/test_cli.py"], ["tests/test_cli.py::test_demo", "-x"],
                 ["-n", "2"], ["-p", "no:xdist"], ["-k", "x", "--numprocesses=3"]):
        assert build.suite_phases(args) == [args], args


def _bundle(script: str) -> str:
    import base64

    return (build.TRACT_WORKER_MARK + base64.b64encode(script.encode()).decode()
            + '";\nconst worker = new browser(worker_data);\n')


def test_tract_worker_comes_out_of_the_bundle_with_its_output_bug_fixed():
    bug, fix = build.TRACT_OUTPUT_BUG
    script = f"for (let i = 0; i < outputs.length; i++) {{ {bug} }}"
    assert build.tract_worker(_bundle(script)) == script.replace(bug, fix)
    with pytest.raises(build.SetupError, match="does not read"):
        build.tract_worker(_bundle("no such line"))
    with pytest.raises(build.SetupError, match="no inlined worker"):
        build.tract_worker("export {};")


def test_engine_files_are_checked_against_their_pins(tmp_path, monkeypatch):
    manifest = json.loads((ROOT / "assets.lock.json").read_text())
    npm = {"tractjs": ROOT / "build" / "npm" / "tractjs",
           "@webonnx/wonnx-wasm": ROOT / "build" / "npm" / "@webonnx" / "wonnx-wasm"}
    if not all(p.exists() for p in npm.values()):
        pytest.skip("set-up has not unpacked the engines")
    monkeypatch.setattr(build, "ENGINES_DIR", tmp_path)
    build.assemble_engines(npm, manifest["engines"])
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*.*")) == sorted(
        manifest["engines"])
    tampered = {**manifest["engines"], "wonnx/wonnx.js": "0" * 64}
    with pytest.raises(build.SetupError, match=r"wonnx/wonnx\.js would have sha256"):
        build.assemble_engines(npm, tampered)
