"""Build the browser wheels of ortweb with setuptools and add them to a Pyodide lock.

Two wheels, both reproducible (same sources and setuptools, same bytes, same sha256):

- ``ortweb-<version>``: the runtime half of the ``ortweb`` package (everything but
  the host-only subpackages);
- ``onnxruntime-<onnxruntime-web version>``: the drop-in ``onnxruntime`` package
  (``py/onnxruntime_compat/onnxruntime``), onnxruntime's Python API on top of ortweb,
  so ``import onnxruntime`` works in every page that loads ortweb. Its source lives
  outside ``py/`` proper so it never shadows the real onnxruntime on the host.

setuptools builds each (its PEP 517 hook) from a staging folder with the files and a
generated ``pyproject.toml``; ``SOURCE_DATE_EPOCH`` pins the zip's timestamps to
1980-01-01. pyodide-lock writes the lock entries. Both come with the ``host`` extra:
``build.py`` runs this file with the venv's Python (``python -P build/wheel.py ROOT``).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

__all__ = [
    "COMPAT_NAME",
    "HOST_ONLY",
    "add_to_lock",
    "build_compat_wheel",
    "build_wheel",
    "compat_files",
    "ort_web_version",
    "refresh",
    "runtime_files",
    "write_atomically",
]

#: Subpackages of ``ortweb`` that import Playwright, jinja2 or onnxruntime and never
#: ship to the browser.
HOST_ONLY = ("cli", "host", "testing")

#: The distribution and import name of the drop-in package.
COMPAT_NAME = "onnxruntime"

# The earliest time a zip can hold: the wheels then do not depend on the clock.
_SOURCE_DATE_EPOCH = "315532800"

_PYPROJECT = """\
[build-system]
requires = ["setuptools"]
build-backend = "setuptools.build_meta"

[project]
name = "{name}"
version = "{version}"
description = "{summary}"
requires-python = ">=3.11"
dependencies = {requires}

[tool.setuptools]
packages = {packages}
include-package-data = false

[tool.setuptools.package-data]
"*" = ["*"]
"""

# The drop-in's ``_version.py`` in its wheel.
_VERSION_PY = '''"""The drop-in's version: that of the onnxruntime-web it runs on (written by
ortweb's wheel builder from the onnxruntime-web that set-up unpacked)."""

__version__ = "{version}"
'''

# The hook runs in a child: it changes directory, which threads of this process
# (a test run, a server) must not see.
_HOOK = "import sys, setuptools.build_meta as b; print(b.build_wheel(sys.argv[1]))"


def _version(package_dir: Path, name: str = "__init__.py") -> str:
    found = re.search(r'^__version__ = "([^"]+)"', (package_dir / name).read_text(), re.M)
    if not found:
        raise RuntimeError(f"no __version__ in {package_dir / name}")
    return found.group(1)


def _sources(package_dir: Path) -> list[Path]:
    return [p for p in sorted(package_dir.rglob("*"))
            if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"]


def runtime_files(package_dir: Path) -> list[Path]:
    """The files of the browser half, sorted (host-only subpackages left out)."""
    return [p for p in _sources(package_dir)
            if p.relative_to(package_dir).parts[0] not in HOST_ONLY]


def compat_files(compat_dir: Path) -> list[Path]:
    """The files of the drop-in ``onnxruntime`` package, sorted."""
    return _sources(compat_dir)


def build_wheel(package_dir: Path, out_dir: Path) -> Path:
    """Write ``ortweb-<version>-py3-none-any.whl`` into ``out_dir``; returns its path.

    The file is only rewritten when its bytes change, so its mtime tells when the
    runtime sources last changed.
    """
    return _build("ortweb", _version(package_dir), package_dir, runtime_files(package_dir),
                  out_dir, summary="ortweb browser runtime (Pyodide + onnxruntime-web)",
                  requires=["numpy"])


def build_compat_wheel(compat_dir: Path, out_dir: Path, version: str | None = None) -> Path:
    """Write ``onnxruntime-<version>-py3-none-any.whl``, the drop-in, into ``out_dir``.

    Its version is the onnxruntime-web version it runs on, so requirements such as
    ``onnxruntime>=1.17`` are met: ``version`` (the unpacked onnxruntime-web's, see
    :func:`ort_web_version`) is written into the wheel's ``_version.py``; without it,
    the source's default.
    """
    version = version or _version(compat_dir, "_version.py")
    generated = {f"{COMPAT_NAME}/_version.py": _VERSION_PY.format(version=version).encode()}
    return _build(COMPAT_NAME, version, compat_dir, compat_files(compat_dir), out_dir,
                  summary="onnxruntime's Python API in the browser, on ortweb and "
                  "onnxruntime-web", requires=["ortweb", "numpy"], generated=generated)


def ort_web_version(root: Path) -> str | None:
    """The version of the onnxruntime-web set-up unpacked under ``root``, or None."""
    package = root / "build" / "npm" / "onnxruntime-web" / "package.json"
    return str(json.loads(package.read_text())["version"]) if package.is_file() else None


def _build(name: str, version: str, package_dir: Path, files: list[Path], out_dir: Path, *,
           summary: str, requires: list[str], generated: dict[str, bytes] | None = None) -> Path:
    rels = [f"{name}/{p.relative_to(package_dir).as_posix()}" for p in files]
    # What each member holds: its source file's bytes, or the generated bytes given.
    contents = {rel: (generated or {}).get(rel) or path.read_bytes()
                for rel, path in zip(rels, files, strict=True)}
    packages = sorted({rel.rsplit("/", 1)[0].replace("/", ".") for rel in rels})
    pyproject = _PYPROJECT.format(name=name, version=version, summary=summary,
                                  requires=json.dumps(requires), packages=json.dumps(packages))
    key = _inputs("setuptools", pyproject.encode(),
                  *(f"{rel}\0".encode() + data for rel, data in contents.items()))
    target = out_dir / f"{name}-{version}-py3-none-any.whl"
    # Building takes a second or two; the stamp skips it when nothing changed.
    stamp = out_dir / f".{target.name}.inputs"
    if target.is_file() and stamp.is_file() and stamp.read_text() == _stamp(key, target):
        return target
    with tempfile.TemporaryDirectory(prefix="ortweb-wheel-") as tmp:
        stage, dist = Path(tmp) / "src", Path(tmp) / "dist"
        for rel, data in contents.items():
            (stage / rel).parent.mkdir(parents=True, exist_ok=True)
            (stage / rel).write_bytes(data)
            (stage / rel).chmod(0o644)  # the zip records modes: they must not be the umask's
        (stage / "pyproject.toml").write_text(pyproject)
        done = subprocess.run([sys.executable, "-c", _HOOK, str(dist)], cwd=stage,
                              env={**os.environ, "SOURCE_DATE_EPOCH": _SOURCE_DATE_EPOCH},
                              umask=0o022 if os.name == "posix" else -1,
                              capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"setuptools could not build the {name} wheel (is ortweb's host "
                               f"extra installed?):\n{done.stderr[-3000:]}")
        data = (dist / done.stdout.strip().splitlines()[-1]).read_bytes()
    out_dir.mkdir(parents=True, exist_ok=True)
    if not target.exists() or target.read_bytes() != data:
        write_atomically(target, data)
    write_atomically(stamp, _stamp(key, target).encode())
    return target


def _inputs(tool: str, *parts: bytes) -> str:
    """A digest of what a build reads: the tool's version, this file, ``parts``."""
    key = hashlib.sha256(f"{tool} {importlib.metadata.version(tool)}\0".encode())
    for part in (Path(__file__).read_bytes(), *parts):
        key.update(hashlib.sha256(part).digest())
    return key.hexdigest()


def _stamp(inputs: str, target: Path) -> str:
    return f"{inputs} {hashlib.sha256(target.read_bytes()).hexdigest()}\n"


def write_atomically(target: Path, data: bytes) -> None:
    """Replace ``target`` with ``data`` in one step."""
    # A page of another process (a test worker, a served site) may be downloading
    # the file right now: it must see the old bytes or the new, never half of each.
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, target)


def add_to_lock(
    official_lock: Path, wheel: Path, out_lock: Path, compat_wheel: Path | None = None
) -> dict[str, Any]:
    """Write ``out_lock``: the official Pyodide lock plus an ``ortweb`` entry for ``wheel``.

    With ``compat_wheel``, an ``onnxruntime`` entry too, and ortweb's entry depends
    on it: every page loads ortweb, so every page then has ``import onnxruntime``
    (page runners, ``ortweb site``, JupyterLite and the pytest plugin all take the
    lock's dependency closure). The edge runs ortweb → onnxruntime only: Pyodide
    0.27's loader waits for each package's dependencies before installing it, so a
    cycle would never finish loading; the drop-in's own METADATA still requires ortweb.

    pyodide-lock reads the official lock (``info`` and its entries unchanged, so
    ``info.version`` stays the one Pyodide checks against its own) and makes the
    entries from the wheels. Returns the ortweb entry.
    """
    wheels = [wheel, *([compat_wheel] if compat_wheel else [])]
    key = _inputs("pyodide-lock", official_lock.read_bytes(),
                  *(f"{path.name}\0".encode() + path.read_bytes() for path in wheels))
    stamp = out_lock.with_name(f".{out_lock.name}.inputs")
    if out_lock.is_file() and stamp.is_file() and stamp.read_text() == _stamp(key, out_lock):
        entry: dict[str, Any] = json.loads(out_lock.read_text())["packages"]["ortweb"]
        return entry  # importing pydantic alone costs more than the check
    from pyodide_lock import PyodideLockSpec
    from pyodide_lock.utils import add_wheels_to_spec

    spec = PyodideLockSpec.from_json(official_lock)
    for path in wheels:  # ortweb first: the drop-in requires it
        spec = add_wheels_to_spec(spec, [path], base_path=path.parent)
    if compat_wheel is not None:
        compat = spec.packages[COMPAT_NAME]
        compat.depends = [d for d in compat.depends if d != "ortweb"]
        spec.packages["ortweb"].depends.append(COMPAT_NAME)
    with tempfile.TemporaryDirectory(dir=out_lock.parent) as tmp:
        spec.to_json(Path(tmp) / "lock.json", indent=1)
        text = (Path(tmp) / "lock.json").read_bytes()
    if not out_lock.exists() or out_lock.read_bytes() != text:
        write_atomically(out_lock, text)
    write_atomically(stamp, _stamp(key, out_lock).encode())
    return spec.packages["ortweb"].model_dump()


def refresh(package_dir: Path, compat_dir: Path | None, pyodide_dir: Path,
            ort_version: str | None = None) -> Path:
    """Rebuild both wheels into ``pyodide_dir`` and its ``pyodide-lock.json`` when their
    sources changed (the drop-in only when ``compat_dir`` is given, with ``ort_version``
    as its version); returns ortweb's."""
    built = build_wheel(package_dir, pyodide_dir)
    compat = build_compat_wheel(compat_dir, pyodide_dir, ort_version) if compat_dir else None
    add_to_lock(pyodide_dir / "pyodide-lock.official.json", built,
                pyodide_dir / "pyodide-lock.json", compat)
    return built


if __name__ == "__main__":
    # build.py set-up, with the venv's Python: python -P wheel.py ROOT
    root = Path(sys.argv[1])
    print(refresh(root / "py" / "ortweb", root / "py" / "onnxruntime_compat" / "onnxruntime",
                  root / "build" / "pyodide", ort_web_version(root)))
