"""A small static file server for the browser side of ortweb.

Pyodide and onnxruntime-web need a real HTTP origin: ``file://`` URLs cannot
fetch wasm with the right MIME type, and multi-threaded wasm needs
``SharedArrayBuffer``, which browsers only enable on cross-origin isolated
pages (COOP ``same-origin`` plus COEP ``require-corp``). This module provides
exactly that and nothing more, using only the standard library so that it can
run wherever the package is installed.

The server is meant for loopback use by the CLI, the test harness and the
``ortweb serve`` development command. It is not a production web server, but
it does refuse to serve anything outside its mounted directories, because the
test harness mounts temporary folders next to user data.

Examples
--------
>>> from pathlib import Path
>>> with StaticServer(Path("web")) as server:  # doctest: +SKIP
...     print(server.url)
http://127.0.0.1:54321/
"""

from __future__ import annotations

import os
import selectors
import shutil
import socket
import socketserver
import stat
import sys
import threading
import time
from collections.abc import Mapping
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Final, cast
from urllib.parse import unquote, urlsplit

__all__ = ["StaticServer", "content_type_for", "serve_forever"]

PathLike = str | os.PathLike[str]
"""Anything accepted as a directory to mount."""

_CHUNK_SIZE: Final = 1 << 20

# Enough rounds to unwrap any plausible multiple encoding; anything still
# changing after that is refused rather than guessed at.
_MAX_DECODE_ROUNDS: Final = 4

_OCTET_STREAM: Final = "application/octet-stream"

# An explicit table rather than the ``mimetypes`` module, whose answers depend
# on the host's /etc/mime.types or Windows registry; browsers refuse
# ``WebAssembly.instantiateStreaming`` and module scripts with a wrong type.
_MIME_TYPES: Final[Mapping[str, str]] = {
    ".html": "text/html; charset=utf-8",
    ".htm": "text/html; charset=utf-8",
    ".js": "text/javascript",
    ".mjs": "text/javascript",
    ".cjs": "text/javascript",
    ".wasm": "application/wasm",
    ".json": "application/json",
    ".map": "application/json",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
    ".webp": "image/webp",
    ".ico": "image/x-icon",
    ".woff": "font/woff",
    ".woff2": "font/woff2",
    ".txt": "text/plain; charset=utf-8",
    ".md": "text/markdown; charset=utf-8",
    ".py": "text/x-python; charset=utf-8",
    ".onnx": _OCTET_STREAM,
    ".ort": _OCTET_STREAM,
    ".pb": _OCTET_STREAM,
    ".npz": _OCTET_STREAM,
    ".npy": _OCTET_STREAM,
    ".data": _OCTET_STREAM,
    ".bin": _OCTET_STREAM,
    ".whl": _OCTET_STREAM,
    ".zip": _OCTET_STREAM,
    ".tar": _OCTET_STREAM,
    ".bz2": _OCTET_STREAM,
    # Without Content-Encoding a browser must not inflate these on its own.
    ".gz": _OCTET_STREAM,
}


def content_type_for(path: PathLike) -> str:
    """Return the ``Content-Type`` the server sends for a file name.

    Parameters
    ----------
    path : str or os.PathLike
        File name or path; only its (case-insensitive) suffix matters.

    Returns
    -------
    str
        The MIME type, with a charset for text types;
        ``application/octet-stream`` for unknown suffixes.
    """
    _, suffix = os.path.splitext(os.fspath(path))
    return _MIME_TYPES.get(suffix.lower(), _OCTET_STREAM)


def _normalise_prefix(prefix: str) -> str:
    """Return ``prefix`` with leading and trailing slashes, or raise ValueError."""
    if not prefix.startswith("/"):
        raise ValueError(f"mount prefix must start with '/': {prefix!r}")
    if "\\" in prefix or "\x00" in prefix or "?" in prefix or "#" in prefix:
        raise ValueError(f"invalid character in mount prefix: {prefix!r}")
    if ".." in prefix.split("/"):
        raise ValueError(f"mount prefix must not contain '..': {prefix!r}")
    return prefix if prefix.endswith("/") else prefix + "/"


def _has_forbidden_part(path: str) -> bool:
    """Whether a (decoded) URL path could name something outside its mount."""
    if "\\" in path:
        return True
    if any(ord(ch) < 0x20 or ord(ch) == 0x7F for ch in path):
        return True
    return ".." in path.split("/")


def _is_absolute_remainder(remainder: str) -> bool:
    """Whether joining ``remainder`` to a directory would discard the directory."""
    return (
        remainder.startswith("/")
        or os.path.isabs(remainder)
        or bool(os.path.splitdrive(remainder)[0])
    )


def _is_inside(root: str, target: str) -> bool:
    """Whether ``target`` equals or lies below ``root`` (both real paths)."""
    try:
        return os.path.commonpath([root, target]) == root
    except ValueError:
        # Different drives on Windows, or a mix of absolute and relative.
        return False


class _HTTPServer(ThreadingHTTPServer):
    """ThreadingHTTPServer that knows its owner and its open connections."""

    daemon_threads = True

    def __init__(
        self,
        address: tuple[str, int],
        owner: StaticServer,
        address_family: socket.AddressFamily,
    ) -> None:
        self.owner = owner
        self.address_family = address_family
        self.connections: set[socket.socket] = set()
        self.connections_lock = threading.Lock()
        # handle_request() must not block once select() has reported the
        # listening socket readable (the client may already have gone).
        self.timeout = 0
        self._stop_requested = False
        self._stopped = threading.Event()
        # A self-pipe wakes the serving loop at once on stop, where the stock
        # serve_forever() would only notice at its next poll.
        self._wake_r, self._wake_w = socket.socketpair()
        try:
            super().__init__(address, _Handler)
        except BaseException:
            self._wake_r.close()
            self._wake_w.close()
            raise

    def server_bind(self) -> None:
        # HTTPServer.server_bind calls socket.getfqdn(), a reverse DNS lookup
        # that can stall for seconds in sandboxes; the name is never used.
        socketserver.TCPServer.server_bind(self)
        host, port = self.server_address[:2]
        self.server_name = str(host)
        self.server_port = int(port)

    def serve_until_stopped(self) -> None:
        """Accept and dispatch connections until :meth:`request_stop`."""
        self._stopped.clear()
        try:
            with selectors.DefaultSelector() as selector:
                selector.register(self, selectors.EVENT_READ)
                selector.register(self._wake_r, selectors.EVENT_READ)
                while not self._stop_requested:
                    ready = selector.select()
                    if self._stop_requested:
                        break
                    if any(key.fileobj is self for key, _ in ready):
                        self.handle_request()
                    self.service_actions()
        finally:
            self._stopped.set()

    def request_stop(self) -> None:
        """Make :meth:`serve_until_stopped` return, and wait until it has."""
        self._stop_requested = True
        try:
            self._wake_w.send(b"\0")
        except OSError:
            pass
        self._stopped.wait()

    def server_close(self) -> None:
        super().server_close()
        self._wake_r.close()
        self._wake_w.close()

    def process_request(self, request: Any, client_address: Any) -> None:
        # Registered here, in the serving thread, so that once request_stop()
        # returns the set is complete and stop() can close every connection.
        with self.connections_lock:
            self.connections.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self.connections_lock:
            self.connections.discard(request)
        super().shutdown_request(request)

    def close_connections(self) -> None:
        """Shut down keep-alive connections so their threads end promptly."""
        with self.connections_lock:
            connections = list(self.connections)
        for conn in connections:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def handle_error(self, request: Any, client_address: Any) -> None:
        # Browsers routinely abort downloads (navigation, cancelled fetches);
        # those are not errors worth a traceback.
        exc = sys.exc_info()[1]
        if isinstance(exc, ConnectionError | TimeoutError):
            return
        super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    """Request handler: GET and HEAD of files below the owner's mounts."""

    # Keep-alive matters: Pyodide start-up fetches dozens of files.
    protocol_version = "HTTP/1.1"
    server_version = "ortweb"
    sys_version = ""
    # Bounds how long an idle keep-alive connection holds a thread.
    timeout = 120
    # Headers and body go out in separate writes; with Nagle's algorithm and
    # the client's delayed ACK each small response would stall ~40 ms.
    disable_nagle_algorithm = True

    _method_not_allowed = False

    @property
    def _owner(self) -> StaticServer:
        return cast(_HTTPServer, self.server).owner

    # -- protocol plumbing -------------------------------------------------

    def parse_request(self) -> bool:
        if not super().parse_request():
            return False
        if self.command not in ("GET", "HEAD"):
            self._method_not_allowed = True
            # Any request body is left unread, so the connection cannot be
            # reused for a following request.
            self.close_connection = True
            self.send_error(HTTPStatus.METHOD_NOT_ALLOWED)
            return False
        return True

    def end_headers(self) -> None:
        # Every response, errors and redirects included, gets these: a page
        # is only cross-origin isolated if all its subresources agree.
        if self._owner.isolation:
            self.send_header("Cross-Origin-Opener-Policy", "same-origin")
            self.send_header("Cross-Origin-Embedder-Policy", "require-corp")
            self.send_header("Cross-Origin-Resource-Policy", "same-origin")
        # Files under test change between runs while the browser may persist.
        self.send_header("Cache-Control", "no-cache")
        self.send_header("X-Content-Type-Options", "nosniff")
        if self._method_not_allowed:
            self.send_header("Allow", "GET, HEAD")
        super().end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        if not self._owner.quiet:
            super().log_message(format, *args)

    def log_error(self, format: str, *args: Any) -> None:
        # send_error() already logs the request line with its status; a second
        # line would break the one-line-per-request promise of quiet=False.
        pass

    def do_GET(self) -> None:
        self._serve(head=False)

    def do_HEAD(self) -> None:
        self._serve(head=True)

    # -- the actual work ---------------------------------------------------

    def _redirect(self, location: str) -> None:
        self.send_response(HTTPStatus.MOVED_PERMANENTLY)
        self.send_header("Location", location)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def _serve(self, head: bool) -> None:
        raw = self.path
        if "://" in raw.split("?", 1)[0]:
            # Absolute-form request target (RFC 9112 section 3.2.2).
            raw = urlsplit(raw).path or "/"
        raw, _, query = raw.partition("?")
        raw = raw.partition("#")[0]
        if not raw.startswith("/") or not raw.isascii():
            self.send_error(HTTPStatus.BAD_REQUEST)
            return

        forms = [raw]
        try:
            for _ in range(_MAX_DECODE_ROUNDS):
                decoded = unquote(forms[-1], errors="strict")
                if decoded == forms[-1]:
                    break
                forms.append(decoded)
            else:
                # Still encoded after several rounds: refuse rather than guess
                # what some later layer might decode it to.
                self.send_error(HTTPStatus.FORBIDDEN)
                return
        except UnicodeDecodeError:
            self.send_error(HTTPStatus.BAD_REQUEST)
            return
        if any(_has_forbidden_part(form) for form in forms):
            self.send_error(HTTPStatus.FORBIDDEN)
            return

        # Only one decoding names the file; the others merely had to be safe.
        path = forms[1] if len(forms) > 1 else forms[0]
        mounts = self._owner._mount_table()
        if any(path + "/" == prefix for prefix, _ in mounts):
            # So that relative URLs in the mounted index.html resolve inside it.
            self._redirect(raw + "/" + (f"?{query}" if query else ""))
            return
        match = next((entry for entry in mounts if path.startswith(entry[0])), None)
        if match is None:
            self.send_error(HTTPStatus.NOT_FOUND)
            return
        prefix, root = match

        for form in forms:
            if form.startswith(prefix) and _is_absolute_remainder(form[len(prefix) :]):
                self.send_error(HTTPStatus.FORBIDDEN)
                return
        parts = [part for part in path[len(prefix) :].split("/") if part not in ("", ".")]

        root_real = os.path.realpath(root)
        # realpath follows symlinks, so a link pointing out of the mount lands
        # outside root_real and is refused below.
        target = os.path.realpath(os.path.join(root_real, *parts))
        if not _is_inside(root_real, target):
            self.send_error(HTTPStatus.FORBIDDEN)
            return
        if os.path.isdir(target):
            if not path.endswith("/"):
                self._redirect(raw + "/" + (f"?{query}" if query else ""))
                return
            target = os.path.realpath(os.path.join(target, "index.html"))
            if not _is_inside(root_real, target):
                self.send_error(HTTPStatus.FORBIDDEN)
                return
        self._send_file(target, head)

    def _send_file(self, target: str, head: bool) -> None:
        try:
            # Checked before open() so that a FIFO cannot block the thread.
            if not stat.S_ISREG(os.stat(target).st_mode):
                self.send_error(HTTPStatus.NOT_FOUND)
                return
            f = open(target, "rb")
        except PermissionError:
            self.send_error(HTTPStatus.FORBIDDEN)
            return
        except OSError:
            self.send_error(HTTPStatus.NOT_FOUND)
            return
        try:
            # The size of the opened file, not of the name, in case the file
            # was replaced between stat() and open().
            size = os.fstat(f.fileno()).st_size
            self.send_response(HTTPStatus.OK)
            self.send_header("Content-Type", content_type_for(target))
            self.send_header("Content-Length", str(size))
            self.end_headers()
            if not head:
                shutil.copyfileobj(f, self.wfile, _CHUNK_SIZE)
        except (ConnectionError, TimeoutError):
            self.close_connection = True
        finally:
            f.close()


class StaticServer:
    """Threaded static file server with cross-origin isolation headers.

    Parameters
    ----------
    root : str, os.PathLike or Mapping[str, str or os.PathLike]
        A directory to serve at ``/``, or a mapping from URL prefixes (such as
        ``"/pyodide/"``, ``"/ort/"`` or ``"/"``) to directories. The longest
        matching prefix wins. Prefixes get a trailing slash if they lack one.
    host : str, default "127.0.0.1"
        Interface to bind. Keep the loopback default unless the page really
        must be reachable from elsewhere.
    port : int, default 0
        TCP port; 0 picks a free port at :meth:`start`.
    isolation : bool, default True
        Send ``Cross-Origin-Opener-Policy: same-origin``,
        ``Cross-Origin-Embedder-Policy: require-corp`` and
        ``Cross-Origin-Resource-Policy: same-origin`` on every response, which
        makes pages cross-origin isolated (needed for ``SharedArrayBuffer``
        and so for threaded wasm).
    quiet : bool, default True
        When false, log one line per request to stderr.

    Raises
    ------
    NotADirectoryError
        If a mounted path is not an existing directory.
    ValueError
        If a prefix does not start with ``/`` or contains ``..``.

    Notes
    -----
    Only ``GET`` and ``HEAD`` are served (other methods get 405). Directories
    serve their ``index.html`` or 404; there are no listings. Request paths
    are percent-decoded repeatedly, and any decoding that contains a ``..``
    segment, a backslash, a control character or an absolute path is refused
    with 403; the resolved real path must also lie inside the real path of
    the mount, which refuses symlinks that point out of it.

    Every response carries ``Cache-Control: no-cache`` and
    ``X-Content-Type-Options: nosniff``.

    Examples
    --------
    >>> mounts = {"/": Path("web"), "/pyodide/": Path("dist/pyodide")}
    >>> with StaticServer(mounts) as server:  # doctest: +SKIP
    ...     page = server.url + "index.html"
    """

    def __init__(
        self,
        root: PathLike | Mapping[str, PathLike],
        host: str = "127.0.0.1",
        port: int = 0,
        isolation: bool = True,
        quiet: bool = True,
    ) -> None:
        self._host = host
        self._requested_port = port
        self.isolation = isolation
        self.quiet = quiet
        self._lock = threading.Lock()
        self._mounts: dict[str, str] = {}
        # Rebuilt on every change and read without the lock: request threads
        # only ever see a complete, sorted snapshot.
        self._table: tuple[tuple[str, str], ...] = ()
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._address: tuple[str, int] | None = None
        mapping = root if isinstance(root, Mapping) else {"/": root}
        for prefix, path in mapping.items():
            self.add_mount(prefix, path)

    # -- mounts ------------------------------------------------------------

    def add_mount(self, prefix: str, path: PathLike) -> None:
        """Serve directory ``path`` under URL ``prefix``.

        Safe to call while the server is running; an existing mount with the
        same prefix is replaced.

        Parameters
        ----------
        prefix : str
            URL prefix starting with ``/``, e.g. ``"/run-3/"``.
        path : str or os.PathLike
            Existing directory to serve.

        Raises
        ------
        NotADirectoryError
            If ``path`` is not an existing directory.
        ValueError
            If ``prefix`` is malformed.
        """
        prefix = _normalise_prefix(prefix)
        directory = os.path.abspath(os.fspath(path))
        if not os.path.isdir(directory):
            raise NotADirectoryError(f"cannot mount {directory!r}: not a directory")
        with self._lock:
            self._mounts[prefix] = directory
            self._rebuild_table()

    def remove_mount(self, prefix: str) -> bool:
        """Stop serving URL ``prefix``.

        Safe to call while the server is running, and for prefixes that are
        not mounted, so it can sit in a ``finally`` block.

        Parameters
        ----------
        prefix : str
            A prefix as given to :meth:`add_mount` (trailing slash optional).

        Returns
        -------
        bool
            Whether a mount was removed.
        """
        prefix = _normalise_prefix(prefix)
        with self._lock:
            removed = self._mounts.pop(prefix, None) is not None
            self._rebuild_table()
        return removed

    @property
    def mounts(self) -> dict[str, str]:
        """Copy of the mount table: URL prefix to absolute directory."""
        with self._lock:
            return dict(self._mounts)

    def _rebuild_table(self) -> None:
        self._table = tuple(sorted(self._mounts.items(), key=lambda item: -len(item[0])))

    def _mount_table(self) -> tuple[tuple[str, str], ...]:
        return self._table

    # -- lifecycle ---------------------------------------------------------

    def start(self) -> StaticServer:
        """Bind the socket and serve from a daemon thread.

        Returns
        -------
        StaticServer
            ``self``, for chaining.

        Raises
        ------
        RuntimeError
            If the server is already running.
        OSError
            If the address cannot be bound.
        """
        with self._lock:
            if self._httpd is not None:
                raise RuntimeError("server is already running")
            family = socket.AF_INET6 if ":" in self._host else socket.AF_INET
            httpd = _HTTPServer((self._host, self._requested_port), self, family)
            host, port = httpd.server_address[:2]
            self._address = (str(host), int(port))
            thread = threading.Thread(
                target=httpd.serve_until_stopped,
                name=f"ortweb-static-{port}",
                daemon=True,
            )
            thread.start()
            self._httpd = httpd
            self._thread = thread
        return self

    def stop(self) -> None:
        """Stop serving and close the socket; safe to call more than once."""
        with self._lock:
            httpd, thread = self._httpd, self._thread
            self._httpd = self._thread = None
        if httpd is None:
            return
        httpd.request_stop()
        httpd.server_close()
        httpd.close_connections()
        if thread is not None:
            thread.join(timeout=5)

    @property
    def running(self) -> bool:
        """Whether the server is currently serving."""
        return self._httpd is not None

    def __enter__(self) -> StaticServer:
        if not self.running:
            self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # -- addresses ---------------------------------------------------------

    @property
    def host(self) -> str:
        """The interface the server binds (as given, e.g. ``"127.0.0.1"``)."""
        return self._host

    @property
    def address(self) -> tuple[str, int]:
        """The bound ``(host, port)`` as reported by the socket.

        Raises
        ------
        RuntimeError
            If the server has never been started.
        """
        if self._address is None:
            raise RuntimeError("server has not been started")
        return self._address

    @property
    def port(self) -> int:
        """The bound TCP port (the real one when constructed with ``port=0``).

        Raises
        ------
        RuntimeError
            If the server has never been started.
        """
        return self.address[1]

    @property
    def url(self) -> str:
        """Base URL with a trailing slash, e.g. ``"http://127.0.0.1:8000/"``.

        Raises
        ------
        RuntimeError
            If the server has never been started.
        """
        host = self._host
        # A wildcard bind is not a connectable address; loopback reaches it.
        if host in ("", "0.0.0.0"):
            host = "127.0.0.1"
        elif host == "::":
            host = "::1"
        if ":" in host:
            host = f"[{host}]"
        return f"http://{host}:{self.port}/"

    def __repr__(self) -> str:
        where = self.url if self._address is not None else "not started"
        return f"<StaticServer {where} mounts={sorted(self.mounts)}>"


def serve_forever(
    root: PathLike,
    host: str = "127.0.0.1",
    port: int = 8000,
    isolation: bool = True,
) -> None:
    """Serve ``root`` until interrupted with Ctrl+C, logging each request.

    Parameters
    ----------
    root : str or os.PathLike
        Directory to serve at ``/``.
    host : str, default "127.0.0.1"
        Interface to bind.
    port : int, default 8000
        TCP port; 0 picks a free one.
    isolation : bool, default True
        Send the cross-origin isolation headers (see :class:`StaticServer`).
    """
    with StaticServer(root, host=host, port=port, isolation=isolation, quiet=False) as server:
        print(f"Serving {os.path.abspath(os.fspath(root))} at {server.url}", flush=True)
        print("Press Ctrl+C to stop.", flush=True)
        try:
            # Sleeping in short steps keeps Ctrl+C responsive on every
            # platform, unlike an unbounded wait on a lock or event.
            while True:
                time.sleep(0.5)
        except KeyboardInterrupt:
            print("Stopped.", flush=True)
