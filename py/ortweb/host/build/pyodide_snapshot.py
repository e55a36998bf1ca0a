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

import gzip
import hashlib
from pathlib import Path
from typing import IO, Final

from .headless import Made, bytes_from_page, first_line, keep

__all__ = ["CORE", "JSPI", "Snapshot", "make_snapshot", "runtime_id"]

#: Pyodide's files that decide what its interpreter's memory holds (as ``snapshot.js``).
CORE: Final = ("pyodide.mjs", "pyodide.asm.js", "pyodide.asm.wasm", "python_stdlib.zip")

#: The JSPI API of the engine the snapshot is made in; the page restores it only
#: where ``WebAssembly`` has the same (``snapshot.js``).
JSPI: Final = "Suspending"

#: In the maker's page: Pyodide's snapshot, left for :func:`.headless.bytes_from_page`.
_MAKE: Final = """async (jspi) => {
  if (!(jspi in WebAssembly)) return `this Chromium has no WebAssembly.${jspi} (JSPI)`;
  const { loadPyodide } = await import('./pyodide.mjs');
  // LANG as no visitor has it, whatever this machine's: the page sets the visitor's.
  const pyodide = await loadPyodide({ indexURL: new URL('./', location.href).href,
    env: { LANG: 'C.UTF-8' }, _makeSnapshot: true, stdout: () => {}, stderr: () => {} });
  globalThis.ortwebMade = pyodide.makeMemorySnapshot();
  return globalThis.ortwebMade.length;
}"""


class Snapshot(Made):
    """A made snapshot (``path``, gzipped) or why there is none (``reason``)."""


def runtime_id(pyodide_dir: Path) -> str:
    """The sha256 the browser computes for the same core files (``snapshotPlace`` in
    ``snapshot.js``): of their sha256s, space-joined, in :data:`CORE`'s order."""
    shas = [hashlib.sha256((pyodide_dir / name).read_bytes()).hexdigest() for name in CORE]
    return hashlib.sha256(" ".join(shas).encode()).hexdigest()


def make_snapshot(pyodide_dir: Path, cache_dir: Path, executable: str | None = None
                  ) -> Snapshot:
    """The gzipped snapshot of ``pyodide_dir``'s interpreter, made once per set of
    core files and kept in ``cache_dir``.

    Parameters
    ----------
    pyodide_dir : Path
        A folder with Pyodide's :data:`CORE` files and ``pyodide-lock.json``.
    cache_dir : Path
        Where snapshots are kept (``pyodide-<runtime id>.snapshot.gz``).
    executable : str, optional
        The Chromium to make it in (default: as :class:`~ortweb.host.browser.Browser`
        finds one).

    Returns
    -------
    Snapshot
        With ``path``, or with ``reason`` when none could be made (no Chromium, or
        it failed): a site is still built, without one.
    """
    try:
        target = cache_dir / f"pyodide-{runtime_id(pyodide_dir)}.snapshot.gz"
    except OSError as exc:
        return Snapshot(None, f"Pyodide's core files are not all there: {exc}")
    if target.is_file():
        return Snapshot(target)
    try:
        raw = bytes_from_page(pyodide_dir, _MAKE, JSPI, executable)
    except Exception as exc:  # no browser, or Pyodide failed in it: said, not fatal
        return Snapshot(None, "could not make Pyodide's snapshot in headless Chromium: "
                        + first_line(exc))

    def write(out: IO[bytes]) -> None:
        # mtime=0: the same snapshot gives the same file.
        with gzip.GzipFile(fileobj=out, mode="wb", compresslevel=6, mtime=0) as packed:
            packed.write(raw)

    return Snapshot(keep(target, write))
