"""Launching the system's headless Chromium (never a downloaded one).

The flags keep it quiet and offline, and give real WebGPU on SwiftShader.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import BrowserError
from .route import OfflineRouter

if TYPE_CHECKING:
    from .page import PyodidePage

__all__ = ["BASE_FLAGS", "WEBGPU_FLAGS", "Browser", "find_chromium"]

#: Flags for a quiet, offline headless Chromium (no background traffic).
BASE_FLAGS = (
    "--no-sandbox",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
    "--disable-default-apps",
    "--disable-extensions",
    # gc() in the page, so leak meters can read after a collection, not before.
    "--js-flags=--expose-gc",
)
#: Real WebGPU through SwiftShader (Vulkan on the CPU).
WEBGPU_FLAGS = ("--enable-unsafe-webgpu", "--enable-features=Vulkan")


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


class Browser:
    """A headless Chromium, closed in ``close()`` (safe twice) or by ``with``.

    Parameters
    ----------
    executable : str, optional
        Chromium binary (see :func:`find_chromium`).
    webgpu : bool
        Launch with WebGPU enabled (SwiftShader). False gives a browser with no
        adapter, for fallback tests.
    playwright : optional
        A started Playwright to share (see :meth:`sibling`).
    """

    def __init__(self, executable: str | None = None, webgpu: bool = True,
                 *, playwright: Any = None):
        from playwright.sync_api import sync_playwright

        self.executable = find_chromium(executable)
        self.webgpu = webgpu
        # One Playwright per thread: a second sync_playwright() in the same thread
        # fails, so browsers launched beside another share its instance.
        self._owns_pw = playwright is None
        self._pw = sync_playwright().start() if playwright is None else playwright
        try:
            args = [*BASE_FLAGS, *(WEBGPU_FLAGS if webgpu else ("--disable-gpu",))]
            self._browser = self._pw.chromium.launch(
                executable_path=self.executable, headless=True, args=args
            )
        except BaseException:
            if self._owns_pw:
                self._pw.stop()
            raise
        self.version = self._browser.version
        self._closed = False

    def sibling(self, webgpu: bool = True) -> Browser:
        """Another Chromium (e.g. without WebGPU) sharing this one's Playwright."""
        return Browser(self.executable, webgpu=webgpu, playwright=self._pw)

    def new_context(self, router: OfflineRouter | None = None) -> Any:
        """A Playwright browser context (own cache and storage).

        Parameters
        ----------
        router : OfflineRouter, optional
            Sees every request of the context and refuses those that leave the
            local server. Without it nothing is checked (a page that must be
            timed without the router's round trips).
        """
        context = self._browser.new_context()
        if router is not None:
            try:
                context.route("**/*", router)
            except BaseException:
                context.close()
                raise
        return context

    def renderer_pids(self) -> set[int]:
        """Process ids of this browser's renderer processes now (from the browser's own
        ``SystemInfo.getProcessInfo``, so other browsers on the machine are not counted)."""
        cdp = self._browser.new_browser_cdp_session()
        try:
            info = cdp.send("SystemInfo.getProcessInfo")["processInfo"]
        finally:
            cdp.detach()
        return {int(p["id"]) for p in info if p.get("type") == "renderer"}

    def new_page(self, base_url: str, **kw: Any) -> PyodidePage:
        """A new page (own context) on ``base_url``; see :class:`.page.PyodidePage`."""
        from .page import PyodidePage

        return PyodidePage(self, base_url, **kw)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            self._browser.close()
        finally:
            if self._owns_pw:
                self._pw.stop()

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
