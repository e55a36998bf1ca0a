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

import base64
import gzip
import hashlib
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

__all__ = ["CORE", "JSPI", "Snapshot", "make_snapshot", "runtime_id"]

#: Pyodide's files that decide what its interpreter's memory holds (as ``snapshot.js``).
CORE: Final = ("pyodide.mjs", "pyodide.asm.js", "pyodide.asm.wasm", "python_stdlib.zip")

#: The JSPI API of the engine the snapshot is made in; the page restores it only
#: where ``WebAssembly`` has the same (``snapshot.js``).
JSPI: Final = "Suspending"

#: In the maker's page: Pyodide's snapshot, kept in the page for :data:`_PIECE`.
_MAKE: Final = """async (jspi) => {
  if (!(jspi in WebAssembly)) return `this Chromium has no WebAssembly.${jspi} (JSPI)`;
  const { loadPyodide } = await import('./pyodide.mjs');
  // LANG as no visitor has it, whatever this machine's: the page sets the visitor's.
  const pyodide = await loadPyodide({ indexURL: new URL('./', location.href).href,
    env: { LANG: 'C.UTF-8' }, _makeSnapshot: true, stdout: () => {}, stderr: () => {} });
  globalThis.ortwebSnapshot = pyodide.makeMemorySnapshot();
  return globalThis.ortwebSnapshot.length;
}"""
#: A piece of it, base64 (what ``evaluate`` carries well).
_PIECE: Final = """([start, stop]) => {
  const part = globalThis.ortwebSnapshot.subarray(start, stop);
  let text = '';
  for (let i = 0; i < part.length; i += 8192) {
    text += String.fromCharCode.apply(null, part.subarray(i, i + 8192));
  }
  return btoa(text);
}"""
_PIECE_BYTES: Final = 4 << 20
#: The maker's page: only its origin matters.
_PAGE: Final = "ortweb-snapshot.html"


@dataclass(frozen=True)
class Snapshot:
    """A made snapshot (``path``, gzipped) or why there is none (``reason``)."""

    path: Path | None
    reason: str = ""


def runtime_id(pyodide_dir: Path) -> str:
    """The sha256 the browser computes for the same core files (``snapshotPlace`` in
    ``snapshot.js``): of their sha256s, space-joined, in :data:`CORE`'s order."""
    shas = [hashlib.sha256((pyodide_dir / name).read_bytes()).hexdigest() for name in CORE]
    return hashlib.sha256(" ".join(shas).encode()).hexdigest()


def _snapshot_bytes(pyodide_dir: Path, executable: str | None) -> bytes:
    """The raw snapshot, made in a headless Chromium on a loopback server of
    ``pyodide_dir``."""
    from ..browser.launch import Browser
    from ..serve import StaticServer

    with StaticServer(pyodide_dir) as server, Browser(executable, webgpu=False) as browser:
        context = browser.new_context()
        try:
            page_url = server.url.rstrip("/") + "/" + _PAGE
            context.route(page_url, lambda route: route.fulfill(
                body="<!doctype html><title>ortweb snapshot</title>", content_type="text/html"))
            page = context.new_page()
            page.goto(page_url)
            made: Any = page.evaluate(_MAKE, JSPI)
            if isinstance(made, str):
                raise RuntimeError(made)
            size = int(made)
            pieces = [base64.b64decode(page.evaluate(_PIECE, [start, start + _PIECE_BYTES]))
                      for start in range(0, size, _PIECE_BYTES)]
        finally:
            context.close()
    raw = b"".join(pieces)
    if len(raw) != size:
        raise RuntimeError(f"the snapshot arrived with {len(raw)} of its {size} bytes")
    return raw


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
        raw = _snapshot_bytes(pyodide_dir, executable)
    except Exception as exc:  # no browser, or Pyodide failed in it: said, not fatal
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return Snapshot(None, f"could not make Pyodide's snapshot in headless Chromium: {first}")
    cache_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=cache_dir, prefix=".making-", delete=False) as tmp:
        try:
            # mtime=0: the same snapshot gives the same file.
            with gzip.GzipFile(fileobj=tmp, mode="wb", compresslevel=6, mtime=0) as packed:
                packed.write(raw)
        except BaseException:
            os.unlink(tmp.name)
            raise
    # Atomic: a concurrent build finds the whole file or none.
    os.replace(tmp.name, target)
    return Snapshot(target)
