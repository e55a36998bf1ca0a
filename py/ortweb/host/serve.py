"""The static file server of the CLI, the test harness and ``ortweb serve`` (loopback use).

:mod:`http.server` serves files (``index.html``, HEAD, redirects; no listings); ortweb adds
mounts, isolation headers, a fixed MIME map, 405 for methods but GET and HEAD, the
precompressed ``NAME.br``/``NAME.gz`` that ``ortweb site`` writes (sent with
``Content-Encoding`` to a client whose ``Accept-Encoding`` allows it, ``Vary`` on every
answer for such a file), caching (``no-cache``: revalidated, but ``immutable`` for a
site's hash-keyed files under ``hashed/``), and path checks (the harness mounts
temporary folders next to user data): a path any of whose percent-decodings holds
``..``, ``\\``, a control character or an absolute path gets 403, as does one whose
real path leaves its mount."""

from __future__ import annotations

import contextlib
import functools
import os
import re
import socket
import threading
import time
from collections.abc import Iterator, Mapping
from http import HTTPStatus
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import unquote

# Its Content-Encoding → suffix table, in order of preference: what `ortweb site` writes.
from .build.site_compress import ENCODINGS
from .build.site_hashed import CACHE_CONTROL, HASHED_PATH

__all__ = ["StaticServer", "content_type_for", "serve_forever"]

PathLike = str | os.PathLike[str]

# Not `mimetypes`, which reads the host's /etc/mime.types: a wrong type for wasm or a module
# script and the browser refuses it. Others are octet-stream.
_MIME = {".js": "text/javascript", ".mjs": "text/javascript", ".cjs": "text/javascript",
         ".wasm": "application/wasm", ".json": "application/json", ".map": "application/json",
         ".svg": "image/svg+xml", ".png": "image/png", ".jpg": "image/jpeg",
         ".jpeg": "image/jpeg", ".gif": "image/gif", ".webp": "image/webp",
         ".ico": "image/x-icon", ".woff": "font/woff", ".woff2": "font/woff2"}
_MIME.update({ext: f"{kind}; charset=utf-8" for ext, kind in [
    (".html", "text/html"), (".htm", "text/html"), (".css", "text/css"),
    (".txt", "text/plain"), (".md", "text/markdown"), (".py", "text/x-python")]})


def content_type_for(path: PathLike) -> str:
    """The ``Content-Type`` served for ``path``, by its case-insensitive suffix."""
    return _MIME.get(os.path.splitext(os.fspath(path))[1].lower(), "application/octet-stream")


def _accepted(header: str) -> set[str]:
    """The codings an ``Accept-Encoding`` header allows (``q=0`` refuses; ``*`` is any)."""
    allowed: set[str] = set()
    for item in header.split(","):
        name, _, params = item.strip().partition(";")
        q = 1.0
        for param in params.split(";"):
            key, _, value = param.strip().partition("=")
            if key.strip().lower() == "q":
                try:
                    q = float(value)
                except ValueError:
                    q = 0.0
        if q > 0 and name.strip():
            allowed.add(name.strip().lower())
    if "*" in allowed:
        allowed |= set(ENCODINGS)
    return allowed


class _Refused(Exception):
    """From ``translate_path``: answer with the HTTP status ``args[0]``."""


class _Handler(SimpleHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: Pyodide's start fetches dozens of files
    server_version, sys_version = "ortweb", ""
    timeout = 120  # how long an idle keep-alive connection holds a thread
    disable_nagle_algorithm = True  # else each small response waits ~40 ms for an ACK
    server: _HTTPServer

    def parse_request(self) -> bool:
        if self.server.owner._httpd is not self.server or not super().parse_request():
            self.close_connection = True  # a bad request, or a keep-alive outliving stop()
            return False
        for seen in self.server.owner._watchers:
            seen.append(self.path)
        if self.command not in ("GET", "HEAD"):
            self.close_connection = True  # its body is left unread
            self.send_error(HTTPStatus.METHOD_NOT_ALLOWED)
        return self.command in ("GET", "HEAD")

    _vary = False  # whether this response's file has precompressed siblings
    _hashed = False  # whether this response is a site's hash-keyed file
    _status = 0  # this response's status code

    def send_response(self, code: int, message: str | None = None) -> None:
        self._status = code
        super().send_response(code, message)

    def end_headers(self) -> None:
        if self._vary:  # caches must key this response by what the client accepts
            self.send_header("Vary", "Accept-Encoding")
        # On every response: a page is isolated only if all its subresources agree.
        for policy, value in [("Opener", "same-origin"), ("Embedder", "require-corp"),
                              ("Resource", "same-origin")] if self.server.owner.isolation else []:
            self.send_header(f"Cross-Origin-{policy}-Policy", value)
        # Revalidated: files under test change between runs. Not a site's hash-keyed files,
        # whose path names their bytes (site_hashed): those never change.
        self.send_header("Cache-Control", CACHE_CONTROL if self._hashed and self._status == 200
                         else "no-cache")
        self.send_header("X-Content-Type-Options", "nosniff")
        if self.command not in (None, "GET", "HEAD"):
            self.send_header("Allow", "GET, HEAD")
        super().end_headers()

    def send_head(self) -> Any:
        # A file rewritten within a second of Last-Modified would get a stale 304.
        del self.headers["If-Modified-Since"]
        self._vary = False
        self._hashed = HASHED_PATH.search(self.path.partition("?")[0]) is not None
        try:
            encoded = self._precompressed(self.translate_path(self.path))
            return super().send_head() if encoded is None else self._send_encoded(*encoded)
        except _Refused as refused:
            self.send_error(refused.args[0])
            return None

    def _precompressed(self, path: str) -> tuple[str, str, str] | None:
        """``(encoding, its file, the plain file)`` to send for ``path``: the ``.br``
        or ``.gz`` written beside it (by ``ortweb site``), when the client accepts
        that encoding and the copy is not older than the file."""
        if os.path.isdir(path) and self.path.partition("?")[0].endswith("/"):
            path = os.path.join(path, "index.html")  # what send_head would send
        if not os.path.isfile(path):
            return None
        plain = os.stat(path).st_mtime
        siblings = {enc: path + suffix for enc, suffix in ENCODINGS.items()
                    if os.path.isfile(path + suffix) and os.stat(path + suffix).st_mtime >= plain}
        self._vary = bool(siblings)
        accepted = _accepted(self.headers.get("Accept-Encoding", ""))
        enc = next((e for e in ENCODINGS if e in siblings and e in accepted), None)
        return None if enc is None else (enc, siblings[enc], path)

    def _send_encoded(self, encoding: str, file: str, plain: str) -> Any:
        f = open(file, "rb")  # the caller (do_GET/do_HEAD) closes it
        try:
            stat = os.fstat(f.fileno())
            self.send_response(HTTPStatus.OK)
            self.send_header("Content-Type", self.guess_type(plain))
            self.send_header("Content-Encoding", encoding)
            self.send_header("Content-Length", str(stat.st_size))
            self.send_header("Last-Modified", self.date_time_string(int(stat.st_mtime)))
            self.end_headers()
        except BaseException:
            f.close()
            raise
        return f

    def translate_path(self, path: str) -> str:
        forms = [path.partition("?")[0].partition("#")[0]]  # and each percent-decoding of it
        if not forms[0].startswith("/") or not forms[0].isascii():
            raise _Refused(HTTPStatus.BAD_REQUEST)
        try:  # 4 rounds unwrap any plausible multiple encoding
            while len(forms) < 5 and (form := unquote(forms[-1], errors="strict")) != forms[-1]:
                forms.append(form)
        except UnicodeDecodeError:
            raise _Refused(HTTPStatus.BAD_REQUEST) from None
        if len(forms) == 5 or any(re.search(r"[\0-\x1f\x7f\\]", f) or ".." in f.split("/")
                                  for f in forms):  # whichever a later layer decodes to
            raise _Refused(HTTPStatus.FORBIDDEN)
        url = forms[min(1, len(forms) - 1)]  # one decoding names the file
        prefix, root = next(((p, r) for p, r in self.server.owner._table  # longest first
                             if (url + "/").startswith(p)), ("", ""))
        if prefix == url + "/":
            return root  # "/ort": a directory, which send_head redirects to "/ort/"
        if not prefix:
            raise _Refused(HTTPStatus.NOT_FOUND)
        if any(os.path.isabs(r) or os.path.splitdrive(r)[0] or r.startswith("/")
               for r in (f[len(prefix):] for f in forms if f.startswith(prefix))):
            raise _Refused(HTTPStatus.FORBIDDEN)
        root = os.path.realpath(root)  # realpath follows symlinks: a link out lands outside
        target = os.path.realpath(os.path.join(root, *url[len(prefix):].split("/")))
        if os.path.exists(target) and not os.path.isdir(target) and not os.path.isfile(target):
            raise _Refused(HTTPStatus.NOT_FOUND)  # a FIFO would block open()
        names = [os.path.join(target, n) for n in ("index.html", "index.htm")]  # send_head's
        if not all(Path(os.path.realpath(p)).is_relative_to(root) for p in [target, *names]):
            raise _Refused(HTTPStatus.FORBIDDEN)
        return target

    def list_directory(self, path: Any) -> None:
        self.send_error(HTTPStatus.NOT_FOUND)

    def guess_type(self, path: Any) -> str:
        return content_type_for(path)

    def log_message(self, format: str, *args: Any) -> None:
        if not self.server.owner.quiet:
            super().log_message(format, *args)

    def log_error(self, format: str, *args: Any) -> None:
        pass  # send_error logs the request line already: one line per request

    def handle(self) -> None:
        with contextlib.suppress(ConnectionError, TimeoutError):  # browsers abort downloads
            super().handle()


class _HTTPServer(ThreadingHTTPServer):  # daemon threads: stop() waits for none
    def __init__(self, owner: StaticServer, address: tuple[str, int]) -> None:
        self.owner = owner
        self.address_family = socket.AF_INET6 if ":" in address[0] else socket.AF_INET
        # A placeholder: the default, os.getcwd(), fails once the working folder is gone.
        super().__init__(address, functools.partial(_Handler, directory=os.sep))


class StaticServer:
    """Threaded static file server with cross-origin isolation headers.

    Parameters
    ----------
    root : str, os.PathLike or Mapping[str, str or os.PathLike]
        A directory served at ``/``, or URL prefix → directory (the longest match wins).
    host : str, default "127.0.0.1"
    port : int, default 0 (a free one)
    isolation : bool, default True
        COOP, COEP and CORP on every response: ``SharedArrayBuffer``, so threaded wasm.
    quiet : bool, default True
        When false, log one line per request to stderr.
    """

    def __init__(self, root: PathLike | Mapping[str, PathLike], host: str = "127.0.0.1",
                 port: int = 0, isolation: bool = True, quiet: bool = True) -> None:
        self.host, self.isolation, self.quiet, self._port = host, isolation, quiet, port
        self._lock = threading.Lock()
        self._table: tuple[tuple[str, str], ...] = ()  # replaced whole: requests take no lock
        self._watchers: tuple[list[str], ...] = ()  # likewise
        self._httpd: _HTTPServer | None = None
        self._address: tuple[str, int] | None = None
        for prefix, path in (root if isinstance(root, Mapping) else {"/": root}).items():
            self.add_mount(prefix, path)

    def add_mount(self, prefix: str, path: PathLike) -> None:
        """Serve directory ``path`` under URL ``prefix`` (``"/ort/"``), even while running."""
        directory = os.path.abspath(os.fspath(path))
        if not os.path.isdir(directory):
            raise NotADirectoryError(f"cannot mount {directory!r}: not a directory")
        self._set_mount(prefix, directory)

    def remove_mount(self, prefix: str) -> bool:
        """Stop serving ``prefix``; whether it was mounted."""
        return self._set_mount(prefix, None)

    def _set_mount(self, prefix: str, directory: str | None) -> bool:
        if not prefix.startswith("/") or ".." in prefix.split("/") or set("\\\0?#") & set(prefix):
            raise ValueError(f"a mount prefix starts with '/' and has no \\, ?, #, ..: {prefix!r}")
        prefix = prefix.removesuffix("/") + "/"
        with self._lock:
            mounts = dict(self._table)
            old = mounts.pop(prefix, None)
            mounts.update({prefix: directory} if directory else {})
            self._table = tuple(sorted(mounts.items(), key=lambda m: -len(m[0])))
        return old is not None

    @contextlib.contextmanager
    def watching(self) -> Iterator[list[str]]:
        """The paths (query included) of the requests this server receives while inside,
        in order of arrival: what reached it, known without instrumenting the browser
        (which would slow the page it measures)."""
        seen: list[str] = []
        with self._lock:
            self._watchers = (*self._watchers, seen)
        try:
            yield seen
        finally:
            with self._lock:
                self._watchers = tuple(w for w in self._watchers if w is not seen)

    @property
    def mounts(self) -> dict[str, str]:
        """URL prefix → absolute directory (a copy)."""
        return dict(self._table)

    def start(self) -> StaticServer:
        """Bind and serve from a daemon thread; returns ``self``. RuntimeError if running."""
        if self._httpd is not None:
            raise RuntimeError("server is already running")
        self._httpd = httpd = _HTTPServer(self, (self.host, self._port))
        self._address = (str(httpd.server_address[0]), int(httpd.server_address[1]))
        threading.Thread(target=httpd.serve_forever, args=(0.05,),  # a short poll: quick stop()
                         name=f"ortweb-static-{self.port}", daemon=True).start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket; safe twice."""
        httpd, self._httpd = self._httpd, None
        if httpd is not None:
            httpd.shutdown()  # returns once serve_forever has
            httpd.server_close()

    @property
    def running(self) -> bool:
        return self._httpd is not None

    def __enter__(self) -> StaticServer:
        return self if self.running else self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def address(self) -> tuple[str, int]:
        """The bound ``(host, port)``; RuntimeError before the first :meth:`start`."""
        if self._address is None:
            raise RuntimeError("server has not been started")
        return self._address

    @property
    def port(self) -> int:
        return self.address[1]

    @property
    def url(self) -> str:
        """``http://HOST:PORT/``; a wildcard host is given as loopback, which reaches it."""
        host = {"": "127.0.0.1", "0.0.0.0": "127.0.0.1", "::": "::1"}.get(self.host, self.host)
        return f"http://{f'[{host}]' if ':' in host else host}:{self.port}/"


def serve_forever(root: PathLike, host: str = "127.0.0.1", port: int = 8000,
                  isolation: bool = True) -> None:
    """Serve ``root`` at ``/`` until Ctrl+C, logging each request (see StaticServer)."""
    with StaticServer(root, host=host, port=port, isolation=isolation, quiet=False) as server:
        print(f"Serving {os.path.abspath(os.fspath(root))} at {server.url}\nPress Ctrl+C to stop.",
              flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            while True:  # short sleeps keep Ctrl+C responsive everywhere
                time.sleep(0.5)
        print("Stopped.", flush=True)
