"""The packages' bytecode compiled at build time (:mod:`ortweb.host.build.pyodide_bytecode`).

From the host: made once per set of wheels and Pyodide in headless Chromium and kept,
unchecked-hash ``.pyc`` files of Python 3.12 for every module of the packages, keyed by
every wheel and core file, and a clear reason, not an error, where no Chromium starts or
Pyodide cannot load the packages. In a site: the modules numpy and ortweb import come
from it (Python compiles nothing of theirs), outputs equal native, tracebacks still
show the packages' source lines; a site built without it compiles as before."""

from __future__ import annotations

import json
import shutil
import struct
import zipfile
from pathlib import Path

import numpy as np
import pytest

from ortweb.host.browser import Browser, Runtime
from ortweb.host.build.assets import find_assets
from ortweb.host.build.pyodide_bytecode import bytecode_id, make_bytecode
from ortweb.host.build.pyodide_snapshot import CORE
from ortweb.host.build.site_hashed import by_name
from ortweb.host.serve import StaticServer
from ortweb.host.sitepage import SiteContext
from test_site_offline import APP, X, _build, _native

#: ``importlib.util.MAGIC_NUMBER`` of CPython 3.12 (Pyodide 0.27.7's 3.12.7).
_MAGIC_312 = b"\xcb\r\r\n"
#: PEP 552 flags: hash-based, source not checked.
_UNCHECKED_HASH = 0b01
_PACKAGES = ["numpy", "onnxruntime", "ortweb"]
_SITE_PACKAGES = "lib/python3.12/site-packages/"


@pytest.fixture(scope="module")
def pyodide_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Pyodide's core files, its lock and the wheels of the three packages."""
    assets = find_assets().pyodide
    folder = tmp_path_factory.mktemp("pyodide")
    lock = json.loads((assets / "pyodide-lock.json").read_text())
    for name in (*CORE, "pyodide-lock.json"):
        shutil.copyfile(assets / name, folder / name)
    for name in _PACKAGES:
        wheel = lock["packages"][name]["file_name"]
        shutil.copyfile(assets / wheel, folder / wheel)
    return folder


def _flags(pyc: bytes) -> int:
    return int(struct.unpack_from("<I", pyc, 4)[0])


@pytest.mark.browser
def test_made_once_per_wheels_and_whole(pyodide_dir: Path, tmp_path: Path) -> None:
    made = make_bytecode(pyodide_dir, _PACKAGES, tmp_path / "cache")
    assert made.path is not None, made.reason
    assert made.path.name == f"bytecode-{bytecode_id(pyodide_dir, _PACKAGES)}.zip"
    with zipfile.ZipFile(made.path) as archive:
        names = archive.namelist()
        for name in names:
            assert name.startswith(_SITE_PACKAGES) and "/__pycache__/" in name, name
            assert name.endswith(".cpython-312.pyc"), name
            head = archive.read(name)[:16]
            assert head[:4] == _MAGIC_312 and _flags(head) == _UNCHECKED_HASH, name
    for module in ("numpy/__pycache__/__init__", "numpy/linalg/__pycache__/linalg",
                   "ortweb/__pycache__/__init__", "onnxruntime/__pycache__/__init__"):
        assert f"{_SITE_PACKAGES}{module}.cpython-312.pyc" in names, module
    # Kept: a second build takes it as it is, with no browser at all.
    again = make_bytecode(pyodide_dir, _PACKAGES, tmp_path / "cache",
                          executable=str(tmp_path / "none"))
    assert again.path == made.path
    assert list((tmp_path / "cache").iterdir()) == [made.path]


def test_the_id_follows_every_wheel_and_core_file(pyodide_dir: Path, tmp_path: Path) -> None:
    base = bytecode_id(pyodide_dir, _PACKAGES)
    assert bytecode_id(pyodide_dir, list(reversed(_PACKAGES))) == base
    assert bytecode_id(pyodide_dir, ["numpy"]) != base
    for name in _PACKAGES:
        other = tmp_path / name
        shutil.copytree(pyodide_dir, other)
        lock_path = other / "pyodide-lock.json"
        lock = json.loads(lock_path.read_text())
        lock["packages"][name]["sha256"] = "0" * 64
        lock_path.write_text(json.dumps(lock))
        assert bytecode_id(other, _PACKAGES) != base, name
    # What a package depends on is compiled too: its wheel is part of the key.
    deps = tmp_path / "deps"
    shutil.copytree(pyodide_dir, deps)
    lock = json.loads((deps / "pyodide-lock.json").read_text())
    lock["packages"]["ortweb"]["depends"] = [*lock["packages"]["ortweb"].get("depends", []),
                                             "micropip"]
    (deps / "pyodide-lock.json").write_text(json.dumps(lock))
    with_dep = bytecode_id(deps, _PACKAGES)
    lock["packages"]["micropip"]["sha256"] = "0" * 64
    (deps / "pyodide-lock.json").write_text(json.dumps(lock))
    assert bytecode_id(deps, _PACKAGES) != with_dep
    core = tmp_path / "core"
    shutil.copytree(pyodide_dir, core)
    with (core / "pyodide.asm.wasm").open("ab") as f:
        f.write(b"\0")
    assert bytecode_id(core, _PACKAGES) != base


def test_no_browser_gives_a_reason_not_an_error(pyodide_dir: Path, tmp_path: Path) -> None:
    made = make_bytecode(pyodide_dir, _PACKAGES, tmp_path / "cache",
                         executable=str(tmp_path / "none"))
    assert made.path is None
    assert made.reason.startswith("could not compile the packages' bytecode"), made
    assert not (tmp_path / "cache").exists()


@pytest.mark.browser
def test_a_package_pyodide_cannot_load_gives_a_reason(pyodide_dir: Path,
                                                      tmp_path: Path) -> None:
    broken = tmp_path / "broken"
    shutil.copytree(pyodide_dir, broken)
    lock = json.loads((broken / "pyodide-lock.json").read_text())
    (broken / lock["packages"]["ortweb"]["file_name"]).unlink()
    made = make_bytecode(broken, _PACKAGES, tmp_path / "cache")
    assert made.path is None and "ortweb" in made.reason, made
    assert not (tmp_path / "cache").exists()


#: In the site: the PEP 552 flags of the ``.pyc`` Python imported each module from
#: (-1: it wrote none), and a traceback from inside numpy.
_PROBE = '''

def probe():
    import importlib
    import traceback

    flags = {}
    for name in ("numpy", "numpy.linalg", "numpy._core.numeric", "ortweb", "onnxruntime"):
        module = importlib.import_module(name)
        try:
            with open(module.__spec__.cached, "rb") as f:
                flags[name] = int.from_bytes(f.read()[4:8], "little")
        except OSError:
            flags[name] = -1
    try:
        np.reshape(np.arange(3), (2, 2))
    except ValueError:
        tb = traceback.format_exc()
    return {"flags": flags, "traceback": tb}
'''


@pytest.fixture(scope="module")
def browser(ortweb_runtime: Runtime) -> Browser:
    return ortweb_runtime.browser


@pytest.mark.browser
@pytest.mark.parametrize("bytecode", [True, False], ids=["bytecode", "no-bytecode"])
def test_a_site_imports_its_packages_from_the_shipped_bytecode(
        browser: Browser, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bytecode: bool) -> None:
    monkeypatch.setattr("test_site_offline.APP", APP + _PROBE)
    site = _build(tmp_path / "in", tmp_path / "site", 1, bytecode=bytecode)
    files = json.loads((site / "ortweb-manifest.json").read_text())["files"]
    assert ("ortweb/pyodide-bytecode.zip" in by_name(files)) is bytecode
    want = _native()
    with StaticServer(site) as server, SiteContext(browser, server.url) as ctx:
        # The bytecode is for later visits: a first one stores it, unused.
        with ctx.open(server.url) as first:
            assert set(first.call("probe")["flags"].values()) != {_UNCHECKED_HASH}
            first.evaluate("() => window.ortweb.offline")
        with ctx.open(server.url) as page:
            assert f"VERSION 1 {json.dumps(want[0].tolist())}" in page.output()
            np.testing.assert_array_equal(np.asarray(page.call("negate", X.tolist())), want[1])
            got = page.call("probe")
            assert not page.errors
    flags = got["flags"]
    if bytecode:
        assert set(flags.values()) == {_UNCHECKED_HASH}, flags
    else:
        # Compiled in the page: Python wrote timestamp-based caches of its own.
        assert _UNCHECKED_HASH not in flags.values(), flags
    # The sources are still there: a traceback shows numpy's own line.
    assert "fromnumeric.py" in got["traceback"] and "return " in got["traceback"], got
