"""Pyodide's memory snapshot made at build time (:mod:`ortweb.host.build.pyodide_snapshot`),
from the host: made once per set of core files in headless Chromium and kept, a whole
snapshot (Pyodide's magic number, whole wasm pages), keyed by every core file, and a
clear reason, not an error, where no Chromium starts or Pyodide fails in it; made for a
set of packages, it holds what they import from the standard library (but what reaches
for the parts Pyodide ships as packages) and is keyed by their wheels. Restoring it in
sites is tested in ``test_site_snapshot.py``."""

from __future__ import annotations

import gzip
import json
import shutil
import struct
from pathlib import Path

import pytest

from ortweb.host.build.assets import find_assets
from ortweb.host.build.headless import bytes_from_page
from ortweb.host.build.pyodide_snapshot import CORE, make_snapshot, runtime_id, snapshot_id

#: ``makeMemorySnapshot``'s first word (Pyodide 0.27.7).
_MAGIC = 1886286592


@pytest.fixture(scope="module")
def pyodide_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Pyodide's core files and lock alone (the snapshot needs no more)."""
    folder = tmp_path_factory.mktemp("pyodide")
    for name in (*CORE, "pyodide-lock.json"):
        shutil.copyfile(find_assets().pyodide / name, folder / name)
    return folder


@pytest.mark.browser
def test_made_once_per_core_files_and_whole(pyodide_dir: Path, tmp_path: Path) -> None:
    made = make_snapshot(pyodide_dir, tmp_path / "cache")
    assert made.path is not None, made.reason
    assert made.path.name == f"pyodide-{runtime_id(pyodide_dir)}.snapshot.gz"
    raw = gzip.decompress(made.path.read_bytes())
    magic, header = struct.unpack_from("<II", raw)
    assert magic == _MAGIC
    assert (len(raw) - header) % 65536 == 0 and len(raw) - header >= 16 * 65536
    # Kept: a second build takes it as it is, with no browser at all.
    again = make_snapshot(pyodide_dir, tmp_path / "cache", executable=str(tmp_path / "none"))
    assert again.path == made.path
    assert list((tmp_path / "cache").iterdir()) == [made.path]


def test_the_id_follows_every_core_file(pyodide_dir: Path, tmp_path: Path) -> None:
    base = runtime_id(pyodide_dir)
    for name in CORE:
        other = tmp_path / name.replace(".", "_")
        shutil.copytree(pyodide_dir, other)
        assert runtime_id(other) == base
        with (other / name).open("ab") as f:
            f.write(b"\0")
        assert runtime_id(other) != base, name


def test_no_browser_gives_a_reason_not_an_error(pyodide_dir: Path, tmp_path: Path) -> None:
    made = make_snapshot(pyodide_dir, tmp_path / "cache", executable=str(tmp_path / "none"))
    assert made.path is None
    assert made.reason.startswith("could not make Pyodide's snapshot in headless Chromium"), made
    assert not (tmp_path / "cache").exists()


@pytest.mark.browser
def test_pyodide_failing_in_the_browser_gives_a_reason(pyodide_dir: Path,
                                                       tmp_path: Path) -> None:
    broken = tmp_path / "broken"
    shutil.copytree(pyodide_dir, broken)
    (broken / "pyodide-lock.json").write_text("{not json")
    made = make_snapshot(broken, tmp_path / "cache")
    assert made.path is None and "headless Chromium" in made.reason, made
    assert not any((tmp_path / "cache").glob("*.gz"))


#: In a page of a folder with Pyodide's core files and a snapshot (``name``): the
#: modules of the interpreter restored from it, before anything else runs.
_RESTORED_MODULES = """async (name) => {
  const { loadPyodide } = await import('./pyodide.mjs');
  const bytes = new Uint8Array(await (await fetch(name)).arrayBuffer());
  const pyodide = await loadPyodide({ indexURL: new URL('./', location.href).href,
    _loadSnapshot: bytes, stdout: () => {}, stderr: () => {} });
  const modules = pyodide.runPython('import json, sys\\njson.dumps(sorted(sys.modules))');
  globalThis.ortwebMade = new TextEncoder().encode(modules);
  return globalThis.ortwebMade.length;
}"""


def _restored_modules(pyodide_dir: Path, snapshot: Path, folder: Path) -> set[str]:
    folder.mkdir()
    for name in (*CORE, "pyodide-lock.json"):
        shutil.copyfile(pyodide_dir / name, folder / name)
    (folder / "snapshot.bin").write_bytes(gzip.decompress(snapshot.read_bytes()))
    return set(json.loads(bytes_from_page(folder, _RESTORED_MODULES, "snapshot.bin")))


@pytest.mark.browser
def test_with_packages_what_they_import_from_the_standard_library_is_in_it(
        pyodide_dir: Path, tmp_path: Path) -> None:
    assets = find_assets().pyodide
    packages = ["numpy", "ortweb"]
    made = make_snapshot(assets, tmp_path / "cache", packages=packages, imports=["json"])
    assert made.path is not None, made.reason
    assert made.path.name == f"pyodide-{snapshot_id(assets, packages, ['json'])}.snapshot.gz"
    assert snapshot_id(assets, packages, ["json"]) != runtime_id(assets)
    bare = make_snapshot(pyodide_dir, tmp_path / "cache")
    assert bare.path is not None, bare.reason
    with_packages = _restored_modules(assets, made.path, tmp_path / "packages")
    alone = _restored_modules(assets, bare.path, tmp_path / "bare")
    # What loadPackage and importing numpy and ortweb take, none of it in the bare one.
    preloaded = {"importlib.metadata", "email.message", "dataclasses", "ctypes", "decimal"}
    assert preloaded <= with_packages - alone, preloaded - with_packages
    # hashlib reaches for _hashlib, which Pyodide ships as a package of its own: a page
    # that loads it imports hashlib otherwise, so it is left out. Nothing of the
    # packages themselves is in it (they load after the restore).
    assert "hashlib" not in with_packages and "_hashlib" not in with_packages
    assert not {m for m in with_packages if m.split(".")[0] in ("numpy", "ortweb")}


def test_the_id_follows_the_packages_and_their_wheels(tmp_path: Path) -> None:
    assets = find_assets().pyodide
    base = snapshot_id(assets, ["numpy"])
    assert snapshot_id(assets, []) == runtime_id(assets)
    assert snapshot_id(assets, ["numpy", "ortweb"]) != base
    assert snapshot_id(assets, ["numpy"], ["json"]) != base
    other = tmp_path / "other"
    other.mkdir()
    for name in CORE:
        (other / name).symlink_to(assets / name)
    lock = json.loads((assets / "pyodide-lock.json").read_text())
    (other / "pyodide-lock.json").write_text(json.dumps(lock))
    assert snapshot_id(other, ["numpy"]) == base
    lock["packages"]["numpy"]["sha256"] = "0" * 64
    (other / "pyodide-lock.json").write_text(json.dumps(lock))
    assert snapshot_id(other, ["numpy"]) != base
