"""Pyodide's memory snapshot made at build time, so a site's *first* visit skips
Python's start-up.

``ortweb site`` boots a bare Pyodide in headless Chromium (the page driver of
:mod:`ortweb.host.browser`) with ``_makeSnapshot``, takes ``makeMemorySnapshot()`` and
ships it, gzipped, as ``ortweb/pyodide-snapshot.gz`` (a site file like any other:
listed in the manifest with its sha256, checked by the page, kept by the service
worker). The page restores the interpreter from it (``loadPyodide({_loadSnapshot})``)
instead of initialising Python, on the first visit as on the next ones; numpy, ortweb
and the script's packages load as usual (Pyodide 0.27.7 cannot snapshot packages with
shared libraries, see ``web/site/snapshot.js``).

What those packages import from Python's standard library is imported *before* the
snapshot is taken (:func:`make_snapshot`'s ``packages``): ``importlib.metadata`` (which
``loadPackage`` imports), ``email``, ``decimal``, ``ctypes``, ``dataclasses`` and the
like are then already in the interpreter's memory, where each visit would otherwise
run their module code again, at the slow speed of a just-restored interpreter. The
list is found by importing the packages in a first interpreter in the same page; a
module that reaches for a part of the standard library Pyodide ships as a package of
its own (``_hashlib``, ``ssl``, ``lzma``, ``sqlite3``: absent from the snapshot's
interpreter, maybe present in the page's) is left out, with whatever imports it, so
that nothing is imported otherwise than it would be in the page.

Why a browser and not Node.js: the interpreter's memory records whether the engine
that made it has WebAssembly stack switching (JSPI), and with which API. One made in
Node 20 (none, or the old ``Suspender`` API) restores in Chromium, but there
``run_sync`` — ortweb's whole sync API — then fails or aborts Pyodide. So the
snapshot is made where JSPI has the API Chromium ships (``WebAssembly.Suspending``),
and :data:`JSPI` says so in the site's config: a browser without that API (Firefox
and Safari today) boots as usual, and a worker-mode page makes a snapshot of its own
there for the next visit.

A snapshot belongs to the exact Pyodide core files it was made with
(:data:`CORE`): one is made per set of core files and kept under ``build/snapshots/``.
Without a Chromium that starts, a site ships none (the reason is in its report).

What the page sees differs from a fresh boot in two ways, both handled there
(``web/site/python.js``): ``LANG`` is ``C.UTF-8`` in the snapshot, set to the visitor's
language as Emscripten would; the string-hash seed and ``random``'s state are the build's
(``random`` is seeded again on restore).
"""

from __future__ import annotations

import ast
import gzip
import hashlib
import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import IO, Any, Final

from .headless import Made, first_line, made_in_page
from .offline_packages import PackageError, closure

__all__ = ["CORE", "JSPI", "Snapshot", "closure_wheels", "make_snapshot", "module_imports",
           "runtime_id", "snapshot_id"]

#: Pyodide's files that decide what its interpreter's memory holds (as ``snapshot.js``).
CORE: Final = ("pyodide.mjs", "pyodide.asm.js", "pyodide.asm.wasm", "python_stdlib.zip")

#: The JSPI API of the engine the snapshot is made in; the page restores it only
#: where ``WebAssembly`` has the same (``snapshot.js``).
JSPI: Final = "Suspending"

#: In the first interpreter, before its packages load: the modules it has.
_BASE: Final = """
import json, sys
json.dumps(list(sys.modules))
"""

#: In the first interpreter, with the packages loaded: the standard-library modules
#: that loading them and importing ``IMPORTS`` added to ``BASE``, in the order they
#: were imported.
_FIND: Final = """
import json, sys
for _name in json.loads(IMPORTS):
    try:
        __import__(_name)
    except Exception:
        pass  # a package that does not import in a bare page: its modules stay out
_base = set(json.loads(BASE))
_added = [n for n in list(sys.modules) if n not in _base]
import os, sysconfig
# Pyodide's standard library is a zip (where json comes from) and a folder.
_stdlib = (os.path.dirname(os.path.dirname(json.__file__)) + "/",
           sysconfig.get_paths()["stdlib"] + "/")
_site = sysconfig.get_paths()["purelib"] + "/"
_own = {"js", "pyodide", "pyodide_js", "_pyodide", "__main__"}

def _from_stdlib(name):
    origin = str(getattr(getattr(sys.modules.get(name), "__spec__", None), "origin", None))
    return origin in ("built-in", "frozen") or (
        origin.startswith(_stdlib) and not origin.startswith(_site))

json.dumps([n for n in _added if n.split(".")[0] not in _own and _from_stdlib(n)])
"""

#: In the snapshot's interpreter: import ``PRELOAD``; the modules whose import reached
#: for one of ``UNVENDORED`` (or failed), to leave out.
_PRELOAD: Final = """
import json, sys
from importlib.abc import MetaPathFinder

class _Watch(MetaPathFinder):
    def __init__(self, names):
        self.names, self.current, self.reached = names, None, []

    def find_spec(self, fullname, path=None, target=None):
        if fullname.split(".")[0] in self.names and self.current not in self.reached:
            self.reached.append(self.current)
        return None

_watch = _Watch(set(json.loads(UNVENDORED)))
sys.meta_path.insert(0, _watch)
try:
    for _name in json.loads(PRELOAD):
        if _name in sys.modules:
            continue
        _watch.current = _name
        try:
            __import__(_name)
        except Exception:
            _watch.reached.append(_name)
finally:
    sys.meta_path.remove(_watch)
json.dumps(_watch.reached)
"""

#: In the maker's page: Pyodide's snapshot, left for :func:`.headless.bytes_from_page`;
#: with ``imports``, the standard-library modules they take imported first (see the
#: module's docstring).
_MAKER: Final = """async ([jspi, packages, imports, unvendored]) => {
  if (!(jspi in WebAssembly)) return `this Chromium has no WebAssembly.${jspi} (JSPI)`;
  const { loadPyodide } = await import('./pyodide.mjs');
  const indexURL = new URL('./', location.href).href;
  const quiet = { stdout: () => {}, stderr: () => {} };
  // In a namespace of its own, given its values as literals: the snapshot's
  // interpreter keeps neither the code's names nor a reference to a JS object.
  const run = (pyodide, code, values) => {
    const scope = pyodide.globals.get('dict')();
    try {
      const given = Object.entries(values)
        .map(([name, value]) => `${name} = ${JSON.stringify(JSON.stringify(value))}\n`).join('');
      return JSON.parse(pyodide.runPython(given + code, { globals: scope }));
    } finally {
      scope.destroy();
    }
  };
  let preload = [];
  if (imports.length) {
    const probe = await loadPyodide({ indexURL, ...quiet });
    const base = run(probe, __BASE__, {});
    await probe.loadPackage(packages, { messageCallback: () => {}, errorCallback: () => {} });
    preload = run(probe, __FIND__, { BASE: base, IMPORTS: imports });
  }
  for (let round = 0; ; round++) {
    // LANG as no visitor has it, whatever this machine's: the page sets the visitor's.
    const pyodide = await loadPyodide({
      indexURL, env: { LANG: 'C.UTF-8' }, _makeSnapshot: true, ...quiet });
    const left = preload.length
      ? run(pyodide, __PRELOAD__, { PRELOAD: preload, UNVENDORED: unvendored }) : [];
    if (left.length && round < 8) {
      preload = preload.filter((name) => !left.includes(name));
      continue;
    }
    if (left.length) {
      return `the standard library's modules to import did not settle: ${left.join(', ')}`;
    }
    globalThis.ortwebMade = pyodide.makeMemorySnapshot();
    return globalThis.ortwebMade.length;
  }
}"""
_MAKE: Final = (_MAKER.replace("__BASE__", json.dumps(_BASE)).replace("__FIND__", json.dumps(_FIND))
                .replace("__PRELOAD__", json.dumps(_PRELOAD)))


class Snapshot(Made):
    """A made snapshot (``path``, gzipped) or why there is none (``reason``)."""


def runtime_id(pyodide_dir: Path) -> str:
    """The sha256 the browser computes for the same core files (``snapshotPlace`` in
    ``snapshot.js``): of their sha256s, space-joined, in :data:`CORE`'s order."""
    shas = [hashlib.sha256((pyodide_dir / name).read_bytes()).hexdigest() for name in CORE]
    return hashlib.sha256(" ".join(shas).encode()).hexdigest()


def _lock(pyodide_dir: Path) -> dict[str, Any]:
    return dict(json.loads((pyodide_dir / "pyodide-lock.json").read_text()))


def closure_wheels(pyodide_dir: Path, packages: Iterable[str]) -> list[str]:
    """``name=sha256`` of the wheel ``pyodide_dir``'s lock gives for each of
    ``packages`` and of what they depend on, sorted by name.

    Raises
    ------
    PackageError
        A package the lock does not have.
    """
    return _wheels(_lock(pyodide_dir), packages)


def _wheels(lock: dict[str, Any], packages: Iterable[str]) -> list[str]:
    return [f"{name}={lock['packages'][name]['sha256']}" for name in closure(lock, packages)]


def module_imports(source: str) -> list[str]:
    """The modules a Python source imports by absolute name (``import a.b``, ``from a
    import b``), sorted."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
    return sorted(names)


def snapshot_id(pyodide_dir: Path, packages: Sequence[str] = (),
                imports: Sequence[str] = ()) -> str:
    """The key of a snapshot: :func:`runtime_id` alone for a bare interpreter; with
    ``packages`` (or ``imports``), also the wheels of the packages and of what they
    depend on, and the extra imports (what it imports first depends on them)."""
    return _snapshot_id(pyodide_dir, _lock_for(pyodide_dir, packages, imports), packages,
                        imports)


def _lock_for(pyodide_dir: Path, packages: Sequence[str],
              imports: Sequence[str]) -> dict[str, Any] | None:
    """The lock a snapshot of ``packages`` and ``imports`` needs; None for a bare one."""
    return _lock(pyodide_dir) if packages or imports else None


def _snapshot_id(pyodide_dir: Path, lock: dict[str, Any] | None, packages: Sequence[str],
                 imports: Sequence[str]) -> str:
    if lock is None:
        return runtime_id(pyodide_dir)
    # The maker's code too: a snapshot made another way has another name.
    maker = hashlib.sha256(_MAKE.encode()).hexdigest()
    text = " ".join(["snapshot", maker, runtime_id(pyodide_dir), ",".join(sorted(packages)),
                     *_wheels(lock, packages), *sorted(imports)])
    return hashlib.sha256(text.encode()).hexdigest()


def make_snapshot(pyodide_dir: Path, cache_dir: Path, executable: str | None = None,
                  packages: Sequence[str] = (), imports: Sequence[str] = ()) -> Snapshot:
    """The gzipped snapshot of ``pyodide_dir``'s interpreter, made once per
    :func:`snapshot_id` and kept in ``cache_dir``.

    Parameters
    ----------
    pyodide_dir : Path
        A folder with Pyodide's :data:`CORE` files and ``pyodide-lock.json`` (and the
        wheels of ``packages``).
    cache_dir : Path
        Where snapshots are kept (``pyodide-<snapshot id>.snapshot.gz``).
    executable : str, optional
        The Chromium to make it in (default: as :class:`~ortweb.host.browser.Browser`
        finds one).
    packages : sequence of str
        The Pyodide packages the page loads after restoring it: the standard-library
        modules that importing them (each import name the lock gives, for them and
        what they depend on) and ``imports`` take are imported before the snapshot is
        taken (see the module's docstring). None: a bare interpreter.
    imports : sequence of str
        More modules the page imports (the site's runner), for the same.

    Returns
    -------
    Snapshot
        With ``path``, or with ``reason`` when none could be made (no Chromium, or
        it failed): a site is still built, without one.
    """
    try:
        whole = _lock_for(pyodide_dir, packages, imports)
        name = _snapshot_id(pyodide_dir, whole, packages, imports)
        target = cache_dir / f"pyodide-{name}.snapshot.gz"
        lock = whole["packages"] if whole is not None else {}
        loaded = closure({"packages": lock}, packages)
    except (OSError, ValueError, KeyError, PackageError) as exc:
        return Snapshot(None, f"Pyodide's folder is not whole: {first_line(exc)}")
    names = sorted({name for pkg in loaded for name in lock[pkg].get("imports", [])} | set(imports))
    # The parts of the standard library Pyodide ships as packages of their own.
    unvendored = sorted({name for pkg in lock.values()
                         if pkg.get("package_type") == "cpython_module"
                         for name in pkg.get("imports", [])})

    def write(out: IO[bytes], raw: bytes) -> None:
        # mtime=0: the same snapshot gives the same file.
        with gzip.GzipFile(fileobj=out, mode="wb", compresslevel=6, mtime=0) as packed:
            packed.write(raw)

    made = made_in_page(target, pyodide_dir, _MAKE, [JSPI, list(packages), names, unvendored],
                        "make Pyodide's snapshot", executable, write)
    return Snapshot(made.path, made.reason)
