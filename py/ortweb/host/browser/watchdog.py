"""Noticing a browser elsewhere that froze, and cutting it loose.

A remote browser, or its Playwright server, that stops responding without closing
its connection (its processes stopped, its machine wedged, a network that drops
packets silently) leaves Playwright waiting for ever: a call of the sync API on it
never returns, and Playwright's own timeouts run on the far side, where a stopped
server never fires them. So a remote :class:`~.launch.Browser` is connected through a
:class:`Tether`, a loopback TCP relay of the host's own to the endpoint, and a
:class:`Watchdog` cuts the tether when the endpoint looks frozen:

- a heartbeat: every few seconds an HTTP request to the endpoint (a DevTools
  endpoint's ``/json/version``; a Playwright server answers any request). No answer
  within the freeze timeout: frozen. A refused connection is not a freeze: that
  browser went away, and Playwright sees its connection close.
- deadlines: a call the host bounds (:meth:`Watchdog.deadline`: closing a page, a
  round trip to ask whether the browser is alive) that has not returned within the
  freeze timeout: frozen (a browser stopped behind a Playwright server that still
  answers).

Cut, the connection closes under Playwright: every call waiting on it raises at
once, the browser says why (:attr:`~.launch.Browser.frozen`), and the pool drops its
endpoint (:mod:`.pool`).
"""

from __future__ import annotations

import os
import socket
import threading
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from urllib.parse import urlsplit, urlunsplit

from ..errors import BrowserError

__all__ = ["FREEZE_ENV_VAR", "FREEZE_TIMEOUT_S", "Tether", "Watchdog", "freeze_timeout"]

#: Seconds without an answer before a remote browser counts as frozen (default).
#: Generous: the browser's own process answers while SwiftShader keeps its other
#: processes busy, but a loaded 2-core host can delay it some seconds.
FREEZE_TIMEOUT_S = 60.0
#: The environment variable that sets it for every host tool and the pytest plugin.
FREEZE_ENV_VAR = "ORTWEB_BROWSER_FREEZE_TIMEOUT"
#: Seconds between heartbeats (at most; less with a short freeze timeout).
HEARTBEAT_S = 5.0


def freeze_timeout(given: float | None = None) -> float:
    """``given``, else ``$ORTWEB_BROWSER_FREEZE_TIMEOUT``, else :data:`FREEZE_TIMEOUT_S`.

    Raises
    ------
    BrowserError
        When the variable is not a positive number.
    """
    if given is not None:
        return float(given)
    text = os.environ.get(FREEZE_ENV_VAR, "").strip()
    if not text:
        return FREEZE_TIMEOUT_S
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value > 0:
        raise BrowserError(f"${FREEZE_ENV_VAR}: expected seconds (a positive number), "
                           f"got {text!r}")
    return value


class Tether:
    """A loopback TCP relay to ``host:port`` that the host can cut from any thread.

    Playwright connects to ``127.0.0.1:`` :attr:`port` instead of the endpoint; every
    connection made there is relayed both ways, byte for byte, until :meth:`cut`.
    """

    def __init__(self, host: str, port: int, connect_timeout: float = 30.0):
        self._target = (host, port)
        self._connect_timeout = connect_timeout
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._lock = threading.Lock()
        self._sockets: set[socket.socket] = set()
        self._cut = False
        threading.Thread(target=self._accept, name="ortweb-tether", daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return  # cut
            try:
                upstream = socket.create_connection(self._target, self._connect_timeout)
                upstream.settimeout(None)
            except OSError:
                client.close()
                continue
            with self._lock:
                if self._cut:
                    client.close()
                    upstream.close()
                    return
                self._sockets.update((client, upstream))
            for src, dst in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(src, dst), name="ortweb-tether",
                                 daemon=True).start()

    def _pipe(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(1 << 20):
                dst.sendall(data)
        except OSError:
            pass  # cut, or the other side closed
        finally:
            # One side gone: the protocol's connection is over both ways.
            self._close(src, dst)

    def _close(self, *sockets: socket.socket) -> None:
        for sock in sockets:
            with self._lock:
                self._sockets.discard(sock)
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass  # not connected any more
            sock.close()

    def cut(self) -> None:
        """Close the relay and every connection through it (safe twice)."""
        with self._lock:
            self._cut = True
            sockets = list(self._sockets)
        try:
            self._listener.close()
        finally:
            self._close(*sockets)


def heartbeat_url(url: str, kind: str) -> str:
    """The HTTP URL a heartbeat asks: a DevTools endpoint's ``/json/version``, a
    Playwright server's root (it answers any request)."""
    parts = urlsplit(url)
    scheme = "https" if parts.scheme.lower() in ("wss", "https") else "http"
    path = "/json/version" if kind == "cdp" else "/"
    return urlunsplit((scheme, parts.netloc, path, "", ""))


class Watchdog:
    """Calls ``on_freeze(reason)`` once, when ``url`` stops answering or a deadline passes.

    Parameters
    ----------
    url : str
        What the heartbeat asks (:func:`heartbeat_url`).
    timeout : float
        Seconds without an answer (or past a deadline) that make a freeze.
    on_freeze : callable
        Called from the watchdog's thread, with why.
    """

    def __init__(self, url: str, timeout: float, on_freeze: Callable[[str], None]):
        self.url = url
        self.timeout = timeout
        self._on_freeze = on_freeze
        self._stop = threading.Event()
        self._fired = threading.Lock()
        self._thread = threading.Thread(target=self._beat, name="ortweb-watchdog",
                                        daemon=True)
        self._thread.start()

    def _freeze(self, reason: str) -> None:
        if self._stop.is_set() or not self._fired.acquire(blocking=False):
            return
        self._stop.set()
        self._on_freeze(reason)

    def _beat(self) -> None:
        interval = min(HEARTBEAT_S, self.timeout / 2)
        while not self._stop.wait(interval):
            try:
                with urllib.request.urlopen(self.url, timeout=self.timeout) as response:
                    response.read(1 << 16)
            except urllib.error.HTTPError:
                pass  # an answer all the same
            except (OSError, ValueError) as exc:
                # Refused or reset: the browser went away, which Playwright sees itself.
                if isinstance(exc, TimeoutError) or isinstance(getattr(exc, "reason", None),
                                                               TimeoutError):
                    self._freeze(f"no answer to a heartbeat ({self.url}) for "
                                 f"{self.timeout:g} s")

    @contextmanager
    def deadline(self, what: str) -> Iterator[None]:
        """Count the browser as frozen if the block has not ended within the timeout."""
        timer = threading.Timer(self.timeout, self._freeze,
                                [f"{what} did not return in {self.timeout:g} s"])
        timer.daemon = True
        timer.start()
        try:
            yield
        finally:
            timer.cancel()

    def stop(self) -> None:
        """Stop watching (safe twice)."""
        self._stop.set()
