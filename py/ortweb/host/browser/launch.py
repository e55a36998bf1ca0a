"""Launching the system's headless Chromium (never a downloaded one).

The flags keep it quiet and offline, and give real WebGPU on SwiftShader.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import BrowserError
from .route import OfflineRouter

if TYPE_CHECKING:
    from .page import PyodidePage

__all__ = ["BASE_FLAGS", "WEBGPU_FLAGS", "Browser", "Profile", "find_chromium"]

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
            self._browser.close()
        finally:
            if self._owns_pw:
                self._pw.stop()

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Profile:
    """A Chromium with a fresh on-disk profile (a temporary user-data folder), closed
    with its one context.

    :meth:`Browser.new_context` gives off-the-record contexts, whose Cache Storage
    refuses a file of 256 MiB ("Unexpected internal error"); a profile on disk keeps
    it, as a user's browser does. :meth:`new_context` has :class:`Browser`'s form, so
    a :class:`~.page.PyodidePage` opens in the profile; the profile's processes are
    found by its folder (:meth:`renderer_pids`).
    """

    def __init__(self, browser: Browser) -> None:
        self.folder = tempfile.mkdtemp(prefix="ortweb-profile-")
        args = [*BASE_FLAGS, *(WEBGPU_FLAGS if browser.webgpu else ("--disable-gpu",))]
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
            self._context.route("**/*", router)
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
