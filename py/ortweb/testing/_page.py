"""The ``ortweb_page`` fixture: a test's view of its module's page.

:class:`OrtwebPage` resets the module's page (:class:`~._module_page.ModulePage`)
for each test, runs code under the test's timeout, ships ``@run_in_browser``
functions there and back, and collects the console and errors of this test only.
"""

from __future__ import annotations

import base64
import pickle
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..host.browser import ConsoleLine, PyodidePage, PythonFailure
from ._module_page import ModulePage
from ._remote import BrowserTimeout, make_traceback, rebuild
from ._shipping import ShippedFunction, dumps

__all__ = ["ModulePage", "OrtwebPage"]


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
        #: What was alive in the page when the test began (``_inpage.reset``).
        self._alive = self._check(self.module_page.run_code(
            f"import json\njson.dumps(__import__('_ortweb_testing').reset({providers!r}))",
            "<ortweb-testing reset>", self._remaining(), self.timeout,
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
        """The page driver underneath (shared by the module's tests)."""
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
        """Save a screenshot of the page to ``path``."""
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
        """End of the test: its globals go, the page is tidied for the next test.

        The working directory, ``sys.path``, ``os.environ`` and the default providers
        are set back. A page the test left a session, a tensor, a GPU buffer, changed
        bridge settings or a replaced function in (see ``_inpage.tidy``) is closed,
        and the next test gets a new one (:attr:`ModulePage.discarded` says why).
        Tests that use the module's page directly (not through ``ortweb_page``) then
        find it as it was booted.
        """
        if not self.module_page.alive:
            return
        try:
            self.module_page.scope(False)
            left = self._check(self.module_page.run_code(
                "import json, _ortweb_testing\n_ortweb_testing.reset(None)\n"
                f"json.dumps(await _ortweb_testing.tidy(json.loads({self._alive!r})))",
                "<ortweb-testing tidy>", 60.0))
        except Exception as exc:
            self.module_page.discard(f"could not be restored after a test: {exc}")
            return
        import json

        mess = json.loads(left)
        if mess:
            self.module_page.discard(f"{self._request.node.nodeid} left {'; '.join(mess)}")

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
