"""Build the browser wheels of ortweb and add them to a Pyodide lock file.

Standard library only: ``build.py`` loads this file by path before any virtual
environment exists. Two wheels, both reproducible (same sources, same bytes, same
sha256):

- ``ortweb-<version>``: the runtime half of the ``ortweb`` package (everything but
  the host-only subpackages);
- ``onnxruntime-<onnxruntime-web version>``: the drop-in ``onnxruntime`` package
  (``py/onnxruntime_compat/onnxruntime``), onnxruntime's Python API on top of ortweb,
  so ``import onnxruntime`` works in every page that loads ortweb. Its source lives
  outside ``py/`` proper so it never shadows the real onnxruntime on the host.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import os
import re
import zipfile
from pathlib import Path

__all__ = [
    "COMPAT_NAME",
    "HOST_ONLY",
    "add_to_lock",
    "build_compat_wheel",
    "build_wheel",
    "compat_files",
    "runtime_files",
]

#: Subpackages of ``ortweb`` that import Playwright, jinja2 or onnxruntime and never
#: ship to the browser.
HOST_ONLY = ("cli", "host", "testing")

#: The distribution and import name of the drop-in package.
COMPAT_NAME = "onnxruntime"

_EPOCH = (1980, 1, 1, 0, 0, 0)


def _version(package_dir: Path) -> str:
    found = re.search(r'^__version__ = "([^"]+)"', (package_dir / "__init__.py").read_text(), re.M)
    if not found:
        raise RuntimeError(f"no __version__ in {package_dir / '__init__.py'}")
    return found.group(1)


def runtime_files(package_dir: Path) -> list[Path]:
    """The files of the browser half, sorted (host-only subpackages left out)."""
    files = []
    for path in sorted(package_dir.rglob("*")):
        rel = path.relative_to(package_dir)
        if not path.is_file() or "__pycache__" in rel.parts or path.suffix == ".pyc":
            continue
        if rel.parts[0] in HOST_ONLY:
            continue
        files.append(path)
    return files


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def build_wheel(package_dir: Path, out_dir: Path) -> Path:
    """Write ``ortweb-<version>-py3-none-any.whl`` into ``out_dir``; returns its path.

    The file is only rewritten when its bytes change, so its mtime tells when the
    runtime sources last changed.
    """
    files = [
        (f"ortweb/{p.relative_to(package_dir).as_posix()}", p.read_bytes())
        for p in runtime_files(package_dir)
    ]
    return _write_wheel(
        "ortweb", _version(package_dir), files, out_dir,
        summary="ortweb browser runtime (Pyodide + onnxruntime-web)",
        requires=["numpy"],
    )


def compat_files(compat_dir: Path) -> list[Path]:
    """The files of the drop-in ``onnxruntime`` package, sorted."""
    return [p for p in sorted(compat_dir.rglob("*"))
            if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"]


def build_compat_wheel(compat_dir: Path, out_dir: Path) -> Path:
    """Write ``onnxruntime-<version>-py3-none-any.whl``, the drop-in, into ``out_dir``.

    Its version is the onnxruntime-web version it runs on (the package's
    ``__version__``), so requirements such as ``onnxruntime>=1.17`` are met.
    """
    files = [
        (f"{COMPAT_NAME}/{p.relative_to(compat_dir).as_posix()}", p.read_bytes())
        for p in compat_files(compat_dir)
    ]
    return _write_wheel(
        COMPAT_NAME, _version(compat_dir), files, out_dir,
        summary="onnxruntime's Python API in the browser, on ortweb and onnxruntime-web",
        requires=["ortweb", "numpy"],
    )


def _write_wheel(
    name: str,
    version: str,
    files: list[tuple[str, bytes]],
    out_dir: Path,
    *,
    summary: str,
    requires: list[str],
) -> Path:
    dist_info = f"{name}-{version}.dist-info"
    entries = list(files)
    entries.append((
        f"{dist_info}/METADATA",
        (
            f"Metadata-Version: 2.1\nName: {name}\n"
            f"Version: {version}\nSummary: {summary}\n"
            "Requires-Python: >=3.11\n" + "".join(f"Requires-Dist: {r}\n" for r in requires)
        ).encode(),
    ))
    entries.append((
        f"{dist_info}/WHEEL",
        b"Wheel-Version: 1.0\nGenerator: ortweb build\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    ))
    entries.append((f"{dist_info}/top_level.txt", f"{name}\n".encode()))
    record = "\n".join(_record_line(n, d) for n, d in entries) + f"\n{dist_info}/RECORD,,\n"
    entries.append((f"{dist_info}/RECORD", record.encode()))

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
        for entry_name, data in entries:
            info = zipfile.ZipInfo(entry_name, date_time=_EPOCH)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            zf.writestr(info, data)
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / f"{name}-{version}-py3-none-any.whl"
    data = buffer.getvalue()
    if not target.exists() or target.read_bytes() != data:
        _write_atomically(target, data)
    return target


def _write_atomically(target: Path, data: bytes) -> None:
    # A page of another process (a test worker, a served site) may be downloading
    # the file right now: it must see the old bytes or the new, never half of each.
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, target)


def _lock_entry(name: str, wheel: Path, depends: list[str]) -> dict[str, object]:
    return {
        "name": name,
        "version": wheel.name.split("-")[1],
        "file_name": wheel.name,
        "install_dir": "site",
        "sha256": hashlib.sha256(wheel.read_bytes()).hexdigest(),
        "package_type": "package",
        "imports": [name],
        "depends": depends,
        "unvendored_tests": False,
        "shared_library": False,
    }


def add_to_lock(
    official_lock: Path, wheel: Path, out_lock: Path, compat_wheel: Path | None = None
) -> dict[str, object]:
    """Write ``out_lock``: the official Pyodide lock plus an ``ortweb`` entry for ``wheel``.

    With ``compat_wheel``, an ``onnxruntime`` entry too, and ortweb's entry depends
    on it: every page loads ortweb, so every page then has ``import onnxruntime``
    (page runners, ``ortweb site``, JupyterLite and the pytest plugin all take the
    lock's dependency closure). The edge runs ortweb → onnxruntime only: Pyodide
    0.27's loader waits for each package's dependencies before installing it, so a
    cycle would never finish loading; the drop-in's own METADATA still requires ortweb.

    ``info.version`` stays the official one: Pyodide refuses a lock whose version
    differs from its own. Returns the ortweb entry.
    """
    lock = json.loads(official_lock.read_text())
    depends = ["numpy"]
    if compat_wheel is not None:
        lock["packages"][COMPAT_NAME] = _lock_entry(COMPAT_NAME, compat_wheel, ["numpy"])
        depends.append(COMPAT_NAME)
    entry = _lock_entry("ortweb", wheel, depends)
    lock["packages"]["ortweb"] = entry
    text = json.dumps(lock, indent=1, sort_keys=True)
    if not out_lock.exists() or out_lock.read_text() != text:
        _write_atomically(out_lock, text.encode())
    return entry


if __name__ == "__main__":  # pragma: no cover - used by hand
    import sys

    pkg = Path(__file__).resolve().parents[1]
    print(build_wheel(pkg, Path(sys.argv[1]) if len(sys.argv) > 1 else Path("dist")))
