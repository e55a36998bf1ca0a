"""build.py's pins: one onnxruntime-web among those assets.lock.json pins, chosen by
``ORTWEB_ONNXRUNTIME_WEB`` (host only; build.py is loaded by path, as it is stdlib-only)."""

from __future__ import annotations

import importlib.util
import json
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
