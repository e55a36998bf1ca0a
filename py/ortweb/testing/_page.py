"""The pages tests run in: one per test module, and a per-test view of it.

:class:`ModulePage` holds a :class:`~ortweb.host.browser.PyodidePage` (Pyodide,
numpy and ortweb loaded once per module) in a
:class:`~ortweb.host.browser.PageKeeper`, which replaces it after a timeout or a
crash. :class:`OrtwebPage` is what a test receives as ``ortweb_page``: it resets
the page's state, runs code under the test's timeout, and collects the console
and errors of this test only.

Code runs as the page driver's background runs with the test's deadline
(:mod:`ortweb.host.browser.runs`): Python stuck in a loop is interrupted and
reported with the place it was stuck at (as :class:`BrowserTimeout` with the
page's traceback); a run stuck in JavaScript, or a page that stopped answering,
costs the page, and the next test gets a new one.
"""

from __future__ import annotations

import base64
import io
import pickle
import time
import uuid
import zipfile
from collections.abc import Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from ..host.browser import (
    BrowserError,
    ConsoleLine,
    PageFailure,
    PageKeeper,
    PageUnresponsive,
    PyodidePage,
    PythonFailure,
    Runtime,
)
from . import _inpage
from ._remote import BrowserTimeout, make_traceback, rebuild
from ._shipping import ShippedFunction, dumps

__all__ = ["ModulePage", "OrtwebPage"]


def _zip_package(path: Path) -> tuple[bytes, str | None]:
    """A zip to unpack into the page's site folder, and the host folder it mirrors."""
    if path.is_file() and path.suffix in (".whl", ".zip"):
        return path.read_bytes(), None
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
        if path.is_file() and path.suffix == ".py":
            zf.write(path, path.name)
            mirrored = str(path.parent)
        elif path.is_dir() and (path / "__init__.py").is_file():
            for file in sorted(path.rglob("*")):
                rel = file.relative_to(path.parent)
                if file.is_file() and "__pycache__" not in rel.parts and file.suffix != ".pyc":
                    zf.write(file, rel.as_posix())
            mirrored = str(path.parent)
        else:
            raise BrowserError(
                f"ortweb_packages: {path} is not a package folder (with __init__.py), a .py "
                "module, a .whl or a .zip"
            )
    return buffer.getvalue(), mirrored


class ModulePage:
    """A test module's page, booted on first use and replaced when it breaks.

    Parameters
    ----------
    runtime : Runtime
        The session's server and browser.
    webgpu_build : str
        ``"native"`` or ``"jsep"`` (see :class:`~ortweb.host.browser.PyodidePage`).
    packages : sequence of Path
        The project's own code, installed into every page: package folders,
        single modules, wheels or zips.
    wheels : sequence of Path
        Wheels installed with micropip, offline, into every page, after a check on
        the host that their requirements can be met there.

    Raises
    ------
    BrowserError
        When a wheel's requirement cannot be met offline (naming it).
    """

    def __init__(self, runtime: Runtime, *, webgpu_build: str = "native",
                 packages: Sequence[Path] = (), wheels: Sequence[Path] = ()):
        from ..host.packages import PackageError, resolve_for_pyodide

        self.runtime = runtime
        self.webgpu_build = webgpu_build
        self.packages = list(packages)
        try:
            self._wheels = (resolve_for_pyodide(runtime.assets.pyodide, wheels, [],
                                                what="--ortweb-wheel") if wheels else None)
        except PackageError as exc:
            raise BrowserError(f"ortweb_wheels: {exc}") from None
        self._stack = ExitStack()
        self._folder, self._prefix = self._stack.enter_context(runtime.shared_folder())
        self._keeper = PageKeeper(self._boot)
        self._downloads: dict[str, Any] = {}
        self._maps: list[tuple[str, str]] = []
        self._files = 0

    # -- life cycle ------------------------------------------------------------------

    @property
    def pyodide_page(self) -> PyodidePage:
        """The live page, booted now if there is none."""
        return self._keeper.page

    @property
    def alive(self) -> bool:
        return self._keeper.alive

    @property
    def boots(self) -> int:
        """Pages booted for this module so far."""
        return self._keeper.boots

    @property
    def discarded(self) -> list[str]:
        """Why earlier pages of this module were closed (timeouts, crashes)."""
        return self._keeper.discarded

    def _boot(self) -> PyodidePage:
        page = self.runtime.new_page(webgpu_build=self.webgpu_build)
        try:
            page.page.on("download", self._on_download)
            source = Path(_inpage.__file__).read_text()
            page.run_python(
                "import sys, types\n"
                "_m = types.ModuleType('_ortweb_testing')\n"
                f"exec(compile({source!r}, {_inpage.RUNNER_FILE!r}, 'exec'), _m.__dict__)\n"
                "sys.modules['_ortweb_testing'] = _m\n"
                "del _m\n",
                filename="<ortweb-testing boot>",
            )
            where = page.run_json(
                "import json, _ortweb_testing\njson.dumps(_ortweb_testing.where())"
            )
            import ortweb

            maps = [(where["ortweb"].rstrip("/") + "/", str(Path(ortweb.__file__).parent) + "/")]
            for path in self.packages:
                data, mirrored = _zip_package(path)
                name = f"pkg-{uuid.uuid4().hex}.zip"
                (self._folder / name).write_bytes(data)
                page.write_file(self._prefix + name, f"/tmp/{name}")
                (self._folder / name).unlink()
                tops = page.run_json(
                    "import json, _ortweb_testing\n"
                    f"json.dumps(_ortweb_testing.unpack('/tmp/{name}'))"
                )
                if mirrored is not None:
                    for top in tops:
                        maps.append((f"{where['site']}/{top}", f"{mirrored}/{top}"))
            if self._wheels is not None:
                page.install_wheels(self._wheels.wheels, [], self._folder, self._prefix,
                                    self._wheels.lock_packages)
        except BaseException:
            page.close()
            raise
        self._maps = maps
        return page

    def discard(self, reason: str) -> None:
        """Close the page (it is broken); the next use boots a new one."""
        self._keeper.discard(reason)

    def close(self) -> None:
        try:
            self._keeper.close()
        finally:
            self._stack.close()

    # -- files ---------------------------------------------------------------------

    def put_file(self, name: str, data: bytes | str | Path) -> str:
        """Write ``data`` (bytes, or a host file's path) to ``/home/pyodide/<name>`` in the page."""
        if isinstance(data, str | Path):
            data = Path(data).read_bytes()
        self._files += 1
        served = f"f{self._files}-{uuid.uuid4().hex[:8]}"
        (self._folder / served).write_bytes(data)
        try:
            path = name if name.startswith("/") else f"{_inpage.HOME}/{name}"
            self.pyodide_page.write_file(self._prefix + served, path)
        finally:
            (self._folder / served).unlink()
        return path

    def map_file(self, filename: str) -> str:
        """The host file for a file name in a page traceback (unchanged when unknown)."""
        for page_prefix, host_prefix in self._maps:
            if filename.startswith(page_prefix):
                candidate = host_prefix + filename[len(page_prefix):]
                if Path(candidate).is_file():
                    return candidate
        return filename

    def _on_download(self, download: Any) -> None:
        self._downloads[download.suggested_filename] = download

    def take_downloads(self, names: Sequence[str], timeout: float = 60.0) -> list[bytearray]:
        """The files the page sent with ``_inpage._download``, in order."""
        page = self.pyodide_page
        out = []
        deadline = time.monotonic() + timeout
        for name in names:
            while name not in self._downloads:
                if time.monotonic() > deadline:
                    raise BrowserError(f"the page's transfer {name} never arrived")
                page.page.wait_for_timeout(10)
            download = self._downloads.pop(name)
            path = Path(download.path())
            data = bytearray(path.stat().st_size)
            with path.open("rb") as f:
                f.readinto(data)
            download.delete()
            out.append(data)
        return out

    # -- running code --------------------------------------------------------------

    def run_code(self, code: str, filename: str, timeout: float,
                 budget: float | None = None) -> dict[str, Any]:
        """Run ``code`` with runPythonAsync, stopping it after ``timeout`` seconds.

        ``budget`` is the test's whole timeout, for the messages (default ``timeout``).

        Returns
        -------
        dict
            ``{ok, value}`` or ``{ok: False, type, message}``.

        Raises
        ------
        BrowserTimeout
            When the page had to be given up (the run was stuck in JavaScript).
        BrowserError
            When the page crashed or closed.
        """
        __tracebackhide__ = True
        page = self.pyodide_page
        budget = timeout if budget is None else budget
        try:
            result = page.runs.run(code, filename, timeout)
        except PageUnresponsive:
            self.discard(f"unresponsive past a {budget:g} s timeout")
            raise BrowserTimeout(
                f"the page stopped responding (JavaScript never returned) and was closed "
                f"after the test's {budget:g} s timeout; the next test gets a new page"
            ) from None
        except PageFailure as exc:
            self.discard(f"failed: {exc}")
            raise BrowserError(f"the page failed while running the test: {exc}") from None
        if result.get("timedOut"):
            self.discard(f"stuck in an await past a {budget:g} s timeout")
            raise BrowserTimeout(
                f"the test was still waiting (on JavaScript, or an await that never "
                f"resolved) after its {budget:g} s timeout; the page was closed and the "
                "next test gets a new page"
            )
        return result

    def scope(self, fresh: bool) -> None:
        """Give ``run_python`` fresh globals (``fresh``), or the page's own again."""
        page = self._keeper.current
        if page is not None:
            page.runs.scope(fresh)


class OrtwebPage:
    """The ``ortweb_page`` fixture: the module's page, as seen by one test.

    Each test starts with ``os.getcwd() == '/home/pyodide'``, fresh globals for
    :meth:`run_python`, and the page's default providers set to this test's EP
    (``ortweb_providers``) or to ``--ortweb-providers``. Calls into the page run
    under the test's timeout (``@pytest.mark.ortweb_timeout(seconds)`` or
    ``--ortweb-timeout``), counted from the start of the test.

    Attributes
    ----------
    providers : list of str or None
        The page's default providers during this test (None: ortweb's default rule).
    timeout : float
        Seconds this test may spend.
    module_page : ModulePage
    """

    def __init__(self, module_page: ModulePage, *, providers: list[str] | None,
                 timeout: float, request: Any):
        self.module_page = module_page
        self.providers = providers
        self.timeout = timeout
        self._request = request
        self._start = time.monotonic()
        self._pyodide_page = module_page.pyodide_page
        capture = self._pyodide_page.capture
        self._marks = (len(capture.console), len(capture.errors), len(capture.blocked))
        module_page.scope(True)
        self._check(self.module_page.run_code(
            f"__import__('_ortweb_testing').reset({providers!r})", "<ortweb-testing reset>",
            self._remaining(), self.timeout,
        ))

    # -- what happened during this test ----------------------------------------------

    @property
    def console(self) -> list[ConsoleLine]:
        """Console messages of this test (Python's output too, as ``stdout``/``stderr``)."""
        return self._pyodide_page.capture.console[self._marks[0]:]

    @property
    def errors(self) -> list[str]:
        """Uncaught page errors (JavaScript exceptions) during this test."""
        return self._pyodide_page.capture.errors[self._marks[1]:]

    @property
    def blocked_requests(self) -> list[str]:
        """Requests this test's page tried to send off the local server (all refused)."""
        return self._pyodide_page.capture.blocked[self._marks[2]:]

    def output(self, stream: str = "stdout") -> str:
        """What Python printed on ``stream`` during this test."""
        return "".join(line.text + "\n" for line in self.console if line.type == stream)

    # -- the page ------------------------------------------------------------------

    @property
    def pyodide_page(self) -> PyodidePage:
        return self.module_page.pyodide_page

    @property
    def page(self) -> Any:
        """The Playwright page."""
        return self.pyodide_page.page

    def _remaining(self) -> float:
        return max(self.timeout - (time.monotonic() - self._start), 0.001)

    def _check(self, result: dict[str, Any]) -> Any:
        __tracebackhide__ = True
        if result.get("ok"):
            return result.get("value")
        if result.get("type") == "KeyboardInterrupt":
            raise BrowserTimeout(
                f"the test ran past its {self.timeout:g} s timeout inside the browser and was "
                f"interrupted:\n{result.get('message')}"
            )
        raise PythonFailure(str(result.get("type")), str(result.get("message")))

    def run_python(self, code: str, filename: str = "<ortweb_page>") -> Any:
        """Run ``code`` (top-level ``await`` allowed); returns its last expression (JSON-like).

        Raises
        ------
        PythonFailure
            With the page's traceback, when the code raised.
        BrowserTimeout
            When the test's timeout passed.
        """
        __tracebackhide__ = True
        return self._check(
            self.module_page.run_code(code, filename, self._remaining(), self.timeout)
        )

    def run_json(self, code: str, filename: str = "<ortweb_page>") -> Any:
        """Run ``code`` whose last expression is a JSON string; returns it decoded."""
        __tracebackhide__ = True
        import json

        return json.loads(self.run_python(code, filename))

    def put_file(self, name: str, data: bytes | str | Path) -> str:
        """Write bytes (or a host file) to ``/home/pyodide/<name>``; returns that path."""
        return self.module_page.put_file(name, data)

    def write_file(self, url_path: str, fs_path: str) -> int:
        """Copy a file the server offers at ``url_path`` into Pyodide's file system."""
        return self.pyodide_page.write_file(url_path, fs_path)

    def read_file(self, fs_path: str) -> bytes:
        """Read a file from Pyodide's file system."""
        return self.pyodide_page.read_file(fs_path)

    def screenshot(self, path: str | Path) -> None:
        self.pyodide_page.screenshot(path)

    # -- run_in_browser ------------------------------------------------------------

    def call(self, shipped: ShippedFunction, args: Sequence[Any], kwargs: dict[str, Any],
             host_globals: dict[str, Any] | None = None) -> Any:
        """Run a shipped function in the page; returns its (unpickled) return value."""
        __tracebackhide__ = True
        from _pytest.config import Config

        token = uuid.uuid4().hex
        buffers: list[memoryview] = []
        packed_args = []
        for i, value in enumerate(args):
            data, extra = dumps(value, f"argument {i + 1}")
            packed_args.append((data, len(buffers), len(buffers) + len(extra)))
            buffers.extend(extra)
        packed_kwargs = []
        for name, value in kwargs.items():
            data, extra = dumps(value, f"the argument {name!r}")
            packed_kwargs.append((name, data, len(buffers), len(buffers) + len(extra)))
            buffers.extend(extra)
        config = self._request.config
        verbosity = config.get_verbosity(Config.VERBOSITY_ASSERTIONS)
        payload = {
            "filename": shipped.filename, "name": shipped.name, "modname": shipped.modname,
            "module": shipped.module, "imports": shipped.imports,
            "args": packed_args, "kwargs": packed_kwargs,
            "maxsize": None if verbosity >= 2 else 2400 if verbosity >= 1 else 240,
            "showlocals": bool(config.getoption("showlocals", False)),
        }
        folder, prefix = self.module_page._folder, self.module_page._prefix
        urls = []
        for k, buffer in enumerate(buffers):
            name = f"{token}-a{k}.bin"
            (folder / name).write_bytes(buffer)
            urls.append(prefix + name)
        encoded = base64.b64encode(pickle.dumps(payload, protocol=5)).decode("ascii")
        try:
            result = self.module_page.run_code(
                f"await __import__('_ortweb_testing').run({encoded!r}, {urls!r}, {token!r})",
                f"<run_in_browser {shipped.name}>", self._remaining(), self.timeout,
            )
        finally:
            for k in range(len(buffers)):
                (folder / f"{token}-a{k}.bin").unlink(missing_ok=True)
        if not result.get("ok"):
            # The runner catches everything; this is a failure of the runner itself.
            self._check(result)
        report = pickle.loads(base64.b64decode(result["value"]))
        if report["ok"]:
            files = self.module_page.take_downloads(report["value_files"])
            return pickle.loads(report["value"], buffers=files)
        raise self._rebuild(report, shipped, host_globals)

    def _map(self, shipped: ShippedFunction) -> Any:
        def map_file(filename: str, name: str, firstlineno: int) -> tuple[str, int]:
            if filename == shipped.filename and name == shipped.name:
                # pytest starts the traceback at the frame whose code begins where
                # the host function does (its first decorator).
                return filename, shipped.firstlineno
            return self.module_page.map_file(filename), firstlineno

        return map_file

    def _explain(self, op: str, left: Any, right: Any) -> list[str] | None:
        from _pytest.assertion import util

        if util._reprcompare is None:
            return None
        custom = util._reprcompare(op, left, right)
        if not custom:
            return None
        if self._request.config.getvalue("assertmode") == "rewrite":
            custom = custom.replace("%%", "%")
        return custom.split("\n~")[1:]

    def _rebuild(self, report: dict[str, Any], shipped: ShippedFunction,
                 host_globals: dict[str, Any] | None) -> BaseException:
        error = report["error"]
        if error["qualname"] == "KeyboardInterrupt":
            timeout = BrowserTimeout(
                f"the test ran past its {self.timeout:g} s timeout inside the browser; it was "
                "interrupted at the line shown"
            )
            return timeout.with_traceback(make_traceback(error["frames"], self._map(shipped)))
        return rebuild(error, self._map(shipped), report.get("compares"), self._explain,
                       host_globals)

    # -- reporting -----------------------------------------------------------------

    def finish(self) -> None:
        """End of the test: its globals go, and the page's default providers are restored.

        Tests that use the module's page directly (not through ``ortweb_page``) then
        find it as it was booted.
        """
        if not self.module_page.alive:
            return
        try:
            self.module_page.scope(False)
            if self.providers is not None:
                result = self.module_page.run_code(
                    "__import__('_ortweb_testing').reset(None)", "<ortweb-testing reset>", 60.0
                )
                self._check(result)
        except Exception as exc:
            self.module_page.discard(f"could not be restored after a test: {exc}")

    def report_sections(self, failed: bool, artifacts: Path | None, nodeid: str
                        ) -> list[tuple[str, str]]:
        """Sections for the test report: console, page errors, blocked requests, screenshot."""
        sections = []
        if self.console:
            sections.append(("console", "\n".join(f"[{c.type}] {c.text}" for c in self.console)))
        if self.errors:
            sections.append(("page errors", "\n".join(self.errors)))
        if self.blocked_requests:
            sections.append(("blocked requests", "\n".join(self.blocked_requests)))
        if failed and artifacts is not None and self.module_page.alive:
            safe = "".join(c if c.isalnum() or c in "-_.[]" else "_" for c in nodeid)[-180:]
            path = artifacts / f"{safe}.png"
            try:
                artifacts.mkdir(parents=True, exist_ok=True)
                self.screenshot(path)
                sections.append(("screenshot", str(path)))
            except Exception as exc:
                sections.append(("screenshot", f"none: {exc}"))
        return sections
