"""The browser wheel: contents, reproducibility, RECORD, lock entry; and the host import."""

from __future__ import annotations

import ast
import asyncio
import base64
import concurrent.futures
import csv
import gc
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tomllib
import types
import warnings
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import ortweb
from ortweb import _bridge
from ortweb.host.build.wheel import HOST_ONLY, add_to_lock, build_wheel, runtime_files

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "py" / "ortweb"
VERSION = ortweb.__version__
DIST_INFO = f"ortweb-{VERSION}.dist-info"
FORBIDDEN = {"playwright", "jinja2", "onnxruntime", "onnx"}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_wheel(PKG, tmp_path_factory.mktemp("dist"))


def _names(path: Path) -> list[str]:
    with zipfile.ZipFile(path) as zf:
        return zf.namelist()


def test_version_matches_pyproject() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert VERSION == project["version"]


def test_wheel_name(wheel: Path) -> None:
    assert wheel.name == f"ortweb-{VERSION}-py3-none-any.whl"
    assert wheel.is_file()


def test_contents(wheel: Path) -> None:
    names = _names(wheel)
    assert len(names) == len(set(names))
    expected = {f"ortweb/{p.relative_to(PKG).as_posix()}" for p in runtime_files(PKG)}
    for module in ("__init__", "_bridge/__init__", "_bridge/_protocol", "_bridge/_waiting",
                   "_convert", "_dtypes", "_metadata", "_options", "_providers", "_runtime",
                   "_session", "_validate", "errors"):
        assert f"ortweb/{module}.py" in names
    assert "ortweb/py.typed" in names
    dist = {n for n in names if n.startswith(f"{DIST_INFO}/")}
    assert dist == {f"{DIST_INFO}/{f}" for f in ("METADATA", "WHEEL", "RECORD", "top_level.txt")}
    assert set(names) == expected | dist
    for n in names:
        assert not n.startswith(tuple(f"ortweb/{h}/" for h in ("cli", "host", "testing")))
        assert "__pycache__" not in n and not n.endswith((".pyc", ".pyo"))
    # Every runtime module of the source tree ships.
    top = {f"ortweb/{p.name}" for p in PKG.glob("*.py")}
    assert top <= set(names)


def test_metadata_files(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as zf:
        meta = zf.read(f"{DIST_INFO}/METADATA").decode()
        info = zf.read(f"{DIST_INFO}/WHEEL").decode()
        top = zf.read(f"{DIST_INFO}/top_level.txt").decode()
        entries = zf.infolist()
    assert "Name: ortweb\n" in meta and f"Version: {VERSION}\n" in meta
    assert "Requires-Dist: numpy\n" in meta
    assert "Tag: py3-none-any\n" in info and "Root-Is-Purelib: true\n" in info
    assert top == "ortweb\n"
    # The dist-info comes last and RECORD closes it, as installers expect.
    assert entries[-1].filename == f"{DIST_INFO}/RECORD"
    for e in entries:
        assert e.date_time == (1980, 1, 1, 0, 0, 0)
        assert e.compress_type == zipfile.ZIP_DEFLATED


def test_host_only_packages_left_out(tmp_path: Path) -> None:
    # A copy with every kind of clutter the real tree may or may not have today.
    pkg = tmp_path / "src" / "ortweb"
    shutil.copytree(PKG, pkg, ignore=shutil.ignore_patterns("__pycache__"))
    for sub in HOST_ONLY:
        (pkg / sub).mkdir(exist_ok=True)
        (pkg / sub / "__init__.py").write_text("import playwright\n")
    (pkg / "__pycache__").mkdir()
    (pkg / "__pycache__" / "errors.cpython-311.pyc").write_bytes(b"\0")
    (pkg / "stray.pyc").write_bytes(b"\0")
    (pkg / "sub" / "__pycache__").mkdir(parents=True)
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "__pycache__" / "x.pyc").write_bytes(b"\0")
    names = _names(build_wheel(pkg, tmp_path / "dist"))
    assert "ortweb/sub/__init__.py" in names
    assert "ortweb/errors.py" in names
    bad = [n for n in names if n.split("/")[1:2] in [[h] for h in HOST_ONLY]
           or "__pycache__" in n or n.endswith(".pyc")]
    assert bad == []


def test_reproducible(tmp_path: Path, wheel: Path) -> None:
    again = build_wheel(PKG, tmp_path / "a")
    assert again != wheel
    assert again.read_bytes() == wheel.read_bytes()


def test_unchanged_wheel_not_rewritten(tmp_path: Path) -> None:
    first = build_wheel(PKG, tmp_path)
    stamp = 1_000_000_000_000_000_000
    os.utime(first, ns=(stamp, stamp))
    second = build_wheel(PKG, tmp_path)
    assert second == first
    assert second.stat().st_mtime_ns == stamp


def test_record_hashes(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as zf:
        record = zf.read(f"{DIST_INFO}/RECORD").decode()
        contents = {n: zf.read(n) for n in zf.namelist()}
    rows = list(csv.reader(io.StringIO(record)))
    listed = [r[0] for r in rows]
    assert sorted(listed) == sorted(contents)
    for name, digest, size in rows:
        if name == f"{DIST_INFO}/RECORD":
            assert (digest, size) == ("", "")
            continue
        data = contents[name]
        algo, _, b64 = digest.partition("=")
        assert algo == "sha256"
        assert "=" not in b64  # urlsafe base64 without padding, per the wheel spec
        assert base64.urlsafe_b64decode(b64 + "=" * (-len(b64) % 4)) == hashlib.sha256(
            data).digest()
        assert int(size) == len(data)


def _imports(source: str) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    return found


def test_no_host_dependencies_in_wheel(wheel: Path) -> None:
    assert _imports("import onnx.helper\nfrom playwright.sync_api import x") == {
        "onnx", "playwright"}
    with zipfile.ZipFile(wheel) as zf:
        sources = {n: zf.read(n).decode() for n in zf.namelist() if n.endswith(".py")}
    assert sources
    for name, source in sources.items():
        assert not _imports(source) & FORBIDDEN, name
        # Relative imports must not reach into the host-only subpackages.
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.ImportFrom) and node.level:
                assert (node.module or "").split(".")[0] not in HOST_ONLY, name


def test_wheel_imports_alone(tmp_path: Path, wheel: Path) -> None:
    # -S: no site, so no editable install; only the unpacked wheel and numpy are seen.
    with zipfile.ZipFile(wheel) as zf:
        zf.extractall(tmp_path)
    numpy_home = str(Path(np.__file__).resolve().parents[1])
    script = (
        "import sys; sys.path[:0] = [sys.argv[1]]; sys.path.append(sys.argv[2]);"
        "import ortweb, ortweb.errors;"
        "assert ortweb.__file__.startswith(sys.argv[1]), ortweb.__file__;"
        "print(sorted({m.split('.')[0] for m in sys.modules}))"
    )
    done = subprocess.run(
        [sys.executable, "-S", "-c", script, str(tmp_path), numpy_home],
        capture_output=True, text=True, timeout=60, check=False,
    )
    assert done.returncode == 0, done.stderr
    loaded = set(ast.literal_eval(done.stdout.strip()))
    assert "ortweb" in loaded and "numpy" in loaded
    assert not loaded & (FORBIDDEN | {"js", "pyodide"})


# -- add_to_lock ----------------------------------------------------------------------


def _source_lock(tmp_path: Path) -> Path:
    # Every field the official 0.27.7 lock has (pyodide-lock writes them all).
    lock = {
        "info": {"abi_version": "2024_0", "arch": "wasm32", "platform": "emscripten_3_1_58",
                 "version": "0.27.7", "python": "3.12.7"},
        "packages": {
            "numpy": {"name": "numpy", "version": "2.0.2", "file_name": "numpy.whl",
                      "sha256": "0" * 64, "depends": [], "imports": ["numpy"],
                      "install_dir": "site", "package_type": "package",
                      "unvendored_tests": False},
        },
    }
    path = tmp_path / "pyodide-lock.json"
    path.write_text(json.dumps(lock))
    return path


def test_add_to_lock(tmp_path: Path, wheel: Path) -> None:
    source = _source_lock(tmp_path)
    before = source.read_text()
    out = tmp_path / "out" / "pyodide-lock.json"
    out.parent.mkdir()
    entry = add_to_lock(source, wheel, out)
    assert source.read_text() == before
    lock = json.loads(out.read_text())
    assert lock["info"]["version"] == "0.27.7"
    assert lock["info"] == json.loads(before)["info"]
    assert lock["packages"]["numpy"] == json.loads(before)["packages"]["numpy"]
    written = lock["packages"]["ortweb"]
    assert written == entry
    assert written["sha256"] == hashlib.sha256(wheel.read_bytes()).hexdigest()
    assert written["file_name"] == wheel.name
    assert written["version"] == VERSION
    assert written["depends"] == ["numpy"]
    assert written["imports"] == ["ortweb"]
    assert written["name"] == "ortweb"
    assert written["install_dir"] == "site"
    # Every dependency must itself be in the lock, or Pyodide fails to resolve it.
    assert all(dep in lock["packages"] for dep in written["depends"])


def test_add_to_lock_is_stable(tmp_path: Path, wheel: Path) -> None:
    source = _source_lock(tmp_path)
    out = tmp_path / "lock.json"
    add_to_lock(source, wheel, out)
    text = out.read_text()
    add_to_lock(source, wheel, out)
    assert out.read_text() == text


# -- the package on the host --------------------------------------------------------


def test_all_names_exist() -> None:
    assert len(ortweb.__all__) == len(set(ortweb.__all__))
    for name in ortweb.__all__:
        assert hasattr(ortweb, name), name
    assert ortweb.DTYPES is ortweb._dtypes.DTYPES


def test_host_has_no_browser() -> None:
    assert _bridge.IN_BROWSER is False
    assert _bridge.default_providers() is None
    with pytest.raises(ortweb.OrtWebError, match="Pyodide"):
        _bridge.get_bridge()


def test_session_outside_browser_is_a_clear_error() -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(ortweb.OrtWebError) as info:
            ortweb.InferenceSession(b"x")
        assert "Pyodide" in str(info.value)
        del info
        gc.collect()
    # block_on closes the coroutine it could not run.
    assert not [w for w in caught if "never awaited" in str(w.message)]


def test_block_on_closes_the_coroutine() -> None:
    async def work() -> int:
        return 1

    coro = work()
    assert isinstance(coro, types.CoroutineType)
    with pytest.raises(ortweb.OrtWebError):
        _bridge.block_on(coro)
    assert coro.cr_frame is None  # closed, so no "never awaited" warning later


def test_sync_helpers_outside_browser() -> None:
    with pytest.raises(ortweb.OrtWebError, match="Pyodide"):
        ortweb.get_available_providers()
    with pytest.raises(ortweb.OrtWebError, match="Pyodide"):
        ortweb.set_default_providers(["wasm"])
    with pytest.raises(ortweb.InvalidArgument):
        ortweb.set_default_providers(["cuda"])


def _run_async(coro: Any) -> Any:
    # Playwright's sync API (browser tests in the same process) keeps an event loop
    # running on this thread, so asyncio.run needs a thread of its own.
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()


def test_async_model_url_outside_browser() -> None:
    with pytest.raises(ortweb.OrtWebError, match="Pyodide"):
        _run_async(ortweb.InferenceSession.create("https://example.invalid/m.onnx"))


def test_async_create_from_bytes_outside_browser() -> None:
    with pytest.raises(ortweb.OrtWebError, match="Pyodide"):
        _run_async(ortweb.InferenceSession.create(b"x"))
