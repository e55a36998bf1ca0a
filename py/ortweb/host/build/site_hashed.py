"""Hash-keyed paths for the files a site's loader fetches, which hosts may cache for good.

Every file the page downloads with ``fetch()`` (the model and the script's files,
Pyodide's wasm, standard library, lock and wheels, onnxruntime-web's wasm, the
snapshot, the bytecode: the config's ``assets``) is kept at
``hashed/<first 16 hex digits of its sha256>/<its URL>``, and its config entry says so
(``at``). The page still asks for it by its URL (loader.js fetches ``at`` for it; the
service worker answers either). A path under ``hashed/`` never names other bytes, so
it can be served with ``Cache-Control: immutable`` (``_headers``, ``ortweb serve``): a
later visit takes it from the browser's HTTP cache without a request, even where the
service worker is not running. ``index.html``, the manifest, the service worker and the
JS modules (imported by name, relative to each other) keep their names and are
revalidated.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Final
from urllib.parse import unquote

from .site_compress import ENCODINGS

__all__ = ["CACHE_CONTROL", "HASHED", "HASHED_PATH", "by_name", "hash_paths", "hashed_url",
           "located", "relocate"]

#: The folder of a site's hash-keyed files.
HASHED: Final = "hashed"
#: The caching a host should give them: a year (the longest browsers honour), never
#: revalidated.
CACHE_CONTROL: Final = "public, max-age=31536000, immutable"
#: Digits of the sha256 in a path: what tells two builds' copies apart (the page still
#: checks the whole sha256).
_DIGITS: Final = 16
#: A URL path (under any prefix) that names a hash-keyed file: what a server may send
#: with CACHE_CONTROL.
HASHED_PATH: Final = re.compile(rf"/{HASHED}/[0-9a-f]{{{_DIGITS}}}/[^?#]*[^/?#]$")


def hashed_url(url: str, sha256: str) -> str:
    """Where a file fetched as ``url`` (relative, URL-quoted) with ``sha256`` is kept."""
    return f"{HASHED}/{sha256[:_DIGITS]}/{url}"


def hash_paths(fetched: Iterable[dict[str, Any]], written: Mapping[str, Any]) -> dict[str, str]:
    """Give each of the page's fetched files that the site holds (not a CDN's) its
    hash-keyed path as ``at``; returns the moves to make, path → hashed path (unquoted,
    as in the folder)."""
    moves: dict[str, str] = {}
    for entry in fetched:
        url = entry["url"]
        if "://" in url or unquote(url) not in written:
            continue
        entry["at"] = hashed_url(url, entry["sha256"])
        moves[unquote(url)] = unquote(entry["at"])
    return moves


def relocate(root: Path, entries: dict[str, dict[str, Any]],
             moves: Mapping[str, str]) -> dict[str, dict[str, Any]]:
    """Move each file of ``moves`` (with its ``.br``/``.gz`` copies) under ``root`` to its
    hashed path; returns the manifest's entries by their paths now, a moved one with
    the path the page asks for it by (``name``)."""
    moved: dict[str, dict[str, Any]] = {}
    for path, entry in entries.items():
        target = moves.get(path)
        if target is None:
            moved[path] = entry
            continue
        for suffix in ("", *(ENCODINGS[enc] for enc in entry.get("encodings", {}))):
            (root / (target + suffix)).parent.mkdir(parents=True, exist_ok=True)
            os.replace(root / (path + suffix), root / (target + suffix))
        moved[target] = {**entry, "name": path}
    for path in moves:  # the folders the moves left empty
        for parent in Path(path).parents:
            if parent == Path("."):
                break
            try:
                (root / parent).rmdir()
            except OSError:
                break
    return moved


def located(files: Mapping[str, dict[str, Any]], name: str) -> str:
    """The path in a site's folder of the file the page asks for as ``name`` (a path
    relative to the site, unquoted), from the manifest's ``files``."""
    if name in files and "name" not in files[name]:
        return name
    for path, entry in files.items():
        if entry.get("name") == name:
            return str(path)
    raise KeyError(f"{name} is not a file of this site")


def by_name(files: Mapping[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """A manifest's ``files`` by the paths the page asks for them by (a hash-keyed
    file's ``name``)."""
    return {entry.get("name", path): entry for path, entry in files.items()}
