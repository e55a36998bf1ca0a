"""Bytes made by Pyodide in headless Chromium at build time, kept on disk.

The build-time makers (:mod:`.pyodide_snapshot`, :mod:`.pyodide_bytecode`) run a
piece of JS on a blank page served from a folder of Pyodide's files, in the browser
their visitors' pages run in, and keep what it made: once per key, written atomically
so that a concurrent build finds the whole file or none.
"""

from __future__ import annotations

import base64
import os
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Final

__all__ = ["Made", "bytes_from_page", "first_line", "keep", "made_in_page"]


@dataclass(frozen=True)
class Made:
    """A file made at build time (``path``) or why there is none (``reason``)."""

    path: Path | None
    reason: str = ""


#: A piece of what the page made (``globalThis.ortwebMade``), base64: what
#: ``evaluate`` carries well.
_PIECE: Final = """([start, stop]) => {
  const part = globalThis.ortwebMade.subarray(start, stop);
  let text = '';
  for (let i = 0; i < part.length; i += 8192) {
    text += String.fromCharCode.apply(null, part.subarray(i, i + 8192));
  }
  return btoa(text);
}"""
_PIECE_BYTES: Final = 4 << 20
#: The maker's page: only its origin matters.
_PAGE: Final = "ortweb-maker.html"


def bytes_from_page(folder: Path | Mapping[str, Path], make: str, arg: Any,
                    executable: str | None = None, timeout_s: float = 300.0) -> bytes:
    """Run ``make(arg)`` on a blank page of a loopback server of ``folder`` (or of
    several folders, by URL prefix) in headless Chromium and return the bytes it left
    in ``globalThis.ortwebMade``.

    ``make`` is an async JS function that returns the length of what it made, or a
    string saying why it made nothing (raised as :class:`RuntimeError`).
    """
    from ..browser.launch import Browser
    from ..serve import StaticServer

    with StaticServer(folder) as server, Browser(executable, webgpu=False) as browser:
        context = browser.new_context()
        try:
            page_url = server.url.rstrip("/") + "/" + _PAGE
            context.route(page_url, lambda route: route.fulfill(
                body="<!doctype html><title>ortweb maker</title>", content_type="text/html"))
            page = context.new_page()
            page.set_default_timeout(timeout_s * 1000)
            page.goto(page_url)
            made: Any = page.evaluate(make, arg)
            if isinstance(made, str):
                raise RuntimeError(made)
            size = int(made)
            pieces = [base64.b64decode(page.evaluate(_PIECE, [start, start + _PIECE_BYTES]))
                      for start in range(0, size, _PIECE_BYTES)]
        finally:
            context.close()
    raw = b"".join(pieces)
    if len(raw) != size:
        raise RuntimeError(f"what the page made arrived with {len(raw)} of its {size} bytes")
    return raw


def made_in_page(target: Path, folder: Path | Mapping[str, Path], make: str, arg: Any,
                 what: str, executable: str | None = None,
                 write: Callable[[IO[bytes], bytes], None] | None = None) -> Made:
    """``target`` when it is kept already; else what ``make(arg)`` makes in a page
    (:func:`bytes_from_page`), kept as ``target`` (through ``write(out, raw)``, by
    default as it came); or why there is none: ``could not {what} in headless
    Chromium: ...`` (no browser, or Pyodide failed in it: said, not fatal)."""
    if target.is_file():
        return Made(target)
    try:
        raw = bytes_from_page(folder, make, arg, executable)
    except Exception as exc:  # said in the reason, not raised
        return Made(None, f"could not {what} in headless Chromium: {first_line(exc)}")
    return Made(keep(target, lambda out: (write or _as_made)(out, raw)))


def _as_made(out: IO[bytes], raw: bytes) -> None:
    out.write(raw)


def keep(target: Path, write: Callable[[IO[bytes]], None]) -> Path:
    """Write ``target`` through ``write`` atomically (a temporary file beside it,
    renamed); returns ``target``."""
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=target.parent, prefix=".making-", delete=False) as tmp:
        try:
            write(tmp)
        except BaseException:
            os.unlink(tmp.name)
            raise
    os.replace(tmp.name, target)
    return target


def first_line(exc: BaseException) -> str:
    """An exception's first line (its type when it says nothing), for a report."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
