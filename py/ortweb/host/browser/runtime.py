"""The local server with ortweb's assets and the browsers of a run, together."""

from __future__ import annotations

import tempfile
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..build.assets import Assets, find_assets
from ..serve import StaticServer
from .endpoint import Endpoint
from .launch import Browser
from .page import PyodidePage
from .pool import BrowserPool

__all__ = ["Runtime", "open_runtime"]


class Runtime:
    """A local server with ortweb's assets, browsers, and a way to share files.

    Parameters
    ----------
    assets : Assets
    server : StaticServer
    browser : Browser or BrowserPool
        One browser, or a pool whose slots (:meth:`new_page`'s ``slot``) get
        their own, replaced when they go away.
    """

    def __init__(self, assets: Assets, server: StaticServer, browser: Browser | BrowserPool):
        self.assets = assets
        self.server = server
        self.pool = browser if isinstance(browser, BrowserPool) else None
        self._browser = browser if isinstance(browser, Browser) else None
        self._where: dict[str, Any] | None = None

    @property
    def browser(self) -> Browser:
        """The browser of slot 0 (connected again if it went away)."""
        return self.browser_for(0)

    def browser_for(self, slot: int) -> Browser:
        """The browser of ``slot`` (see :class:`~.pool.BrowserPool`)."""
        if self.pool is not None:
            return self.pool.browser(slot)
        assert self._browser is not None
        return self._browser

    def new_page(self, slot: int = 0, **kw: Any) -> PyodidePage:
        """A :class:`~.page.PyodidePage` on the server, in ``slot``'s browser (keywords
        as there)."""
        from playwright.sync_api import Error as PlaywrightError

        browser = self.browser_for(slot)
        try:
            return browser.new_page(self.server.url, **kw)
        except PlaywrightError:
            # A browser elsewhere may have gone away before Playwright said so.
            if self.pool is None or browser.alive():
                raise
        return self.pool.replace(slot).new_page(self.server.url, **kw)

    def restart(self, slot: int = 0) -> Browser:
        """``slot``'s browser closed and a new one in its place (see
        :meth:`.pool.BrowserPool.restart`); a runtime of one given browser keeps it."""
        if self.pool is None:
            return self.browser_for(slot)
        return self.pool.restart(slot)

    def where(self, slot: int = 0) -> dict[str, Any]:
        """Where ``slot``'s pages run: endpoint, browser, WebGPU adapter (:mod:`.where`)."""
        browser = self.browser_for(slot)
        if self.pool is not None:
            return self.pool.where(browser)
        from .where import probe

        if self._where is None:
            self._where = probe(browser)
        return self._where

    @contextmanager
    def shared_folder(self) -> Iterator[tuple[Path, str]]:
        """A temporary folder served at a fresh URL prefix: ``(path, prefix)``."""
        with tempfile.TemporaryDirectory(prefix="ortweb-") as tmp:
            prefix = f"/_files/{uuid.uuid4().hex}/"
            self.server.add_mount(prefix, Path(tmp))
            try:
                yield Path(tmp), prefix
            finally:
                self.server.remove_mount(prefix)


@contextmanager
def open_runtime(executable: str | None = None, webgpu: bool = True,
                 endpoints: Sequence[str | Endpoint] = (),
                 log: Any = None, tiers: str | None = None) -> Iterator[Runtime]:
    """Start a loopback server with ortweb's assets and a headless Chromium, or the
    browsers of ``endpoints`` (a pool; see :class:`~.pool.BrowserPool`; ``tiers``: how
    V8 compiles WebAssembly, see :class:`~.launch.Browser`).

    The first browser is connected before this returns, so that a bad endpoint
    fails here, named.
    """
    assets = find_assets()
    with StaticServer(assets.mounts()) as server, \
            BrowserPool(endpoints, executable=executable, webgpu=webgpu, log=log,
                        tiers=tiers) as pool:
        pool.browser(0)
        yield Runtime(assets, server, pool)
