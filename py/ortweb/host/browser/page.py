"""Drive headless Chromium with Pyodide + ortweb loaded (Playwright, sync API).

The browser is the system's Chromium (never a downloaded one), launched with the
flags that give real WebGPU on SwiftShader. Every request the page makes that does
not go to the local server is blocked and recorded, so callers can assert that
nothing left 127.0.0.1.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import tempfile
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import inpage
from .assets import Assets, find_assets
from .packages import WheelInfo
from .server import StaticServer

__all__ = [
    "BASE_FLAGS",
    "WEBGPU_FLAGS",
    "Browser",
    "BrowserError",
    "PyodidePage",
    "PythonFailure",
    "find_chromium",
    "open_runtime",
]

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

_TAG = "\u0001ortweb:"


class BrowserError(RuntimeError):
    """The browser or the page could not be brought up."""


class PythonFailure(RuntimeError):
    """Python code inside the page raised.

    Attributes
    ----------
    type : str
        The Python exception's class name.
    traceback : str
        The traceback as Pyodide formatted it.
    """

    def __init__(self, type_: str, traceback: str):
        super().__init__(traceback)
        self.type = type_
        self.traceback = traceback


def find_chromium(explicit: str | os.PathLike[str] | None = None) -> str:
    """The Chromium binary: ``explicit``, ``$ORTWEB_BROWSER``, or ``chromium`` on PATH."""
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

    def new_page(self, base_url: str, **kw: Any) -> PyodidePage:
        """A new page (own context) on ``base_url``; see :class:`PyodidePage`."""
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


@dataclass
class ConsoleLine:
    """One console message of the page."""

    type: str
    text: str


@dataclass
class _Capture:
    console: list[ConsoleLine] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    blocked: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)


class PyodidePage:
    """A page of ``web/runner.html`` with Pyodide, numpy and ortweb loaded.

    Parameters
    ----------
    browser : Browser
    base_url : str
        The local server's URL (``http://127.0.0.1:PORT/``).
    providers : sequence of str, optional
        Default providers for sessions the Python code creates without naming any.
    on_output : callable, optional
        Called with ``(stream, line)`` for each line Python prints (streaming).
    webgpu_build : str
        ``"native"`` (default) or ``"jsep"``: which ORT-web WebGPU build to use.
    """

    def __init__(
        self,
        browser: Browser,
        base_url: str,
        *,
        providers: Sequence[str] | None = None,
        on_output: Callable[[str, str], None] | None = None,
        webgpu_build: str = "native",
        boot_timeout: float = 180.0,
    ):
        self.base_url = base_url.rstrip("/") + "/"
        self.capture = _Capture()
        self.on_output = on_output
        self._context = browser._browser.new_context()
        self._closed = False
        try:
            self._context.route("**/*", self._route)
            self.page = self._context.new_page()
            self.page.on("console", self._on_console)
            self.page.on("pageerror", lambda err: self.capture.errors.append(str(err)))
            query = f"?webgpuBuild={webgpu_build}"
            if providers:
                query += "&providers=" + ",".join(providers)
            self.page.goto(self.base_url + "runner.html" + query)
            ready = self.page.evaluate("() => window.ortwebReady", None)
            self.page.set_default_timeout(boot_timeout * 1000)
            if not ready or not ready.get("ok"):
                raise BrowserError(f"the page failed to boot: {ready and ready.get('message')}")
        except BaseException:
            self.close()
            raise

    # -- plumbing ----------------------------------------------------------------

    def _route(self, route: Any) -> None:
        url = route.request.url
        self.capture.requests.append(url)
        if url.startswith(self.base_url) or url.startswith(("data:", "blob:")):
            route.continue_()
        else:
            self.capture.blocked.append(url)
            route.abort()

    def _on_console(self, msg: Any) -> None:
        text = msg.text
        if text.startswith(_TAG):
            stream, _, line = text[len(_TAG):].partition("\u0001")
            if self.on_output is not None:
                self.on_output(stream, line)
            self.capture.console.append(ConsoleLine(stream, line))
        else:
            self.capture.console.append(ConsoleLine(msg.type, text))

    @property
    def blocked_requests(self) -> list[str]:
        """Requests that tried to leave the local server (all were refused)."""
        return list(self.capture.blocked)

    def output(self, stream: str = "stdout") -> str:
        """Everything Python printed on ``stream`` so far."""
        return "".join(line.text + "\n" for line in self.capture.console if line.type == stream)

    # -- Python ------------------------------------------------------------------

    def run_python(self, code: str, filename: str = "<ortweb>", timeout: float = 600.0) -> Any:
        """Run ``code`` through ``runPythonAsync``; returns its last expression (as JS→JSON).

        Raises
        ------
        PythonFailure
            With the Python traceback, when the code raised.
        """
        result = self.page.evaluate(
            "([code, filename]) => window.ortwebRunPython(code, filename)",
            [code, filename],
        )
        if not result["ok"]:
            raise PythonFailure(str(result.get("type")), str(result.get("message")))
        return result.get("value")

    def run_json(self, code: str, filename: str = "<ortweb>") -> Any:
        """Run ``code`` whose last expression is a JSON string; returns it decoded."""
        return json.loads(self.run_python(code, filename))

    def write_file(self, url_path: str, fs_path: str) -> int:
        """Copy a file the server offers at ``url_path`` into Pyodide's file system."""
        url = self.base_url + url_path.lstrip("/")
        return int(self.page.evaluate("([u, p]) => window.ortwebWriteFile(u, p)", [url, fs_path]))

    def read_file(self, fs_path: str) -> bytes:
        """Read a file from Pyodide's file system."""
        return base64.b64decode(self.page.evaluate("(p) => window.ortwebReadFile(p)", fs_path))

    def install_wheels(self, wheels: Sequence[WheelInfo], requirements: Sequence[str],
                       folder: Path, prefix: str, packages: Sequence[str] = ()) -> list[str]:
        """Install wheels and requirements with micropip, offline (no package index).

        Check them first with :func:`ortweb.host.packages.resolve_offline`: it gives
        the wheels in install order and names any requirement the page cannot meet.

        Parameters
        ----------
        wheels : sequence of WheelInfo
            In install order (each after the given wheels it requires).
        requirements : sequence of str
            More requirements, met by the page's lock or the wheels.
        folder, prefix : Path, str
            A folder the server offers at ``prefix`` (:meth:`Runtime.shared_folder`),
            through which the wheels reach the page.
        packages : sequence of str
            The Pyodide packages they need (``Resolution.lock_packages``), loaded first.

        Returns
        -------
        list of str
            The distributions micropip lists afterwards.

        Raises
        ------
        PythonFailure
            When micropip fails (its message says which requirement).
        """
        paths = []
        for info in wheels:
            # The page must see the original file name: micropip reads the name,
            # version and tags from it.
            served = f"{uuid.uuid4().hex}-{info.path.name}"
            shutil.copyfile(info.path, folder / served)
            try:
                target = f"/tmp/ortweb-wheels/{info.path.name}"
                self.write_file(prefix + served, target)
            finally:
                (folder / served).unlink()
            paths.append(target)
        spec = json.dumps({"wheels": paths, "requirements": list(requirements),
                           "packages": list(packages)})
        code = f"ORTWEB_INSTALL = {json.dumps(spec)}\n" + inpage.source("install_wheels")
        return list(json.loads(self.run_python(code, filename="<ortweb install>")))

    def screenshot(self, path: str | os.PathLike[str]) -> None:
        self.page.screenshot(path=str(path))

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._context.close()

    def __enter__(self) -> PyodidePage:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Runtime:
    """A local server with ortweb's assets, a browser, and a way to share files."""

    def __init__(self, assets: Assets, server: StaticServer, browser: Browser):
        self.assets = assets
        self.server = server
        self.browser = browser

    def new_page(self, **kw: Any) -> PyodidePage:
        return self.browser.new_page(self.server.url, **kw)

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
def open_runtime(executable: str | None = None, webgpu: bool = True) -> Iterator[Runtime]:
    """Start a loopback server with ortweb's assets and a headless Chromium."""
    assets = find_assets()
    with StaticServer(assets.mounts()) as server, Browser(executable, webgpu=webgpu) as browser:
        yield Runtime(assets, server, browser)
