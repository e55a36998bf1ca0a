"""Runner pages boot from the interpreter snapshot the host made
(ortweb.host.build.runner_snapshot), and boot as usual when it cannot be used."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest

from ortweb.host.browser import Runtime
from ortweb.host.build import runner_snapshot as runner_snapshot_module
from ortweb.host.build.assets import Assets, find_assets
from ortweb.host.build.pyodide_snapshot import snapshot_id
from ortweb.host.build.runner_snapshot import SNAPSHOT_PREFIX, runner_imports
from ortweb.host.serve import StaticServer

# What a test needs to know of a page's interpreter: it works, and is its own; and the
# PEP 552 flags of the .pyc numpy's, ortweb's and onnxruntime's modules were imported
# from (-1: none).
_STATE = """
import json, os, random, sys, time
import numpy as np
import onnxruntime
import ortweb

def site_packages():
    # Every file the wheels put there but bytecode, and its content: one digest.
    import hashlib, sysconfig
    root, digest, paths = sysconfig.get_paths()["purelib"], hashlib.sha256(), []
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        paths += [os.path.join(folder, name) for name in files]
    for path in sorted(paths):
        with open(path, "rb") as f:
            digest.update(path.encode() + b"\\0" + f.read())
    return [len(paths), digest.hexdigest()]

def pyc_flags(name):
    try:
        with open(sys.modules[name].__spec__.cached, "rb") as f:
            return int.from_bytes(f.read()[4:8], "little")
    except OSError:
        return -1

json.dumps({"random": random.random(), "lang": os.environ.get("LANG"),
            "tz": list(time.tzname), "np": float(np.arange(4).sum()),
            "ortweb": ortweb.__version__, "json_preloaded": "json" in sys.modules,
            "numpy_pyc": [pyc_flags(n) for n in ("numpy", "numpy._core.numeric",
                                                   "numpy.linalg")],
            "ortweb_pyc": [pyc_flags(n) for n in ("ortweb", "ortweb._session",
                                                    "ortweb._bridge._protocol",
                                                    "onnxruntime")],
            "site_packages": site_packages()})
"""
#: PEP 552 flags: hash-based, source not checked (the bytecode made at build time).
_UNCHECKED_HASH = 0b01


def test_runner_imports_are_the_standard_library_modules_ortweb_names() -> None:
    assets = find_assets()
    names = runner_imports(assets)
    assert {"asyncio", "contextlib", "dataclasses"} <= set(names), names
    assert "numpy" not in names and "ortweb" not in names and "js" not in names
    # The key follows the list: a module more is another snapshot.
    pyodide = assets.pyodide
    assert snapshot_id(pyodide, ["numpy"], names) != snapshot_id(pyodide, ["numpy"],
                                                                [*names, "zipfile"])


def test_runner_imports_are_kept_until_a_source_changes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = find_assets()
    root = tmp_path / "root"
    for part in (real.package_dir, real.compat_dir):
        shutil.copytree(part, root / part.relative_to(real.root),
                        ignore=shutil.ignore_patterns("__pycache__"))
    assets, cache = Assets(root), tmp_path / "cache"
    first = runner_imports(assets, cache)
    assert first == runner_imports(real) and "zipfile" not in first
    parsed: list[str] = []

    def parse(source: str) -> list[str]:
        parsed.append(source)
        return []

    with monkeypatch.context() as m:
        m.setattr(runner_snapshot_module, "module_imports", parse)
        assert runner_imports(assets, cache) == first and parsed == []  # kept: none parsed
    model = assets.package_dir / "_model.py"
    model.write_text(model.read_text() + "\nimport zipfile  # noqa\n")
    assert runner_imports(assets, cache) == sorted({*first, "zipfile"})
    (cache / "runner-imports.json").write_text("not json")
    assert runner_imports(assets, cache) == sorted({*first, "zipfile"})


def test_a_new_runner_folder_drops_all_but_the_newest_and_their_records(
        tmp_path: Path) -> None:
    import os

    folders = []
    for i in range(5):
        folder = tmp_path / f"runner-{i}"
        folder.mkdir()
        folders.append(folder)
    linked, orphan = tmp_path / "unpacked-a.bin", tmp_path / "unpacked-b.bin"
    linked.write_bytes(b"a")
    orphan.write_bytes(b"b")
    os.link(linked, folders[3] / "unpacked.bin")
    os.link(orphan, folders[0] / "unpacked.bin")
    for i, folder in enumerate(folders):  # made in this order
        os.utime(folder, (1000 + i, 1000 + i))
    (tmp_path / "runner-9.making").mkdir()  # another maker's, not yet whole
    runner_snapshot_module._prune(tmp_path, folders[1])
    # The one just made and the two newest others stay, with what they link.
    assert sorted(p.name for p in tmp_path.glob("runner-*")) == [
        "runner-1", "runner-3", "runner-4", "runner-9.making"]
    assert linked.is_file() and not orphan.exists()


@pytest.mark.browser
def test_pages_boot_from_the_snapshot_as_a_fresh_boot_would(ortweb_runtime: Runtime) -> None:
    made = ortweb_runtime.assets.runner_snapshot
    assert made.path is not None, made.reason
    about = json.loads((made.path / "snapshot.json").read_text())
    assert (made.path / about["file"]).is_file()
    assert about["bytecode"] and (made.path / about["bytecode"]).is_file(), about
    states = {}
    assert about["unpacked"] and (made.path / about["unpacked"]).is_file(), about
    for name, snapshot in [("a", True), ("b", True), ("fresh", False)]:
        with ortweb_runtime.new_page(snapshot=snapshot) as page:
            assert page.booted_from == ("snapshot" if snapshot else "fresh")
            # The wheels' files written from the record made with the snapshot; a
            # plain boot unpacks the wheels.
            assert page.packages_from == ("kept" if snapshot else "wheels")
            states[name] = json.loads(page.run_python(_STATE))
            assert not page.capture.errors
    a, b, fresh = states["a"], states["b"], states["fresh"]
    # Each restored page draws its own random numbers, as fresh boots do.
    assert a["random"] != b["random"]
    for key in ("lang", "tz", "np", "ortweb", "site_packages"):
        assert a[key] == fresh[key], (key, a, fresh)
    assert a["site_packages"][0] > 300, a  # numpy's files among them
    # numpy, ortweb and onnxruntime come from the bytecode made with the snapshot (for
    # this very ortweb wheel); a plain boot compiles them.
    assert a["numpy_pyc"] == b["numpy_pyc"] == [_UNCHECKED_HASH] * 3, (a, b)
    assert a["ortweb_pyc"] == b["ortweb_pyc"] == [_UNCHECKED_HASH] * 4, (a, b)
    assert _UNCHECKED_HASH not in fresh["numpy_pyc"] + fresh["ortweb_pyc"], fresh


@pytest.mark.browser
def test_a_snapshot_that_does_not_restore_boots_as_usual(ortweb_runtime: Runtime,
                                                         tmp_path: Path) -> None:
    made = ortweb_runtime.assets.runner_snapshot
    assert made.path is not None, made.reason
    shutil.copy(made.path / "snapshot.json", tmp_path / "snapshot.json")
    name = json.loads((tmp_path / "snapshot.json").read_text())["file"]
    # A whole gzip of the wrong bytes: it reads, and Pyodide refuses it.
    (tmp_path / name).write_bytes(gzip.compress(b"not a memory snapshot" * 1000))
    mounts = {**ortweb_runtime.assets.mounts(), SNAPSHOT_PREFIX: tmp_path}
    with StaticServer(mounts) as server, \
            ortweb_runtime.browser.new_page(server.url) as page:
        assert page.booted_from == "fresh"
        assert json.loads(page.run_python(_STATE))["np"] == 6.0
        warned = [line.text for line in page.capture.console if line.type == "warning"]
        assert any("runner snapshot did not restore" in text for text in warned), warned


@pytest.mark.browser
def test_a_damaged_record_of_the_unpacked_wheels_is_unpacked_as_usual(
        ortweb_runtime: Runtime, tmp_path: Path) -> None:
    made = ortweb_runtime.assets.runner_snapshot
    assert made.path is not None, made.reason
    about = json.loads((made.path / "snapshot.json").read_text())
    for name in ("snapshot.json", about["file"], about["bytecode"]):
        shutil.copy(made.path / name, tmp_path / name)
    (tmp_path / about["unpacked"]).write_bytes(b"\x10\0\0\0not a record of wheels")
    mounts = {**ortweb_runtime.assets.mounts(), SNAPSHOT_PREFIX: tmp_path}
    with StaticServer(mounts) as server, \
            ortweb_runtime.browser.new_page(server.url) as page:
        assert (page.booted_from, page.packages_from) == ("snapshot", "wheels")
        state = json.loads(page.run_python(_STATE))
        assert state["np"] == 6.0 and state["ortweb_pyc"] == [_UNCHECKED_HASH] * 4, state
        warned = [line.text for line in page.capture.console if line.type == "warning"]
        assert any("record of the unpacked wheels could not be read" in text
                   for text in warned), warned
