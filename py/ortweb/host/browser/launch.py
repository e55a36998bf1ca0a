"""Launching the system's headless Chromium (never a downloaded one), or connecting
to one elsewhere (:mod:`.endpoint`), with :mod:`.flags`' command line.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
from contextlib import nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from ..errors import BrowserError
from .endpoint import Endpoint, connect, parse_endpoint
from .flags import launch_flags, wasm_tiers
from .route import OfflineRouter
from .watchdog import Tether, Watchdog, heartbeat_url
from .watchdog import freeze_timeout as _freeze_timeout

if TYPE_CHECKING:
    from .page import PyodidePage

__all__ = ["Browser", "Profile", "find_chromium"]


def find_chromium(explicit: str | os.PathLike[str] | None = None) -> str:
    """The Chromium binary: ``explicit``, ``$ORTWEB_BROWSER``, or ``chromium`` on PATH.

    Raises
    ------
    BrowserError
        When the binary named does not exist, or none is found.
    """
    for candidate in (explicit, os.environ.get("ORTWEB_BROWSER")):
        if candidate:
            path = shutil.which(str(candidate)) or str(candidate)
            if not Path(path).exists():
                raise BrowserError(f"browser binary {candidate!s} does not exist")
            return path
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    raise BrowserError(
        "no Chromium found: install Debian's chromium (apt-get install chromium), or "
        "set ORTWEB_BROWSER to a Chromium binary"
    )


_thread = threading.local()


def acquire_playwright() -> Any:
    """This thread's started sync Playwright, shared: Playwright refuses a second
    ``sync_playwright()`` in a thread where one runs ("Sync API inside the asyncio
    loop"), so every browser of a thread (a test session's, a test's own remote one,
    a pool's) takes a reference to one instance. Give it back with
    :func:`release_playwright`."""
    state = getattr(_thread, "playwright", None)
    if state is None:
        from playwright.sync_api import sync_playwright

        state = _thread.playwright = [sync_playwright().start(), 0]
    state[1] += 1
    return state[0]


def release_playwright() -> None:
    """Give back a reference from :func:`acquire_playwright`; the last one stops it."""
    state = getattr(_thread, "playwright", None)
    if state is None:
        return
    state[1] -= 1
    if state[1] <= 0:
        _thread.playwright = None
        state[0].stop()


class Browser:
    """A headless Chromium, closed in ``close()`` (safe twice) or by ``with``.

    Parameters
    ----------
    executable : str, optional
        Chromium binary (see :func:`find_chromium`); not used with ``endpoint``.
    webgpu : bool
        Launch with WebGPU enabled (SwiftShader). False gives a browser with no
        adapter, for fallback tests.
    playwright : optional
        A started Playwright to share (see :meth:`sibling`).
    endpoint : str or Endpoint, optional
        A browser elsewhere to connect to instead of launching one (see
        :mod:`.endpoint`): every context it opens is relayed from the host.
    connect_timeout : float
        Seconds to connect to ``endpoint``.
    freeze_timeout : float, optional
        Seconds without an answer before a browser elsewhere counts as frozen and is
        cut loose (see :mod:`.watchdog`; default ``$ORTWEB_BROWSER_FREEZE_TIMEOUT``,
        else 60).
    tiers : str, optional
        How V8 compiles the pages' WebAssembly, ``"all"`` or ``"baseline"`` (see
        :data:`~.flags.WASM_TIERS`; default ``$ORTWEB_WASM_TIERS``, else ``"all"``). A
        DevTools endpoint's browser runs with the flags it was started with.

    Attributes
    ----------
    endpoint : Endpoint or None
        Where the browser runs (None: launched here).
    tiers : str
        The WebAssembly tiers it was launched (or asked to be launched) with; '' for a
        DevTools endpoint's browser, started elsewhere with flags of its own.
    version : str
        The browser's version.
    frozen : str
        Why a browser elsewhere was cut loose ('' while it answers).
    """

    def __init__(self, executable: str | None = None, webgpu: bool = True,
                 *, playwright: Any = None, endpoint: str | Endpoint | None = None,
                 connect_timeout: float = 30.0, freeze_timeout: float | None = None,
                 tiers: str | None = None):
        if isinstance(endpoint, str):
            endpoint = parse_endpoint(endpoint)
        self.executable = find_chromium(executable) if endpoint is None else ""
        self.webgpu = webgpu
        self.tiers = wasm_tiers(tiers)
        self.endpoint: Endpoint | None = endpoint
        self._connect_timeout = connect_timeout
        self._freeze_timeout = freeze_timeout
        self.frozen = ""
        self._tether: Tether | None = None
        self._watchdog: Watchdog | None = None
        self._owns_pw = playwright is None
        self._pw = acquire_playwright() if playwright is None else playwright
        try:
            args = launch_flags(webgpu, self.tiers)
            if endpoint is None:
                self._browser = self._pw.chromium.launch(
                    executable_path=self.executable, headless=True, args=args
                )
            else:
                timeout = _freeze_timeout(freeze_timeout)
                parts = urlsplit(endpoint.url)
                # TLS endpoints are not relayed (the host would have to speak TLS for
                # them): the heartbeat still notices a freeze, but cannot unblock a call.
                if parts.scheme.lower() in ("ws", "http") and parts.hostname:
                    self._tether = Tether(parts.hostname, parts.port or 80, connect_timeout)
                self._browser, self.endpoint = connect(
                    self._pw, endpoint, args, timeout=connect_timeout,
                    tether=self._tether.port if self._tether is not None else None)
                self._watchdog = Watchdog(heartbeat_url(self.endpoint.url, self.endpoint.kind
                                                        or "playwright"),
                                          timeout, self._on_freeze)
        except BaseException:
            if self._tether is not None:
                self._tether.cut()
            if self._owns_pw:
                release_playwright()
            raise
        if self.endpoint is not None and self.endpoint.kind == "cdp":
            self.tiers = ""  # its flags were given where it started, not here
        self.version = self._browser.version
        self._shared: dict[str, tuple[Any, OfflineRouter]] = {}
        self._closed = False

    @property
    def remote(self) -> bool:
        """Whether the browser runs elsewhere (its contexts are relayed)."""
        return self.endpoint is not None

    @property
    def connected(self) -> bool:
        """Whether the browser is still there (a remote one can go away, or freeze)."""
        return not self._closed and not self.frozen and bool(self._browser.is_connected())

    def alive(self) -> bool:
        """Whether the browser answers now (a round trip: a context opened and closed).

        :attr:`connected` learns that a remote browser went away only when
        Playwright has handled the news; this asks (within the freeze timeout).
        """
        if not self.connected:
            return False
        try:
            with self.bounded("a round trip"):
                self._browser.new_context().close()
        except Exception:
            return False
        return not self.frozen

    def _on_freeze(self, reason: str) -> None:
        where = self.endpoint.text if self.endpoint is not None else "local"
        self.frozen = f"its browser at {where} stopped answering ({reason})"
        if self._tether is not None:
            self._tether.cut()

    def bounded(self, what: str) -> Any:
        """A context in which a call on a browser elsewhere must return within the
        freeze timeout, or the browser counts as frozen and is cut loose (every call
        waiting on it raises); no limit on a browser launched here."""
        if self._watchdog is None:
            return nullcontext()
        return self._watchdog.deadline(what)

    @property
    def name(self) -> str:
        """``chromium 156.0.… @ ws://…`` (``@ local`` when launched here)."""
        where = self.endpoint.text if self.endpoint is not None else "local"
        return f"chromium {self.version} @ {where}"

    def sibling(self, webgpu: bool = True) -> Browser:
        """Another Chromium (e.g. without WebGPU) sharing this one's Playwright.

        Raises
        ------
        BrowserError
            For a DevTools endpoint: its one browser cannot be launched again
            with other flags.
        """
        if self.endpoint is not None and self.endpoint.kind == "cdp":
            raise BrowserError(f"browser endpoint {self.endpoint.text} is a running browser "
                               "(DevTools): it has no sibling with other flags")
        return Browser(self.executable or None, webgpu=webgpu, playwright=self._pw,
                       endpoint=self.endpoint, connect_timeout=self._connect_timeout,
                       freeze_timeout=self._freeze_timeout, tiers=self.tiers)

    def new_context(self, router: OfflineRouter | None = None, *,
                    origin: str | None = None, timezone_id: str | None = None,
                    service_workers: bool = True) -> Any:
        """A Playwright browser context (own cache and storage).

        Parameters
        ----------
        router : OfflineRouter, optional
            Sees every request of the context and refuses those that leave the
            local server. Without it nothing is checked (a page that must be
            timed without the router's round trips), except on a remote
            browser, which reaches the local server only through a router
            (one is made, refusing what leaves ``origin``).
        origin : str, optional
            The local server's URL, for the router a remote browser gets when
            none is given.
        timezone_id : str, optional
            The time zone its pages see (an IANA name), instead of the machine's.
        service_workers : bool
            False: its pages cannot register service workers (as in browsers and
            windows without them), so what they fetch comes from the network or the
            HTTP cache.
        """
        if router is None and self.remote and origin is not None:
            from .capture import PageLog

            router = OfflineRouter(origin, PageLog())
        if router is not None and self.remote:
            router.relay = True
        context = self._browser.new_context(
            **({"timezone_id": timezone_id} if timezone_id else {}),
            **({} if service_workers else {"service_workers": "block"}))
        if router is not None:
            try:
                router.install(context)
            except BaseException:
                context.close()
                raise
        return context

    def shared_context(self, origin: str) -> tuple[Any, OfflineRouter]:
        """The context this remote browser's runner pages share, and its router.

        One per local server (``origin``), open as long as the browser: what the
        pages' service worker keeps there (``web/runner-sw.js``: Pyodide, numpy,
        ORT-web's wasm by sha256) is not relayed again for the next page. Each page
        gets its own log with :meth:`OfflineRouter.attach`.
        """
        from .capture import PageLog

        key = origin.rstrip("/")
        shared = self._shared.get(key)
        if shared is None or not self.connected:
            router = OfflineRouter(origin, PageLog())
            shared = self._shared[key] = (self.new_context(router), router)
        return shared

    def profile(self) -> Profile:
        """A browser with a fresh on-disk profile of its own (see :class:`Profile`)."""
        return Profile(self)

    def new_page(self, base_url: str, **kw: Any) -> PyodidePage:
        """A new page (own context) on ``base_url``; see :class:`.page.PyodidePage`."""
        from .page import PyodidePage

        return PyodidePage(self, base_url, **kw)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            with self.bounded("closing the browser"):
                self._browser.close()
        finally:
            if self._watchdog is not None:
                self._watchdog.stop()
            if self._tether is not None:
                self._tether.cut()
            if self._owns_pw:
                release_playwright()

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Profile:
    """A Chromium with a fresh on-disk profile (a temporary user-data folder), closed
    with its one context.

    :meth:`Browser.new_context` gives off-the-record contexts, which keep their
    storage in memory (their Cache Storage refuses a file of 256 MiB, "Unexpected
    internal error"); a profile on disk keeps it on disk, as a user's browser does.
    :meth:`new_context` has :class:`Browser`'s form, so a :class:`~.page.PyodidePage`
    opens in the profile; the profile's processes are
    found by its folder (:meth:`renderer_pids`).
    """

    #: A profile's browser is launched here (see :attr:`Browser.remote`).
    remote = False

    def __init__(self, browser: Browser) -> None:
        if browser.remote:
            raise BrowserError(f"a fresh on-disk profile needs a Chromium launched here, not "
                               f"{browser.name}")
        self.folder = tempfile.mkdtemp(prefix="ortweb-profile-")
        args = launch_flags(browser.webgpu, browser.tiers)
        try:
            self._context = browser._pw.chromium.launch_persistent_context(
                self.folder, executable_path=browser.executable, headless=True, args=args)
        except BaseException:
            shutil.rmtree(self.folder, ignore_errors=True)
            raise
        self._closed = False

    def new_context(self, router: OfflineRouter | None = None) -> Any:
        """The profile's context (one per profile), routed through ``router`` when given."""
        if router is not None:
            router.install(self._context)
        return self._context

    def renderer_pids(self) -> set[int]:
        """This profile's renderer processes now (their command lines name its folder)."""
        want = f"--user-data-dir={self.folder}"
        pids = set()
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                # Chromium rewrites its children's titles: one space-joined string.
                args = (entry / "cmdline").read_bytes().replace(b"\0", b" ").split()
            except OSError:
                continue
            if b"--type=renderer" in args and want.encode() in args:
                pids.add(int(entry.name))
        return pids

    def close(self) -> None:
        """Close the browser and remove the profile (safe twice)."""
        if self._closed:
            return
        self._closed = True
        try:
            self._context.close()
        finally:
            shutil.rmtree(self.folder, ignore_errors=True)

    def __enter__(self) -> Profile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
