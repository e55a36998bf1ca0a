"""A page of ``web/runner.html`` with Pyodide, numpy and ortweb loaded.

The page every host tool that runs Python in the browser drives (``ortweb
run``/``exec``, the pytest plugin, conformance, bench, soak): offline (see
:mod:`.route`), its console and errors recorded (:mod:`.capture`), Python run
either awaited (:meth:`PyodidePage.run_python`) or in the background with a
deadline (:attr:`PyodidePage.runs`).
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import inpage
from ..errors import BrowserError, PageFailure, PythonFailure
from .capture import PageLog, watch
from .route import OfflineRouter
from .runs import Runs

if TYPE_CHECKING:
    from ..build.requirements import WheelInfo
    from .launch import Browser, Profile

__all__ = ["PyodidePage"]

#: Bytes per request when a remote browser copies a file in (see :meth:`write_file`).
REMOTE_CHUNK = 32 << 20

# Copies a file in ranges: a relayed response travels whole in one protocol message,
# which a Playwright server takes up to 100 MiB (base64) of.
_WRITE_IN_RANGES_JS = r"""
async ([url, path, chunk]) => {
  const py = /** @type {any} */ (window).pyodide;
  const head = await fetch(url, { method: 'HEAD' });
  if (!head.ok) throw new Error(`cannot fetch ${url}: HTTP ${head.status}`);
  const size = Number(head.headers.get('content-length'));
  const dir = path.slice(0, path.lastIndexOf('/'));
  if (dir) py.FS.mkdirTree(dir);
  const stream = py.FS.open(path, 'w');
  try {
    for (let at = 0; at < size; at += chunk) {
      const end = Math.min(at + chunk, size) - 1;
      const part = await fetch(url, { headers: { Range: `bytes=${at}-${end}` } });
      if (part.status !== 206) {
        throw new Error(`cannot fetch ${url} ${at}-${end}: HTTP ${part.status}`);
      }
      const data = new Uint8Array(await part.arrayBuffer());
      py.FS.write(stream, data, 0, data.length, at);
    }
  } finally {
    py.FS.close(stream);
  }
  return size;
}
"""


class PyodidePage:
    """A page of ``web/runner.html`` with Pyodide, numpy and ortweb loaded.

    Parameters
    ----------
    browser : Browser or Profile
    base_url : str
        The local server's URL (``http://127.0.0.1:PORT/``).
    providers : sequence of str, optional
        Default providers for sessions the Python code creates without naming any.
    on_output : callable, optional
        Called with ``(stream, line)`` for each line Python prints (streaming).
    webgpu_build : str
        ``"native"`` (default) or ``"jsep"``: which ORT-web WebGPU build to use.
    routed : bool
        True (default): every request goes through an :class:`~.route.OfflineRouter`
        (those leaving the local server are refused and listed). False: none on a
        local browser, for a page timed against a plain anchor that has none
        (Playwright's request interception slows a 1 GiB download by a fifth);
        :attr:`blocked_requests` then stays empty. A remote browser is always routed;
        there, False gives the page a context of its own instead of the one its
        browser's runner pages share (:meth:`~.launch.Browser.shared_context`), so a
        cold page timed against its anchor fetches everything, as the anchor does.
    snapshot : bool
        True (default): Pyodide's interpreter is restored from the snapshot the server
        offers, where it has one, and numpy's bytecode beside it is used
        (:mod:`ortweb.host.build.runner_snapshot`); False: it starts as usual, numpy
        compiled on import. :attr:`booted_from` says which it was.
    """

    def __init__(
        self,
        browser: Browser | Profile,
        base_url: str,
        *,
        providers: Sequence[str] | None = None,
        on_output: Callable[[str, str], None] | None = None,
        webgpu_build: str = "native",
        boot_timeout: float = 180.0,
        routed: bool = True,
        snapshot: bool = True,
    ):
        self.base_url = base_url.rstrip("/") + "/"
        self.capture = PageLog()
        self.on_output = on_output
        self.runs = Runs(self)
        self.remote = browser.remote
        self._browser = browser
        #: Why the page became unusable ('' while it works): it crashed or closed.
        self.lost = ""
        self._closed = False
        #: ``"snapshot"`` or ``"fresh"``: how the page's interpreter started.
        self.booted_from = ""
        #: ``"kept"`` or ``"wheels"``: whether the packages' files were written from the
        #: record made with the runner snapshot or unpacked from their wheels (always in
        #: a browser elsewhere, which would get the record through the relay).
        self.packages_from = ""
        #: A remote browser's runner pages share a context (and its asset cache).
        self._router: OfflineRouter | None = None
        shared = self.remote and routed
        if shared:
            self._context, self._router = browser.shared_context(self.base_url)  # type: ignore[union-attr]
        else:
            self._context = browser.new_context(
                OfflineRouter(self.base_url, self.capture, passive=True)
                if routed or self.remote else None)
        try:
            self.page = self._context.new_page()
            if self._router is not None:
                self._router.attach(self.page, self.capture)
            watch(self.page, self.capture, on_output, self.runs.on_control)
            self.page.on("crash", self._on_crash)
            # A remote browser that goes away (its server killed) closes its pages.
            self.page.on("close", self._on_close)
            query = f"?webgpuBuild={webgpu_build}"
            if providers:
                query += "&providers=" + ",".join(providers)
            if shared:
                query += "&assetCache=sw"
            if not snapshot:
                query += "&snapshot=0"
            if self.remote:
                # Files cross the relay: the wheels are fewer bytes than their record.
                query += "&unpacked=0"
            self.page.goto(self.base_url + "runner.html" + query)
            ready = self.page.evaluate("() => window.ortwebReady", None)
            self.page.set_default_timeout(boot_timeout * 1000)
            if not ready or not ready.get("ok"):
                raise BrowserError(f"the page failed to boot: {ready and ready.get('message')}")
            self.booted_from = str(ready.get("bootedFrom", "fresh"))
            self.packages_from = str(ready.get("packagesFrom", "wheels"))
        except BaseException:
            self.close()
            raise

    # -- plumbing ----------------------------------------------------------------

    @property
    def frozen(self) -> str:
        """Why the page's browser elsewhere was cut loose as frozen ('' if it was not;
        see :mod:`.watchdog`)."""
        return str(getattr(self._browser, "frozen", ""))

    def _on_crash(self, _: Any) -> None:
        self.lost = "the page crashed"

    def _on_close(self, _: Any) -> None:
        if not self._closed:
            self.lost = self.lost or self.frozen or "the page closed (its browser went away)"

    def pump(self, ms: int) -> bool:
        """Let Playwright deliver the page's events for ``ms``; False once the page is gone.

        This also works while the page's main thread is stuck, where an
        ``evaluate`` would never return.
        """
        if self.lost:
            return False
        try:
            self.page.wait_for_timeout(ms)
        except Exception as exc:  # closed, crashed or frozen: the caller replaces the page
            self.lost = self.lost or self.frozen or str(exc)
            return False
        return True

    @property
    def blocked_requests(self) -> list[str]:
        """Requests that tried to leave the local server (all were refused)."""
        return list(self.capture.blocked)

    def output(self, stream: str = "stdout") -> str:
        """Everything Python printed on ``stream`` so far."""
        return self.capture.output(stream)

    # -- Python ------------------------------------------------------------------

    def run_python(self, code: str, filename: str = "<ortweb>", timeout: float = 600.0) -> Any:
        """Run ``code`` through ``runPythonAsync`` and wait for it, without a deadline
        (``timeout`` is not used; :attr:`runs` has deadlines); returns its last
        expression (as JS→JSON).

        Raises
        ------
        PythonFailure
            With the Python traceback, when the code raised.
        PageFailure
            When the page crashed or closed meanwhile.
        """
        result = self._evaluate(
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
        """Copy a file the server offers at ``url_path`` into Pyodide's file system.

        A remote browser gets it in ranges of :data:`REMOTE_CHUNK` bytes (any size).
        """
        url = self.base_url + url_path.lstrip("/")
        if self.remote:
            return int(self._evaluate(_WRITE_IN_RANGES_JS, [url, fs_path, REMOTE_CHUNK]))
        return int(self._evaluate("([u, p]) => window.ortwebWriteFile(u, p)", [url, fs_path]))

    def read_file(self, fs_path: str) -> bytes:
        """Read a file from Pyodide's file system."""
        return base64.b64decode(self._evaluate("(p) => window.ortwebReadFile(p)", fs_path))

    def _evaluate(self, expression: str, arg: Any = None) -> Any:
        """``page.evaluate``, a crashed or closed page raising :class:`PageFailure`
        (with why, when the page said) instead of Playwright's error."""
        from playwright.sync_api import Error as PlaywrightError

        try:
            return self.page.evaluate(expression, arg)
        except PlaywrightError as exc:
            if self.lost or self.page.is_closed() or "crashed" in str(exc):
                raise PageFailure(self.lost or self.frozen or str(exc).strip()) from None
            raise

    def install_wheels(self, wheels: Sequence[WheelInfo], requirements: Sequence[str],
                       folder: Path, prefix: str, packages: Sequence[str] = (), *,
                       no_deps: Sequence[WheelInfo] = ()) -> list[str]:
        """Install wheels and requirements with micropip, offline (no package index).

        Check them first with :func:`ortweb.host.build.requirements.resolve_offline`: it gives
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
        no_deps : sequence of WheelInfo
            Wheels installed last, as they are: their requirements are neither checked
            nor installed (``ortweb exec --wheel-no-deps``).

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
        for info in [*wheels, *no_deps]:
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
        spec = json.dumps({"wheels": paths[:len(wheels)], "requirements": list(requirements),
                           "packages": list(packages), "no_deps": paths[len(wheels):]})
        code = f"ORTWEB_INSTALL = {json.dumps(spec)}\n" + inpage.source("install_wheels")
        return list(json.loads(self.run_python(code, filename="<ortweb install>")))

    def screenshot(self, path: str | os.PathLike[str]) -> None:
        self.page.screenshot(path=str(path))

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._router is None:
            self._context.close()
            return
        self._router.detach(getattr(self, "page", None))
        if hasattr(self, "page"):
            # A page whose browser froze behind a live server would keep this waiting.
            with self._browser.bounded("closing a page"):  # type: ignore[union-attr]
                self.page.close()

    def __enter__(self) -> PyodidePage:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
