"""The browsers of a run: launched here, or connected from a pool of endpoints.

A run asks for the browser of a *slot* (a pytest-xdist worker, a conformance
job): slot ``k`` gets endpoint ``(start + k) % n``. A browser that went away
(its server killed, its machine gone) is connected again when asked for; an
endpoint that no longer answers, or whose browser froze (:mod:`.watchdog`), is
dropped from the pool, and the slot gets the next one that does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..errors import BrowserError
from .endpoint import Endpoint, parse_endpoint
from .flags import wasm_tiers
from .launch import Browser, acquire_playwright, release_playwright
from .where import probe

__all__ = ["BrowserPool"]


class BrowserPool:
    """Browsers for the slots of a run; closed in ``close()`` (safe twice) or by ``with``.

    Parameters
    ----------
    endpoints : sequence of str or Endpoint
        Where the browsers run; empty: one headless Chromium launched here.
    executable : str, optional
        The local Chromium (see :func:`~.launch.find_chromium`), without endpoints.
    webgpu : bool
        WebGPU on (see :class:`~.launch.Browser`).
    start : int
        The endpoint of slot 0 (a pytest-xdist worker's number: round robin).
    connect_timeout : float
        Seconds to connect to one endpoint.
    freeze_timeout : float, optional
        Seconds without an answer before a browser counts as frozen: it is cut loose
        and its endpoint dropped (see :mod:`.watchdog`; default
        ``$ORTWEB_BROWSER_FREEZE_TIMEOUT``, else 60).
    tiers : str, optional
        How V8 compiles the pages' WebAssembly (see :class:`~.launch.Browser`).
    log : callable, optional
        Told when a browser went away or an endpoint is dropped.
    """

    def __init__(self, endpoints: Sequence[str | Endpoint] = (), *,
                 executable: str | None = None, webgpu: bool = True, start: int = 0,
                 connect_timeout: float = 30.0, freeze_timeout: float | None = None,
                 tiers: str | None = None, log: Callable[[str], None] | None = None):
        self.endpoints = [parse_endpoint(e) if isinstance(e, str) else e for e in endpoints]
        self.executable = executable
        self.webgpu = webgpu
        self.start = start
        self.connect_timeout = connect_timeout
        self.freeze_timeout = freeze_timeout
        self.tiers = wasm_tiers(tiers)
        self._log = log or (lambda line: None)
        self._browsers: dict[int, Browser] = {}
        #: Endpoint index → why it was dropped.
        self.dropped: dict[int, str] = {}
        self._where: dict[int, dict[str, Any]] = {}
        self._slots: dict[int, int] = {}  # slot → the endpoint index it got last
        self._pw: Any = None
        self._closed = False

    @property
    def size(self) -> int:
        """How many browsers the pool can hold (1 without endpoints)."""
        return max(1, len(self.endpoints))

    def _playwright(self) -> Any:
        if self._pw is None:
            self._pw = acquire_playwright()
        return self._pw

    def _open(self, index: int) -> Browser:
        endpoint = self.endpoints[index] if self.endpoints else None
        return Browser(self.executable, webgpu=self.webgpu, playwright=self._playwright(),
                       endpoint=endpoint, connect_timeout=self.connect_timeout,
                       freeze_timeout=self.freeze_timeout, tiers=self.tiers)

    def browser(self, slot: int = 0) -> Browser:
        """The connected browser of ``slot``, connected (again) now if need be.

        Raises
        ------
        BrowserError
            When no endpoint of the pool answers (each named, with why).
        """
        if self._closed:
            raise BrowserError("the browser pool is closed")
        n = self.size
        first = (self.start + slot) % n
        for k in range(n):
            index = (first + k) % n
            if index in self.dropped:
                continue
            browser = self._browsers.get(index)
            if browser is not None and browser.connected:
                self._slots[slot] = index
                return browser
            if browser is not None and browser.frozen:
                # Connecting again would only wait on it once more.
                self.dropped[index] = browser.frozen
                self._log(f"dropped from the pool: {browser.frozen}")
                self._forget(index)
                continue
            if browser is not None:
                self._log(f"{browser.name} went away; connecting again")
                self._forget(index)
            try:
                browser = self._open(index)
            except BrowserError as exc:
                if not self.endpoints:
                    raise
                self.dropped[index] = str(exc)
                self._log(f"dropped from the pool: {exc}")
                continue
            self._browsers[index] = browser
            self._slots[slot] = index
            return browser
        raise BrowserError("no browser of the pool answers:\n  "
                           + "\n  ".join(self.dropped.values()))

    def connected(self, slot: int) -> bool:
        """Whether the browser ``slot`` got last is still there (without connecting)."""
        browser = self._browsers.get(self._slots.get(slot, -1))
        return browser is not None and browser.connected

    def replace(self, slot: int) -> Browser:
        """``slot``'s browser, after the one it had went away: connected again, or the
        next endpoint's (see :meth:`browser`)."""
        index = self._slots.get(slot)
        browser = self._browsers.get(index) if index is not None else None
        # A frozen one stays, for browser() to drop its endpoint.
        if index is not None and browser is not None and not browser.alive() \
                and not browser.frozen:
            self._log(f"{browser.name} went away; connecting again")
            self._forget(index)
        return self.browser(slot)

    def restart(self, slot: int) -> Browser:
        """``slot``'s browser closed and a new one started (or connected) in its place:
        for a retry that must not meet whatever state the old one was in."""
        index = self._slots.get(slot)
        if index is not None:
            self._forget(index)
        return self.browser(slot)

    def where(self, browser: Browser) -> dict[str, Any]:
        """Where pages of ``browser`` run (:mod:`.where`), asked once per browser."""
        key = id(browser)
        if key not in self._where:
            self._where[key] = probe(browser)
        return self._where[key]

    def _forget(self, index: int) -> None:
        browser = self._browsers.pop(index, None)
        if browser is not None:
            self._where.pop(id(browser), None)
            try:
                browser.close()
            except Exception:
                pass  # it is gone already; nothing of it is left to close

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            for index in list(self._browsers):
                self._forget(index)
        finally:
            if self._pw is not None:
                self._pw = None
                release_playwright()

    def __enter__(self) -> BrowserPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
