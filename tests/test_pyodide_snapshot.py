"""Pyodide's memory snapshot made at build time (:mod:`ortweb.host.build.pyodide_snapshot`),
from the host: made once per set of core files in headless Chromium and kept, a whole
snapshot (Pyodide's magic number, whole wasm pages), keyed by every core file, and a
clear reason, not an error, where no Chromium starts or Pyodide fails in it. Restoring
it in pages is tested in ``test_site_snapshot.py``."""

from __future__ import annotations

import gzip
import shutil
import struct
from pathlib import Path

import pytest

from ortweb.host.build.assets import find_assets
from ortweb.host.build.pyodide_snapshot import CORE, make_snapshot, runtime_id

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
