"""Keeping pages offline: every request that leaves the local server is refused.

An :class:`OfflineRouter` sees every request of a browser context. Requests to
the local server's origin (and ``data:``/``blob:`` URLs) go through; any other
is refused and listed, so callers can assert that nothing left 127.0.0.1 —
unless a CDN mirror answers it from local files (to check ``--assets cdn``
sites without the network).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ..serve import content_type_for
from .capture import PageLog

__all__ = ["CdnMirror", "OfflineRouter", "cdn_mirror"]

#: A CDN stand-in: absolute URL → local file to answer with, or None (refused).
CdnMirror = Callable[[str], Path | None]


def cdn_mirror(prefixes: Mapping[str, Path]) -> CdnMirror:
    """A :data:`CdnMirror` answering URL prefixes from folders.

    Parameters
    ----------
    prefixes : mapping of str to Path
        ``"https://cdn.jsdelivr.net/npm/pyodide@0.27.7/"`` → a folder.
    """

    def find(url: str) -> Path | None:
        for prefix, folder in prefixes.items():
            if url.startswith(prefix):
                rel = url[len(prefix):].split("?")[0].split("#")[0]
                path = (folder / rel).resolve()
                if path.is_relative_to(folder.resolve()) and path.is_file():
                    return path
        return None

    return find


def origin_of(url: str) -> str:
    """``scheme://host:port`` of ``url``."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


class OfflineRouter:
    """A Playwright route handler that lets only the local server through.

    Parameters
    ----------
    origin : str
        The local server's URL; only its origin counts.
    log : PageLog
        Where requests, refused requests and mirrored requests are listed.
    cdn : CdnMirror, optional
        Answers CDN URLs from local files, with the CORS and CORP headers
        jsDelivr sends.
    tamper : callable, optional
        ``tamper(url, body) -> body``: changes what the CDN mirror answers (to
        check that the page refuses it).
    """

    def __init__(self, origin: str, log: PageLog, *, cdn: CdnMirror | None = None,
                 tamper: Callable[[str, bytes], bytes] | None = None):
        self.origin = origin_of(origin)
        self.log = log
        self._cdn = cdn
        self._tamper = tamper

    def allows(self, url: str) -> bool:
        """Whether ``url`` stays on the local server."""
        return url.startswith(("data:", "blob:")) or origin_of(url) == self.origin

    def __call__(self, route: Any) -> None:
        url = route.request.url
        self.log.requests.append(url)
        if self.allows(url):
            route.continue_()
            return
        local = self._cdn(url) if self._cdn is not None else None
        if local is None:
            self.log.blocked.append(url)
            route.abort()
            return
        body = local.read_bytes()
        if self._tamper is not None:
            body = self._tamper(url, body)
        self.log.mirrored.append(url)
        route.fulfill(status=200, body=body, headers={
            "Content-Type": content_type_for(local),
            "Access-Control-Allow-Origin": "*",
            "Cross-Origin-Resource-Policy": "cross-origin",
        })
