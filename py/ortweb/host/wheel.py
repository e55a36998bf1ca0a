"""Build the browser wheel of ortweb and add it to a Pyodide lock file.

Standard library only: ``build.py`` loads this file by path before any virtual
environment exists. The wheel holds the runtime half of the ``ortweb`` package
(everything but the host-only subpackages) and is reproducible: same sources,
same bytes, same sha256.
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

__all__ = ["HOST_ONLY", "add_to_lock", "build_wheel", "runtime_files"]

#: Subpackages of ``ortweb`` that import Playwright, jinja2 or onnxruntime and never
#: ship to the browser.
HOST_ONLY = ("cli", "host", "testing")

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
    version = _version(package_dir)
    dist_info = f"ortweb-{version}.dist-info"
    entries: list[tuple[str, bytes]] = [
        (f"ortweb/{p.relative_to(package_dir).as_posix()}", p.read_bytes())
        for p in runtime_files(package_dir)
    ]
    entries.append((
        f"{dist_info}/METADATA",
        (
            "Metadata-Version: 2.1\nName: ortweb\n"
            f"Version: {version}\nSummary: ortweb browser runtime (Pyodide + onnxruntime-web)\n"
            "Requires-Python: >=3.11\nRequires-Dist: numpy\n"
        ).encode(),
    ))
    entries.append((
        f"{dist_info}/WHEEL",
        b"Wheel-Version: 1.0\nGenerator: ortweb build\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    ))
    entries.append((f"{dist_info}/top_level.txt", b"ortweb\n"))
    record = "\n".join(_record_line(n, d) for n, d in entries) + f"\n{dist_info}/RECORD,,\n"
    entries.append((f"{dist_info}/RECORD", record.encode()))

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in entries:
            info = zipfile.ZipInfo(name, date_time=_EPOCH)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            zf.writestr(info, data)
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / f"ortweb-{version}-py3-none-any.whl"
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


def add_to_lock(official_lock: Path, wheel: Path, out_lock: Path) -> dict[str, object]:
    """Write ``out_lock``: the official Pyodide lock plus an ``ortweb`` entry for ``wheel``.

    ``info.version`` stays the official one: Pyodide refuses a lock whose version
    differs from its own. Returns the ortweb entry.
    """
    lock = json.loads(official_lock.read_text())
    version = wheel.name.split("-")[1]
    entry: dict[str, object] = {
        "name": "ortweb",
        "version": version,
        "file_name": wheel.name,
        "install_dir": "site",
        "sha256": hashlib.sha256(wheel.read_bytes()).hexdigest(),
        "package_type": "package",
        "imports": ["ortweb"],
        "depends": ["numpy"],
        "unvendored_tests": False,
        "shared_library": False,
    }
    lock["packages"]["ortweb"] = entry
    text = json.dumps(lock, indent=1, sort_keys=True)
    if not out_lock.exists() or out_lock.read_text() != text:
        _write_atomically(out_lock, text.encode())
    return entry


if __name__ == "__main__":  # pragma: no cover - used by hand
    import sys

    pkg = Path(__file__).resolve().parents[1]
    print(build_wheel(pkg, Path(sys.argv[1]) if len(sys.argv) > 1 else Path("dist")))
