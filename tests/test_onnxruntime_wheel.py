"""The drop-in ``onnxruntime`` wheel: contents, reproducibility, METADATA, lock entries;
its compatibility table against native onnxruntime; the docs' rendering of that table.

All on the host: the page side is tests/test_onnxruntime_compat.py.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import json
import subprocess
import sys
import tomllib
import zipfile
from email.parser import Parser
from pathlib import Path
from types import ModuleType

import onnxruntime as native
import pytest
from packaging.specifiers import SpecifierSet

from ortweb.host.build.assets import find_assets
from ortweb.host.build.wheel import (
    COMPAT_NAME,
    add_to_lock,
    build_compat_wheel,
    build_wheel,
    compat_files,
)
from ortweb.host.docs.generated import compat_table_module, expand

ROOT = Path(__file__).resolve().parents[1]
COMPAT = ROOT / "py" / "onnxruntime_compat" / "onnxruntime"


def _ort_web_versions() -> list[str]:
    manifest = json.loads((ROOT / "assets.lock.json").read_text())
    return [p["version"] for p in manifest["npm"] if p["name"] == "onnxruntime-web"]


def _ort_web_version() -> str:
    return _ort_web_versions()[0]  # the default pin


VERSION = _ort_web_version()
DIST_INFO = f"onnxruntime-{VERSION}.dist-info"


def _table_module() -> ModuleType:
    return compat_table_module(ROOT)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_compat_wheel(COMPAT, tmp_path_factory.mktemp("dist"))


def _read(path: Path, name: str) -> bytes:
    with zipfile.ZipFile(path) as zf:
        return zf.read(name)


# -- the wheel ------------------------------------------------------------------------


def test_name_and_version_are_onnxruntime_web_s(wheel: Path) -> None:
    assert wheel.name == f"onnxruntime-{VERSION}-py3-none-any.whl" == (
        "onnxruntime-1.30.0-py3-none-any.whl")
    assert b'__version__ = "1.30.0"' in _read(wheel, "onnxruntime/_version.py")
    # Common requirements of projects that use onnxruntime hold.
    for spec in (">=1.17", ">=1.16.0,<2", "~=1.30"):
        assert VERSION in SpecifierSet(spec), spec


def test_the_other_pinned_onnxruntime_web_names_the_wheel(tmp_path: Path) -> None:
    # ORTWEB_ONNXRUNTIME_WEB=1.31.1 set-up: the drop-in says the version it runs on.
    assert _ort_web_versions() == ["1.30.0", "1.31.1"]
    other = build_compat_wheel(COMPAT, tmp_path, "1.31.1")
    assert other.name == "onnxruntime-1.31.1-py3-none-any.whl"
    assert b'__version__ = "1.31.1"' in _read(other, "onnxruntime/_version.py")
    meta = Parser().parsestr(_read(other, "onnxruntime-1.31.1.dist-info/METADATA").decode())
    assert meta["Version"] == "1.31.1"


def test_contents_are_the_drop_in_only(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        infos = zf.infolist()
    expected = {f"onnxruntime/{p.relative_to(COMPAT).as_posix()}" for p in compat_files(COMPAT)}
    assert {n for n in names if not n.startswith(DIST_INFO)} == expected
    assert "onnxruntime/__init__.py" in expected and "onnxruntime/_compat_table.py" in expected
    assert "onnxruntime/capi/onnxruntime_pybind11_state.py" in expected
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]
    assert {i.date_time for i in infos} == {(1980, 1, 1, 0, 0, 0)}
    assert _read(wheel, f"{DIST_INFO}/top_level.txt") == b"onnxruntime\n"


def test_metadata(wheel: Path) -> None:
    meta = Parser().parsestr(_read(wheel, f"{DIST_INFO}/METADATA").decode())
    assert meta["Name"] == "onnxruntime" and meta["Version"] == VERSION
    requires = meta.get_all("Requires-Dist")
    assert requires is not None and sorted(requires) == ["numpy", "ortweb"]
    assert b"Tag: py3-none-any" in _read(wheel, f"{DIST_INFO}/WHEEL")


def test_record_matches_every_file(wheel: Path) -> None:
    rows = list(csv.reader(io.StringIO(_read(wheel, f"{DIST_INFO}/RECORD").decode())))
    with zipfile.ZipFile(wheel) as zf:
        assert sorted(r[0] for r in rows) == sorted(zf.namelist())
        for name, digest, size in rows:
            if name.endswith("RECORD"):
                continue
            data = zf.read(name)
            want = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
            assert digest == f"sha256={want.decode()}" and int(size) == len(data), name


def test_reproducible(tmp_path: Path, wheel: Path) -> None:
    again = build_compat_wheel(COMPAT, tmp_path / "a")
    assert again.read_bytes() == wheel.read_bytes()
    mtime = again.stat().st_mtime_ns
    build_compat_wheel(COMPAT, tmp_path / "a")
    assert again.stat().st_mtime_ns == mtime  # unchanged bytes are not rewritten


def test_version_line_matches_onnxruntime_web() -> None:
    # The source's default is the default pin (the wheel builder writes the one set up).
    assert f'__version__ = "{VERSION}"' in (COMPAT / "_version.py").read_text()


# -- the lock -------------------------------------------------------------------------


def _closure(lock: dict, name: str, path: tuple[str, ...] = ()) -> set[str]:
    assert name not in path, f"dependency cycle {[*path, name]}: Pyodide 0.27 would hang"
    found = {name}
    for dep in lock["packages"][name]["depends"]:
        found |= _closure(lock, dep, (*path, name))
    return found


def test_lock_entries(tmp_path: Path, wheel: Path) -> None:
    official = find_assets().pyodide / "pyodide-lock.official.json"
    ortweb_wheel = build_wheel(ROOT / "py" / "ortweb", tmp_path)
    out = tmp_path / "lock.json"
    entry = add_to_lock(official, ortweb_wheel, out, wheel)
    lock = json.loads(out.read_text())
    assert lock["packages"]["ortweb"] == entry
    assert entry["depends"] == ["numpy", "onnxruntime"]
    compat = lock["packages"][COMPAT_NAME]
    assert compat["file_name"] == wheel.name and compat["version"] == VERSION
    assert compat["sha256"] == hashlib.sha256(wheel.read_bytes()).hexdigest()
    assert compat["imports"] == ["onnxruntime"] and compat["depends"] == ["numpy"]
    # Every page loads ortweb, so every page gets onnxruntime, without a cycle.
    assert {"numpy", "ortweb", "onnxruntime"} <= _closure(lock, "ortweb")
    assert lock["info"] == json.loads(official.read_text())["info"]


def test_setup_lock_has_the_drop_in() -> None:
    assets = find_assets()  # rebuilds both wheels and the lock from the sources
    lock = json.loads((assets.pyodide / "pyodide-lock.json").read_text())
    entry = lock["packages"]["onnxruntime"]
    built = assets.pyodide / entry["file_name"]
    assert hashlib.sha256(built.read_bytes()).hexdigest() == entry["sha256"]
    assert "onnxruntime" in lock["packages"]["ortweb"]["depends"]


# -- the host keeps the real onnxruntime --------------------------------------------


def test_host_imports_native_onnxruntime() -> None:
    assert "site-packages" in Path(native.__file__).parts
    assert not Path(native.__file__).is_relative_to(ROOT / "py")
    find = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    assert find["find"]["include"] == ["ortweb*"]
    out = subprocess.run([sys.executable, "-c", "import onnxruntime; print(onnxruntime.__file__)"],
                         capture_output=True, text=True, check=True, cwd=ROOT / "py")
    assert "site-packages" in out.stdout


# -- the compatibility table ----------------------------------------------------------


def _public(obj: object) -> set[str]:
    return {n for n in dir(obj) if not n.startswith("_")}


def _native_names() -> set[str]:
    table = _table_module()
    names = _public(native)
    for cls in table.CLASSES:
        names |= {f"{cls}.{m}" for m in _public(getattr(native, cls))}
    state = native.capi.onnxruntime_pybind11_state
    names |= {f"capi.onnxruntime_pybind11_state.{n}" for n in _public(state)
              if isinstance(getattr(state, n), type) and issubclass(getattr(state, n), Exception)}
    return names


def test_table_covers_every_native_name() -> None:
    table = _table_module()
    native_names = _native_names()
    missing = sorted(native_names - set(table.TABLE))
    stale = sorted(set(table.TABLE) - native_names)
    assert not missing, f"native onnxruntime names the table does not list: {missing}"
    assert not stale, f"table entries native onnxruntime does not have: {stale}"
    for name in table.TABLE:
        state, note = table.status(name)
        assert state in table.STATUSES
        assert state == "provided" or note, f"{name}: {state} without a reason"


def test_exceptions_table_matches_ortweb_errors() -> None:
    import ortweb.errors

    table = _table_module()
    state = native.capi.onnxruntime_pybind11_state
    assert set(table.EXCEPTIONS) == {n for n in _public(state)
                                     if isinstance(getattr(state, n), type)
                                     and issubclass(getattr(state, n), Exception)}
    for target in table.EXCEPTIONS.values():
        assert issubclass(getattr(ortweb.errors, target), ortweb.errors.OrtWebError)


def test_all_providers_are_native_s() -> None:
    # The drop-in imports on the host too (ortweb does); run it apart from native's.
    code = ("import json, sys; sys.path.insert(0, sys.argv[1]); import onnxruntime as d; "
            "print(json.dumps([d.__file__, d.get_all_providers()]))")
    out = subprocess.run([sys.executable, "-c", code, str(COMPAT.parent)],
                         capture_output=True, text=True, check=True)
    where, providers = json.loads(out.stdout)
    assert Path(where).is_relative_to(COMPAT)
    assert providers == native.get_all_providers()


def test_the_docs_page_renders_the_table() -> None:
    page = ROOT / "docs" / "pages" / "onnxruntime.md"
    text = page.read_text()
    assert text.count("<!-- generated: onnxruntime-compat -->") == 1
    assert _table_module().render_markdown() in expand(text, ROOT, str(page))


def test_render_names_every_entry() -> None:
    table = _table_module()
    text = table.render_markdown()
    for name in table.TABLE:
        assert name.rsplit(".", 1)[-1] in text, name
