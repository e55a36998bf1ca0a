"""ortweb's file cache: models and external data files loaded by URL
(``bridge_js/fetching.js``), kept in the browser's Origin Private File System
(``bridge_js/file_cache.js``), so a second load makes no network request."""

from __future__ import annotations

from typing import Any

from . import _bridge
from .errors import InvalidArgument

__all__ = ["cache_info", "cache_info_async", "clear_cache", "clear_cache_async"]


async def cache_info_async() -> dict[str, Any]:
    """What ortweb keeps in its file cache.

    Returns
    -------
    dict
        ``available`` (False where the page cannot keep files: no Origin Private
        File System with ``createWritable``, e.g. not a secure context; then nothing
        is kept and every load downloads), ``files`` (one dict per file: ``url``,
        ``size`` in bytes, ``sha256``, ``stored`` as an ISO time) and ``bytes``
        (their total).
    """
    info = await _bridge.cache_info()
    files = [dict(f) for f in info["files"]]
    return {"available": bool(info["available"]), "files": files,
            "bytes": sum(max(0, int(f["size"])) for f in files)}


def cache_info() -> dict[str, Any]:
    """Synchronous :func:`cache_info_async`."""
    return _bridge.block_on(cache_info_async())


async def clear_cache_async(url: str | None = None) -> int:
    """Remove files from ortweb's file cache: those of ``url`` (any ``#sha256=``), or
    all. Writes under way in this page are waited for first.

    Returns
    -------
    int
        How many files were removed.
    """
    if url is not None and not isinstance(url, str):
        raise InvalidArgument(f"clear_cache: url must be a str or None, got {type(url).__name__}")
    return await _bridge.clear_cache(url)


def clear_cache(url: str | None = None) -> int:
    """Synchronous :func:`clear_cache_async`."""
    return _bridge.block_on(clear_cache_async(url))
