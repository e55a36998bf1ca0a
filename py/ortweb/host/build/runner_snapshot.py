"""The interpreter snapshot that runner pages boot from.

Every page the host tools drive (``web/runner.html``: ``ortweb run``/``exec``,
conformance, bench, the pytest plugin) restores Pyodide's interpreter from a memory
snapshot instead of initialising Python, as a site's pages do
(:mod:`.pyodide_snapshot`, the same maker). It holds the standard-library modules that
numpy and ortweb import, already imported; numpy and ortweb themselves load as usual
(Pyodide 0.27.7 cannot snapshot packages with shared libraries).

Beside it, the bytecode of numpy, ortweb and the drop-in ``onnxruntime``
(:mod:`.pyodide_bytecode`, as a site ships it): unpacked beside their sources once the
packages load, so that importing them compiles nothing. And the files their wheels
unpack to, recorded in a page as ``loadPackage`` wrote them (``bridge_js/unpacking.js``,
the record a site keeps after a first visit): a runner page writes them from there
instead of unzipping the wheels in Python, which Pyodide does slowly right after a
restore; the wheels are still downloaded and checked, and their shared libraries
loaded, as usual.

The snapshot is made once per key (:func:`~.pyodide_snapshot.snapshot_id`: Pyodide's
core files, numpy's wheel and the list of modules), the bytecode once per
:func:`~.pyodide_bytecode.bytecode_id` (which holds ortweb's wheel: a new one is made
in headless Chromium after each edit of ortweb's runtime, a few seconds, and then
serves every page until the next), the unpacked files with it, all kept under
``build/snapshots/``; the folder :func:`runner_snapshot` gives holds them with a
``snapshot.json`` that tells the page their files and the JSPI API. The snapshot's key
does not hold ortweb's own wheel, so editing ortweb only makes a new snapshot when the
set of standard-library modules it imports changes. Without bytecode or unpacked
files (none could be made) the folder still holds the snapshot, and
``snapshot.json`` says why there are none. Making a folder drops all but the newest
three, and the records none of them holds (13 MB each).

A page boots as usual when there is none (no Chromium could make it, or
``ORTWEB_SNAPSHOT=0``), when it is asked for a fresh boot (``?snapshot=0``,
:class:`~ortweb.host.browser.PyodidePage`'s ``snapshot=False``), when its browser's
JSPI differs, or when the snapshot fails to restore (said on the console).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Final

from .headless import Made, made_in_page
from .offline_packages import PackageError
from .pyodide_bytecode import bytecode_id, make_bytecode
from .pyodide_snapshot import JSPI, Snapshot, make_snapshot, module_imports, snapshot_id
from .wheel import compat_files, runtime_files, write_atomically

try:
    import fcntl
except ImportError:  # Windows: concurrent makers each make it, and one rename wins
    fcntl = None  # type: ignore[assignment]

if TYPE_CHECKING:
    from .assets import Assets

__all__ = ["SNAPSHOT_PREFIX", "runner_imports", "runner_snapshot"]

#: Where the local server offers the folder (``web/runner.js`` reads it there).
SNAPSHOT_PREFIX: Final = "/snapshot/"
#: The snapshot's name in that folder.
_FILE: Final = "pyodide.snapshot.gz"
#: The bytecode's name in that folder.
_BYTECODE: Final = "bytecode.zip"
#: The unpacked files' name in that folder.
_UNPACKED: Final = "unpacked.bin"
#: Where :func:`runner_imports` keeps its last answer, in the snapshots' folder.
_IMPORTS_MEMO: Final = "runner-imports.json"
#: The Pyodide packages imported into the snapshot (without ortweb, whose wheel
#: changes with each edit).
_PACKAGES: Final = ("numpy",)
#: The packages every runner page loads (``bootPyodide``'s default), whose bytecode
#: it unpacks: with what they depend on (the drop-in ``onnxruntime``).
_BYTECODE_PACKAGES: Final = ("numpy", "ortweb")
#: How many runner folders :func:`runner_snapshot` keeps, the one it made included.
_KEPT: Final = 3
#: Part of the unpacked files' key: made another way, they have another name.
_UNPACKED_VERSION: Final = "runner unpacked 1"
#: In the maker's page (Pyodide's folder at /pyodide/, the bridge's at /bridge/): a
#: fresh Pyodide loads ``packages`` with their unpacking recorded, and the record is
#: what the page made.
_MAKE_UNPACKED: Final = """async (packages) => {
  const { loadPyodide } = await import('/pyodide/pyodide.mjs');
  const { encodeUnpacked, unpackWith } = await import('/bridge/unpacking.js');
  const pyodide = await loadPyodide({ indexURL: new URL('/pyodide/', location.href).href,
    stdout: () => {}, stderr: () => {} });
  const unpacking = unpackWith(pyodide, null);
  const problems = [];
  try {
    await pyodide.loadPackage(packages, { messageCallback: () => {},
      errorCallback: (msg) => problems.push(msg), checkIntegrity: true });
  } finally {
    unpacking.restore();
  }
  const missing = packages.filter((p) => !(p in pyodide.loadedPackages));
  if (missing.length || problems.length) {
    return `Pyodide could not load ${missing.join(', ')}: ${problems.join(' | ')}`;
  }
  globalThis.ortwebMade = encodeUnpacked(unpacking.recorded);
  return globalThis.ortwebMade.length;
}"""


def runner_imports(assets: Assets, cache: Path | None = None) -> list[str]:
    """The standard-library modules ortweb and the drop-in ``onnxruntime`` import by
    name, sorted: imported into the snapshot first.

    With ``cache`` (a folder), the answer is kept there under the hash of the sources
    read, so that a process that starts a runner does not parse them again until
    one changes.
    """
    files = runtime_files(assets.package_dir)
    if assets.compat_dir.is_dir():
        files += compat_files(assets.compat_dir)
    sources = {path: path.read_bytes() for path in files if path.suffix == ".py"}
    digest = hashlib.sha256(b"runner imports 1")
    for path, body in sorted(sources.items()):
        digest.update(f"\0{path.name}\0{len(body)}\0".encode())
        digest.update(body)
    memo = cache / _IMPORTS_MEMO if cache is not None else None
    if memo is not None:
        try:
            kept = json.loads(memo.read_text())
            if kept["key"] == digest.hexdigest():
                return list(kept["imports"])
        except (OSError, ValueError, KeyError, TypeError):
            pass  # none kept, or unreadable: parsed again below
    names = {name.split(".")[0] for body in sources.values()
             for name in module_imports(body.decode("utf-8"))}
    found = sorted(names & set(sys.stdlib_module_names))
    if memo is not None:
        try:
            memo.parent.mkdir(parents=True, exist_ok=True)
            write_atomically(memo, json.dumps({"key": digest.hexdigest(),
                                               "imports": found}).encode())
        except OSError:
            pass  # a read-only build folder: parsed again next time
    return found


def runner_snapshot(assets: Assets) -> Snapshot:
    """The folder to serve at :data:`SNAPSHOT_PREFIX` (``path``), made if needed, or
    why there is none (``reason``).

    Several processes may ask at once (pytest-xdist's workers): one makes it while
    the others wait for it.
    """
    if os.environ.get("ORTWEB_SNAPSHOT", "1") == "0":
        return Snapshot(None, "ORTWEB_SNAPSHOT=0")
    cache = assets.root / "build" / "snapshots"
    imports = runner_imports(assets, cache)
    try:
        key = snapshot_id(assets.pyodide, _PACKAGES, imports)
        code = bytecode_id(assets.pyodide, list(_BYTECODE_PACKAGES))
        both = hashlib.sha256(f"{key} {code} {_UNPACKED_VERSION}".encode()).hexdigest()
    except (OSError, ValueError, KeyError, PackageError) as exc:
        return Snapshot(None, f"Pyodide's folder is not whole: {exc}")
    folder = cache / f"runner-{both[:16]}"
    if (folder / "snapshot.json").is_file():
        return Snapshot(folder)
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / ".runner.lock", "w") as lock:
        if fcntl is not None:
            fcntl.flock(lock, fcntl.LOCK_EX)
        if (folder / "snapshot.json").is_file():
            return Snapshot(folder)
        made = make_snapshot(assets.pyodide, cache, packages=_PACKAGES, imports=imports)
        if made.path is None:
            return made
        bytecode = make_bytecode(assets.pyodide, list(_BYTECODE_PACKAGES), cache)
        unpacked = _make_unpacked(assets, code, cache)
        making = folder.with_name(folder.name + ".making")
        shutil.rmtree(making, ignore_errors=True)
        making.mkdir()
        _place(made.path, making / _FILE)
        about = {"file": _FILE, "jspi": JSPI, "key": key, "bytecode": None,
                 "bytecode_reason": bytecode.reason}
        if bytecode.path is not None:
            _place(bytecode.path, making / _BYTECODE)
            about["bytecode"] = _BYTECODE
        about.update(unpacked=None, unpacked_reason=unpacked.reason)
        if unpacked.path is not None:
            _place(unpacked.path, making / _UNPACKED)
            about["unpacked"] = _UNPACKED
        (making / "snapshot.json").write_text(json.dumps(about))
        making.rename(folder)
        _prune(cache, folder)
    return Snapshot(folder)


def _prune(cache: Path, made: Path) -> None:
    """Drop all but the newest :data:`_KEPT` runner folders, and the records no folder
    links any more: each new ortweb wheel makes a folder and a record (13 MB). A page
    whose folder went meanwhile boots as usual (``snapshot.json`` not found)."""
    folders = sorted((p for p in cache.glob("runner-*") if p.is_dir() and p != made
                      and not p.name.endswith(".making")),
                     key=lambda p: p.stat().st_mtime, reverse=True)
    for old in folders[_KEPT - 1:]:
        shutil.rmtree(old, ignore_errors=True)
    for record in cache.glob("unpacked-*.bin"):
        try:
            if record.stat().st_nlink == 1:  # in no runner folder (or on a file system
                record.unlink()              # without links: made again when asked)
        except OSError:
            pass


def _make_unpacked(assets: Assets, code: str, cache: Path) -> Made:
    """The record of what loading the runner's packages unpacks (``bridge_js/
    unpacking.js``), made once per ``code`` (their bytecode's key: the same wheels)."""
    key = hashlib.sha256(f"{_UNPACKED_VERSION} {code}".encode()).hexdigest()
    return made_in_page(cache / f"unpacked-{key}.bin",
                        {"/pyodide/": assets.pyodide, "/bridge/": assets.bridge},
                        _MAKE_UNPACKED, list(_BYTECODE_PACKAGES),
                        "record the packages' unpacking")


def _place(made: Path, to: Path) -> None:
    """A kept file in the served folder: linked where the file system allows."""
    try:
        os.link(made, to)
    except OSError:
        shutil.copyfile(made, to)
