"""A test module's page: booted once per module, replaced when it breaks.

:class:`ModulePage` holds a :class:`~ortweb.host.browser.PyodidePage` (Pyodide,
numpy, ortweb, the ``_ortweb_testing`` runner and the project's own packages)
in a :class:`~ortweb.host.browser.PageKeeper`. Code runs there as the page
driver's background runs with the test's deadline (:mod:`ortweb.host.browser.runs`):
Python stuck in a loop is interrupted and reported with the place it was stuck
at (as :class:`BrowserTimeout` with the page's traceback); a run stuck in
JavaScript, or a page that stopped answering, costs the page, and the next test
gets a new one. A page that crashes while it boots (before any test's code ran)
is booted once more, without the snapshot, and the run's summary says so.
"""

from __future__ import annotations

import io
import time
import uuid
import zipfile
from collections.abc import Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from ..host.browser import (
    BrowserError,
    PageFailure,
    PageKeeper,
    PageUnresponsive,
    PyodidePage,
    Runtime,
)
from . import _inpage
from ._remote import BrowserTimeout

__all__ = ["ModulePage"]


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


#: Why pages of this process were replaced, in order (the run's summary lists them).
REPLACED: list[str] = []


class ModulePage(PageKeeper):
    """A test module's page, booted on first use and replaced when it breaks.

    A :class:`~ortweb.host.browser.PageKeeper` (``boots``, ``discarded``,
    ``discard``) whose pages also carry the testing runner and the project's code.

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
        from ..host.build.offline_packages import PackageError
        from ..host.build.requirements import resolve_for_pyodide

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
        #: Whether the next boot restores the interpreter from the snapshot: not
        #: after a boot that crashed, so the retry meets as little of it as it can.
        self._snapshot = True
        super().__init__(self._boot, attempts=2, retry_on=(PageFailure,),
                         log=self._boot_failed)
        self._downloads: dict[str, Any] = {}
        self._maps: list[tuple[str, str]] = []
        self._files = 0
        #: What :meth:`put_file` wrote (served name, path in the page): written again
        #: into a page booted to replace one, so the module's files outlive it.
        self._put: list[tuple[str, str]] = []

    # -- life cycle ------------------------------------------------------------------

    @property
    def pyodide_page(self) -> PyodidePage:
        """The live page (:attr:`page`), booted now if there is none."""
        return self.page

    def _boot_failed(self, message: str) -> None:
        # The keeper says "a page failed to boot (why); retrying".
        REPLACED.append(message.replace("; retrying", "; booted again without the snapshot "
                                        "(nothing of a test had run)"))
        self._snapshot = False

    def _boot(self) -> PyodidePage:
        page = self.runtime.new_page(webgpu_build=self.webgpu_build, snapshot=self._snapshot)
        self._snapshot = True
        try:
            page.page.on("download", self._on_download)
            source = Path(_inpage.__file__).read_text()
            # One round trip: the runner module, the page's state taken as the one every
            # test starts from, and the folders tracebacks map back.
            where = page.run_json(
                "import json, sys, types\n"
                "_m = types.ModuleType('_ortweb_testing')\n"
                f"exec(compile({source!r}, {_inpage.RUNNER_FILE!r}, 'exec'), _m.__dict__)\n"
                "sys.modules['_ortweb_testing'] = _m\n"
                "del _m\n"
                "import _ortweb_testing\n"
                "_ortweb_testing.remember()\n"
                "json.dumps(_ortweb_testing.where())",
                filename="<ortweb-testing boot>",
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
            for served, put_path in self._put:
                page.write_file(self._prefix + served, put_path)
        except BaseException:
            page.close()
            raise
        self._maps = maps
        return page

    def discard(self, reason: str) -> None:
        """Close the page (broken, or left in a state a test must not find); the next
        use boots a new one."""
        REPLACED.append(reason)
        super().discard(reason)

    def renew(self) -> None:
        """Close the page if one is open, for a test that asked for a fresh one: the
        next use boots a new one (asked for, not a fault: not counted as replaced)."""
        self._drop()

    def close(self) -> None:
        """Close the page and the folder shared with it."""
        try:
            super().close()
        finally:
            self._stack.close()

    # -- files ---------------------------------------------------------------------

    def put_file(self, name: str, data: bytes | str | Path) -> str:
        """Write ``data`` (bytes, or a host file's path) to ``/home/pyodide/<name>`` in the page.

        The file is kept on the host while this object lives, and written again into
        any page booted to replace this one.
        """
        if isinstance(data, str | Path):
            data = Path(data).read_bytes()
        self._files += 1
        served = f"f{self._files}-{uuid.uuid4().hex[:8]}"
        (self._folder / served).write_bytes(data)
        path = name if name.startswith("/") else f"{_inpage.HOME}/{name}"
        try:
            self.pyodide_page.write_file(self._prefix + served, path)
        except BaseException:
            (self._folder / served).unlink()
            raise
        self._put.append((served, path))
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
            if page.frozen:
                raise BrowserTimeout(
                    f"the page stopped responding: {page.frozen}; the browser was dropped "
                    "and the next test gets a new page on the pool's next browser"
                ) from None
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
        page = self.current
        if page is not None:
            page.runs.scope(fresh)
