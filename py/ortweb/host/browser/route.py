"""Keeping pages offline: every request that leaves the local server is refused.

An :class:`OfflineRouter` sees every request of a browser context. Requests to
the local server's origin (and ``data:``/``blob:`` URLs) go through; any other
is refused and listed, so callers can assert that nothing left 127.0.0.1 —
unless a CDN mirror answers it from local files (to check ``--assets cdn``
sites without the network). A runner page's router is ``passive``: only what leaves
is routed to it, and what stays is listed as the browser reports it, without waiting.

For a browser elsewhere (:mod:`.endpoint`), the router also *relays*: the local
server's responses are fetched here, on the host, and handed to the browser
with ``route.fulfill``, so the remote browser never connects to the host (its
URLs stay ``http://127.0.0.1:PORT/…``, a secure context, with the server's
COOP/COEP headers).

A relayed context also answers ``/__ortweb/digest?path=…`` here, with the sha256
and size of a large file of the local server (:func:`asset_digest`): the runner
pages' service worker (``web/runner-sw.js``) keeps such files in Cache Storage by
their sha256, so that later pages of the context get them without the relay. For a
file that compresses (WebAssembly, JavaScript) the digest also says ``gzip``: the
service worker then asks for it with :data:`GZIP_QUERY` and gets it gzipped, which
it decodes itself (a body handed over with ``route.fulfill`` reaches the page as
given, ``Content-Encoding`` or not). Everything relayed crosses the connection to the
browser base64-encoded, so its time follows the bytes, and a runner page's wasm
shrinks to about a third.
"""

from __future__ import annotations

import gzip
import hashlib
import http.client
import json
import re
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from ..serve import content_type_for
from .capture import PageLog

__all__ = ["DIGEST_PATH", "GZIP_HEADER", "GZIP_QUERY", "CdnMirror", "OfflineRouter",
           "asset_digest", "cdn_mirror", "fetch_from_host", "gzipped_from_host"]

#: Request headers passed on to the local server when relaying (others are the
#: browser's own business, or would make the server answer 304 to a browser
#: whose cache Playwright turns off while it routes).
_RELAYED_REQUEST_HEADERS = ("range", "accept")
#: Response headers never handed back (hop-by-hop; the body is whole).
_HOP_BY_HOP = ("connection", "keep-alive", "transfer-encoding")

#: Where a relayed context asks for a file's sha256 (answered by the router itself).
DIGEST_PATH = "/__ortweb/digest"
#: Smaller files get no digest: asking costs about what fetching them does.
DIGEST_MIN_BYTES = 64 << 10
#: The query of a relayed request answered gzipped (the body's encoding said in
#: :data:`GZIP_HEADER`), for the runner pages' service worker to decode.
GZIP_QUERY = "ortweb-relay=gzip"
GZIP_HEADER = "X-Ortweb-Relay-Encoding"
#: Files worth gzipping for the relay: the rest (zips, wheels, the gzipped snapshot)
#: are compressed already.
_GZIPPED_SUFFIXES = (".wasm", ".js", ".mjs")

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
    relay : bool
        Answer the local server's requests from here (a remote browser, which
        cannot reach the host); :meth:`~.launch.Browser.new_context` sets it.
    passive : bool
        Route only the requests that leave the local server here (a pattern the
        browser's side of Playwright matches) and list the local server's from the
        context's request events, so that none waits for a round trip through this
        process (a runner page's boot paid one per request). For contexts without
        service workers: their request events would list what a service worker
        answers too. A router that relays or mirrors a CDN sees every request.

    Attributes
    ----------
    relayed_bytes : int
        Bytes of response bodies relayed so far.

    Notes
    -----
    A context shared by several pages (a remote browser's runner pages, see
    :meth:`~.launch.Browser.shared_context`) has one router: :meth:`attach` gives
    each page its own log. A request no page can be named for (a service worker's)
    goes to ``log``; one refused is also listed on every attached page.
    """

    def __init__(self, origin: str, log: PageLog, *, cdn: CdnMirror | None = None,
                 tamper: Callable[[str, bytes], bytes] | None = None, relay: bool = False,
                 passive: bool = False):
        self.origin = origin_of(origin)
        self._passive = passive
        self.log = log
        self.relay = relay
        self.relayed_bytes = 0
        self._cdn = cdn
        self._tamper = tamper
        self._pages: dict[Any, PageLog] = {}

    def attach(self, page: Any, log: PageLog) -> None:
        """Record requests of ``page`` (a Playwright page of the context) in ``log``."""
        self._pages[page] = log

    def detach(self, page: Any) -> None:
        self._pages.pop(page, None)

    def _log_for(self, request: Any) -> PageLog:
        if not self._pages:
            return self.log
        try:
            page = request.frame.page
        except Exception:  # a service worker's request has no frame
            return self.log
        return self._pages.get(page, self.log)

    def allows(self, url: str) -> bool:
        """Whether ``url`` stays on the local server."""
        return url.startswith(("data:", "blob:")) or origin_of(url) == self.origin

    def install(self, context: Any) -> None:
        """Route ``context``'s requests here: every one, or with ``passive`` only those
        that leave the local server (see the class)."""
        if self.relay or self._cdn is not None or not self._passive:
            context.route("**/*", self)
            return
        context.on("request", self._seen)
        context.route(self.leaving(), self)

    def leaving(self) -> re.Pattern[str]:
        """The URLs that leave the local server, as :meth:`allows` tells them."""
        return re.compile(rf"^(?!{re.escape(self.origin)}(?:[/?#]|$)|data:|blob:)")

    def _seen(self, request: Any) -> None:
        if self.allows(request.url):
            self._log_for(request).requests.append(request.url)

    def __call__(self, route: Any) -> None:
        url = route.request.url
        log = self._log_for(route.request)
        log.requests.append(url)
        if self.allows(url):
            if self.relay and not url.startswith(("data:", "blob:")):
                parts = urlsplit(url)
                if parts.path == DIGEST_PATH:
                    self._digest(route, url)
                    return
                if parts.query == GZIP_QUERY:
                    # Logged by the file it carries.
                    url = url.removesuffix("?" + GZIP_QUERY)
                    status, headers, body = gzipped_from_host(url)
                else:
                    status, headers, body = fetch_from_host(
                        url, route.request.method, route.request.headers)
                self.relayed_bytes += len(body)
                log.relayed[url] = log.relayed.get(url, 0) + len(body)
                route.fulfill(status=status, headers=headers, body=body)
            else:
                route.continue_()
            return
        local = self._cdn(url) if self._cdn is not None else None
        if local is None:
            log.blocked.append(url)
            if log is self.log:
                for page_log in self._pages.values():
                    page_log.blocked.append(url)
            route.abort()
            return
        body = local.read_bytes()
        if self._tamper is not None:
            body = self._tamper(url, body)
        log.mirrored.append(url)
        route.fulfill(status=200, body=body, headers={
            "Content-Type": content_type_for(local),
            "Access-Control-Allow-Origin": "*",
            "Cross-Origin-Resource-Policy": "cross-origin",
        })

    def _digest(self, route: Any, url: str) -> None:
        path = dict(parse_qsl(urlsplit(url).query)).get("path", "")
        found = asset_digest(self.origin + path) if path.startswith("/") else None
        if found is None:
            route.fulfill(status=404, body="", headers=_NO_STORE)
            return
        sha256, size = found
        answer = {"sha256": sha256, "size": size, "gzip": path.endswith(_GZIPPED_SUFFIXES)}
        route.fulfill(status=200, body=json.dumps(answer),
                      headers={**_NO_STORE, "Content-Type": "application/json"})


_NO_STORE = {"Cache-Control": "no-store", "Cross-Origin-Resource-Policy": "same-origin"}
_digests: dict[tuple[str, str, str], tuple[str, int]] = {}
_digests_lock = threading.Lock()


def asset_digest(url: str) -> tuple[str, int] | None:
    """``(sha256, size)`` of the file a server of this host offers at ``url``, or None
    (not there, or under :data:`DIGEST_MIN_BYTES`).

    Hashed once per version of the file (its URL, size and modification time, which
    a ``HEAD`` request gives); a rebuilt file gets a new digest.
    """
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=60)
    try:
        conn.request("HEAD", parts.path)
        head = conn.getresponse()
        head.read()
        length = head.getheader("Content-Length", "")
        key = (url, length, head.getheader("Last-Modified", ""))
        if head.status != 200 or not length.isdigit() or int(length) < DIGEST_MIN_BYTES:
            return None
    finally:
        conn.close()
    with _digests_lock:
        if key in _digests:
            return _digests[key]
    status, _, body = fetch_from_host(url)
    if status != 200:
        return None
    found = (hashlib.sha256(body).hexdigest(), len(body))
    with _digests_lock:
        _digests[key] = found
    return found


#: By URL: the version (size, modification time) last gzipped, and its bytes.
_gzipped: dict[str, tuple[tuple[int, str], bytes]] = {}


def gzipped_from_host(url: str) -> tuple[int, dict[str, str], bytes]:
    """``url`` (on a server of this host) fetched here and gzipped: status, headers
    (its own, with :data:`GZIP_HEADER` and no length) and body.

    Level 1: a runner page's WebAssembly shrinks to about a third either way, and
    level 6 takes four times as long to write. A file is compressed once per version
    (its size and modification time); only its latest version is kept.
    """
    status, headers, body = fetch_from_host(url)
    if status != 200:
        return status, headers, body
    modified = next((v for k, v in headers.items() if k.lower() == "last-modified"), "")
    version = (len(body), modified)
    with _digests_lock:
        kept_version, packed = _gzipped.get(url, ((-1, ""), b""))
    if kept_version != version:
        packed = gzip.compress(body, compresslevel=1, mtime=0)
        with _digests_lock:
            _gzipped[url] = (version, packed)
    kept = {k: v for k, v in headers.items()
            if k.lower() not in ("content-length", "content-encoding")}
    return status, {**kept, GZIP_HEADER: "gzip"}, packed


def fetch_from_host(url: str, method: str = "GET", headers: Mapping[str, str] | None = None,
                    timeout: float = 120.0) -> tuple[int, dict[str, str], bytes]:
    """``url`` (on a server of this host) fetched here: status, headers and body."""
    parts = urlsplit(url)
    path = parts.path + (f"?{parts.query}" if parts.query else "")
    sent = {k: v for k, v in (headers or {}).items() if k.lower() in _RELAYED_REQUEST_HEADERS}
    conn = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=timeout)
    try:
        conn.request(method, path or "/", headers=sent)
        response = conn.getresponse()
        body = response.read()
        kept = {k: v for k, v in response.getheaders() if k.lower() not in _HOP_BY_HOP}
        wanted = _byte_range(sent, len(body)) if response.status == 200 else None
        if wanted is not None:
            # The local server sends whole files; the range is cut here.
            start, end = wanted
            kept = {k: v for k, v in kept.items() if k.lower() != "content-length"}
            kept["Content-Range"] = f"bytes {start}-{end}/{len(body)}"
            return 206, kept, body[start:end + 1]
        return response.status, kept, body
    finally:
        conn.close()


def _byte_range(headers: Mapping[str, str], size: int) -> tuple[int, int] | None:
    """``(first, last)`` of a single ``Range: bytes=a-b`` header within ``size``, else None."""
    value = next((v for k, v in headers.items() if k.lower() == "range"), "")
    match = re.fullmatch(r"bytes=(\d+)-(\d*)", value.strip())
    if match is None:
        return None
    start = int(match.group(1))
    end = min(int(match.group(2)) if match.group(2) else size - 1, size - 1)
    return (start, end) if start <= end else None
