"""The pytest plugin of ``ortweb.testing`` (entry point ``pytest11``: ``ortweb``).

Everything here is lazy: a test run that asks for none of these fixtures starts
no browser and imports no Playwright. Under pytest-xdist each worker is its own
session, so each gets its own server (on a free port) and its own browser.

With ``--ortweb-browser-endpoint`` (or ``$ORTWEB_BROWSER_ENDPOINT``) the browsers
run elsewhere: worker ``gwN`` takes endpoint ``N % len(pool)`` (round robin),
and one that goes away is replaced by the next that answers. The header names
the browser and its WebGPU adapter, and so does every test's report.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Generator, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ._page import ModulePage, OrtwebPage

if TYPE_CHECKING:
    from ..host.browser import Browser, BrowserPool, Runtime
    from ..host.build.assets import Assets
    from ..host.serve import StaticServer

__all__ = [
    "ortweb_assets",
    "ortweb_browser",
    "ortweb_module_page",
    "ortweb_page",
    "ortweb_providers",
    "ortweb_runtime",
    "ortweb_server",
    "ortweb_webgpu",
]

_ALL_PROVIDERS = ("webgpu", "wasm")
_DEFAULT_TIMEOUT = 300.0
_PAGE_KEY = pytest.StashKey[OrtwebPage]()
_ARTIFACTS_KEY = pytest.StashKey[Path]()
_POOL_KEY = pytest.StashKey["BrowserPool"]()
_ENV_VAR = "ORTWEB_BROWSER_ENDPOINT"  # ortweb.host.browser.ENV_VAR, without importing it
_ORTWEB_FIXTURES = ("ortweb_page", "ortweb_module_page", "ortweb_runtime", "ortweb_browser",
                    "ortweb_webgpu", "ortweb_providers")


@dataclass(frozen=True)
class _Options:
    browser: str | None
    providers: tuple[str, ...]
    explicit_providers: bool
    webgpu: bool
    webgpu_build: str
    timeout: float
    artifacts: Path | None
    packages: tuple[Path, ...]
    wheels: tuple[Path, ...]
    endpoints: tuple[str, ...] = ()
    tiers: str = "baseline"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("ortweb", "ortweb.testing: tests inside Pyodide in headless Chromium")
    group.addoption("--ortweb-browser", metavar="PATH", default=None,
                    help="Chromium binary (default: $ORTWEB_BROWSER, else chromium on PATH)")
    group.addoption("--ortweb-providers", metavar="EPS", default=None,
                    help="comma-separated EPs that tests asking for `ortweb_providers` run on "
                         "(default: webgpu,wasm; the webgpu runs skip when there is no adapter)")
    group.addoption("--ortweb-browser-endpoint", action="append", default=[], metavar="URL",
                    help="run in a browser elsewhere: a Playwright server (ws://…, from "
                         "`playwright run-server`) or a Chromium's DevTools endpoint "
                         "(http://HOST:PORT, ws://…/devtools/browser/…, a Selenium Grid 4 "
                         "ws://GRID/session/ID/se/cdp); prefix pw+ or cdp+ to say which. "
                         "Repeatable: a pool, xdist workers take them round robin (default: "
                         "$ORTWEB_BROWSER_ENDPOINT, space- or comma-separated)")
    group.addoption("--ortweb-no-webgpu", action="store_true", default=False,
                    help="launch the browser without WebGPU (it then has no adapter)")
    group.addoption("--ortweb-webgpu-build", choices=("native", "jsep"), default="native",
                    help="onnxruntime-web's WebGPU build (default: native)")
    group.addoption("--ortweb-wasm-tiers", choices=("baseline", "all"), default=None,
                    help="how the browser's V8 compiles WebAssembly: baseline (Liftoff only: "
                         "pages boot sooner and leave the CPU to the tests) or all (V8's "
                         "default, TurboFan for hot code too: faster long computations) "
                         "(default: $ORTWEB_WASM_TIERS, else baseline)")
    group.addoption("--ortweb-timeout", type=float, default=None, metavar="SECONDS",
                    help="seconds a test may spend in the browser (default: ini ortweb_timeout, "
                         "300); @pytest.mark.ortweb_timeout(seconds) overrides")
    group.addoption("--ortweb-artifacts", metavar="DIR", default=None,
                    help="where screenshots of failed tests go (default: under pytest's basetemp)")
    group.addoption("--ortweb-package", action="append", default=[], metavar="PATH",
                    help="your own code to install in every page: a package folder, a .py "
                         "module, a .whl or a .zip (repeatable; ini: ortweb_packages)")
    parser.addini("ortweb_packages", type="paths", default=[],
                  help="your own code to install in every page (see --ortweb-package)")
    group.addoption("--ortweb-wheel", action="append", default=[], metavar="PATH",
                    help="a wheel to install with micropip, offline, in every page; its "
                         "requirements must be met by the offline Pyodide packages or other "
                         "wheels (repeatable; ini: ortweb_wheels)")
    parser.addini("ortweb_wheels", type="paths", default=[],
                  help="wheels to install in every page (see --ortweb-wheel)")
    parser.addini("ortweb_timeout", default=str(_DEFAULT_TIMEOUT),
                  help="seconds a test may spend in the browser (default 300)")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "webgpu: needs a WebGPU adapter in the browser; skips with the reason "
                   "when there is none (ortweb.testing)")
    config.addinivalue_line(
        "markers", "ortweb_fresh_page: the test gets a page no earlier test has used "
        "(booted for it) instead of the shared one")
    config.addinivalue_line(
        "markers", "ortweb_timeout(seconds): how long the test may spend in the browser "
                   "(ortweb.testing; default --ortweb-timeout)")
    _options(config)  # bad option values stop the run here, before any browser starts
    config.pluginmanager.register(_BrowserSummary(), "ortweb-browser-summary")
    # pytest-playwright has its own `browser` fixture; never shadow it.
    others = ("playwright", "pytest_playwright")
    if not any(config.pluginmanager.hasplugin(name) for name in others):
        config.pluginmanager.register(_BrowserAlias(), "ortweb-browser-alias")


def _options(config: pytest.Config) -> _Options:
    from .._providers import normalize_provider
    from ..errors import InvalidArgument

    raw = config.getoption("ortweb_providers")
    providers: tuple[str, ...] = _ALL_PROVIDERS
    if raw:
        try:
            names = [normalize_provider(p.strip()) for p in raw.split(",") if p.strip()]
        except InvalidArgument as exc:
            raise pytest.UsageError(f"--ortweb-providers: {exc}") from None
        if not names:
            raise pytest.UsageError("--ortweb-providers: name at least one of webgpu, wasm")
        providers = tuple(dict.fromkeys(names))
    timeout = config.getoption("ortweb_timeout")
    if timeout is None:
        try:
            timeout = float(config.getini("ortweb_timeout"))
        except ValueError:
            raise pytest.UsageError("ini ortweb_timeout: expected seconds") from None
    artifacts = config.getoption("ortweb_artifacts")
    packages = [Path(p) for p in config.getini("ortweb_packages")]
    packages += [Path(p).resolve() for p in config.getoption("ortweb_package")]
    wheels = [Path(p) for p in config.getini("ortweb_wheels")]
    wheels += [Path(p).resolve() for p in config.getoption("ortweb_wheel")]
    for wheel in wheels:
        if not wheel.is_file():
            raise pytest.UsageError(f"--ortweb-wheel / ortweb_wheels: {wheel} is not a file")
    endpoints = _endpoints(config)
    tiers = config.getoption("ortweb_wasm_tiers")
    if tiers is None:
        from ..host.browser.flags import wasm_tiers
        from ..host.errors import BrowserError

        try:
            tiers = wasm_tiers(default="baseline")
        except BrowserError as exc:
            raise pytest.UsageError(str(exc)) from None
    return _Options(
        browser=config.getoption("ortweb_browser"),
        providers=providers,
        explicit_providers=bool(raw),
        webgpu=not config.getoption("ortweb_no_webgpu"),
        webgpu_build=config.getoption("ortweb_webgpu_build"),
        timeout=float(timeout),
        artifacts=Path(artifacts).resolve() if artifacts else None,
        packages=tuple(packages),
        wheels=tuple(wheels),
        endpoints=endpoints,
        tiers=tiers,
    )


def _endpoints(config: pytest.Config) -> tuple[str, ...]:
    given = config.getoption("ortweb_browser_endpoint") or []
    source = "--ortweb-browser-endpoint"
    if not given and os.environ.get(_ENV_VAR, "").strip():
        given, source = [os.environ[_ENV_VAR]], f"${_ENV_VAR}"
    if not given:
        return ()
    from ..host.browser.endpoint import parse_endpoints
    from ..host.errors import BrowserError

    try:
        return tuple(e.text for e in parse_endpoints(given))
    except BrowserError as exc:
        raise pytest.UsageError(f"{source}: {exc}") from None


def _worker_number() -> int:
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    return int(worker[2:]) if worker[2:].isdigit() else 0


def _pool(config: pytest.Config) -> BrowserPool:
    """The session's browsers (made on first use, closed with the session)."""
    pool = config.stash.get(_POOL_KEY, None)
    if pool is None:
        from ..host.browser import BrowserPool

        options = _options(config)
        pool = BrowserPool(options.endpoints, executable=options.browser,
                           webgpu=options.webgpu, start=_worker_number(), tiers=options.tiers)
        config.stash[_POOL_KEY] = pool
        config.add_cleanup(pool.close)
    return pool


def _where_line(config: pytest.Config) -> str:
    from ..host.browser import where_line

    pool = _pool(config)
    return where_line(pool.where(pool.browser(0)))


def pytest_report_collectionfinish(config: pytest.Config, start_path: Path,
                                   items: Sequence[pytest.Item]) -> list[str]:
    # Only when a test will open a page anyway: a run without any starts no browser.
    uses = set(_ORTWEB_FIXTURES)
    if config.option.collectonly or not any(uses & set(getattr(item, "fixturenames", ()))
                                            for item in items):
        return []
    from ..host.errors import HostError

    try:
        return [f"ortweb: {_where_line(config)}"]
    except HostError as exc:  # the tests that need the browser error with it, each
        return [f"ortweb: no browser: {str(exc).splitlines()[0]}"]


class _BrowserSummary:
    """Under pytest-xdist the workers' headers are not shown: the tests' reports carry
    where they ran, and the summary lists each worker's browser."""

    def __init__(self) -> None:
        self.seen: dict[str, str] = {}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        node = getattr(report, "node", None)  # set by xdist on reports from a worker
        worker = getattr(getattr(node, "gateway", None), "id", None)
        for name, value in report.user_properties:
            if name == "ortweb_browser" and worker is not None:
                self.seen[str(worker)] = str(value)

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        from ._module_page import REPLACED

        if REPLACED:
            terminalreporter.write_sep("-", f"ortweb pages replaced ({len(REPLACED)})")
            for reason in REPLACED:
                terminalreporter.write_line(f"ortweb: {reason}")
        if self.seen:
            terminalreporter.write_sep("-", "ortweb browsers")
            for worker, line in sorted(self.seen.items()):
                terminalreporter.write_line(f"ortweb: {worker}: {line}")




@pytest.hookimpl(trylast=True)  # after @parametrize marks: the EP ends the id, test_x[2x3-wasm]
def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "ortweb_providers" not in metafunc.fixturenames:
        return
    for marker in metafunc.definition.iter_markers("parametrize"):
        names = marker.args[0] if marker.args else marker.kwargs.get("argnames", ())
        if isinstance(names, str):
            names = [n.strip() for n in names.split(",")]
        if "ortweb_providers" in names:
            return  # the test chose its EPs itself
    providers = list(_options(metafunc.config).providers)
    metafunc.parametrize("ortweb_providers", providers, ids=providers, indirect=True)


def _find_assets() -> Assets:
    from ..host.build.assets import find_assets

    # find_assets() may rewrite the browser wheel; xdist workers must not do it
    # at the same moment (a page could load a half-written file).
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        return find_assets()
    with open(Path(tempfile.gettempdir()) / "ortweb-testing-assets.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            return find_assets()
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


@pytest.fixture(scope="session")
def ortweb_assets() -> Assets:
    """ortweb's browser assets (Pyodide, onnxruntime-web, the bridge, the ortweb wheel)."""
    return _find_assets()


@pytest.fixture(scope="session")
def ortweb_server(ortweb_assets: Assets) -> Iterator[StaticServer]:
    """A loopback static server on a free port, serving the assets (one per xdist worker)."""
    from ..host.serve import StaticServer

    server = StaticServer(ortweb_assets.mounts())
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def ortweb_browser(request: pytest.FixtureRequest) -> Browser:
    """Headless Chromium (``--ortweb-browser``), WebGPU on unless ``--ortweb-no-webgpu``;
    or this worker's browser of ``--ortweb-browser-endpoint``'s pool."""
    return _pool(request.config).browser(0)


class _BrowserAlias:
    @pytest.fixture(scope="session")
    def browser(self, ortweb_browser: Browser) -> Browser:
        """The session's headless Chromium (same as ``ortweb_browser``)."""
        return ortweb_browser


@pytest.fixture(scope="session")
def ortweb_runtime(request: pytest.FixtureRequest, ortweb_assets: Assets,
                   ortweb_server: StaticServer, ortweb_browser: Browser) -> Runtime:
    """Server, browser and assets together; ``new_page()`` and ``shared_folder()``."""
    from ..host.browser import Runtime

    # The pool, not the one browser: a remote browser that goes away is replaced.
    return Runtime(ortweb_assets, ortweb_server, _pool(request.config))


@pytest.fixture(scope="session")
def ortweb_webgpu(ortweb_runtime: Runtime) -> dict[str, Any]:
    """The browser's WebGPU adapter: ``{available, reason, features, info}``."""
    from ..host.browser import OfflineRouter, PageLog

    context = ortweb_runtime.browser.new_context(
        OfflineRouter(ortweb_runtime.server.url, PageLog()))
    try:
        page = context.new_page()
        # Any page of the server's origin will do; the probe needs a secure context.
        page.goto(ortweb_runtime.server.url + "bridge/runtime.js")
        return page.evaluate(  # type: ignore[no-any-return]
            "async () => (await import('/bridge/runtime.js')).probeWebGpu()"
        )
    finally:
        context.close()


@pytest.fixture(scope="session")
def _ortweb_artifacts(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
                      ) -> Path:
    options = _options(request.config)
    if options.artifacts is not None:
        return options.artifacts
    return tmp_path_factory.getbasetemp() / "ortweb-artifacts"


@pytest.fixture(scope="session")
def _ortweb_shared_page(request: pytest.FixtureRequest, ortweb_runtime: Runtime
                        ) -> Iterator[ModulePage]:
    options = _options(request.config)
    page = ModulePage(ortweb_runtime, webgpu_build=options.webgpu_build,
                      packages=options.packages, wheels=options.wheels)
    try:
        yield page
    finally:
        page.close()


@pytest.fixture(scope="module")
def ortweb_module_page(_ortweb_shared_page: ModulePage) -> ModulePage:
    """The page this module's tests share: Pyodide + numpy + ortweb (+ ``ortweb_packages``,
    ``ortweb_wheels``), booted once per pytest process (per xdist worker) and shared by
    the tests of every module, tidied after each test and replaced when a test left what
    cannot be undone (see ``ortweb_page``) or asked for a fresh page
    (``@pytest.mark.ortweb_fresh_page``)."""
    return _ortweb_shared_page


def _timeout(request: pytest.FixtureRequest, options: _Options) -> float:
    marker = request.node.get_closest_marker("ortweb_timeout")
    if marker is None:
        return options.timeout
    value = marker.args[0] if marker.args else marker.kwargs.get("seconds")
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        raise pytest.UsageError(
            f"{request.node.nodeid}: ortweb_timeout needs seconds, e.g. "
            "@pytest.mark.ortweb_timeout(30)"
        ) from None
    return seconds


@pytest.fixture
def ortweb_page(request: pytest.FixtureRequest, ortweb_module_page: ModulePage,
                _ortweb_artifacts: Path) -> Iterator[OrtwebPage]:
    """The module's page for this test: state reset, console and errors of this test.

    Sessions created without providers use ``ortweb_providers`` when the test asks
    for it, else ``--ortweb-providers`` when given, else ortweb's default rule.
    """
    options = _options(request.config)
    providers: list[str] | None = None
    if "ortweb_providers" in request.fixturenames:
        providers = [request.getfixturevalue("ortweb_providers")]
    elif options.explicit_providers:
        providers = list(options.providers)
    if request.node.get_closest_marker("ortweb_fresh_page") is not None:
        ortweb_module_page.renew()
    page = OrtwebPage(ortweb_module_page, providers=providers,
                      timeout=_timeout(request, options), request=request)
    request.node.stash[_PAGE_KEY] = page
    request.node.stash[_ARTIFACTS_KEY] = _ortweb_artifacts
    request.node.user_properties.append(("ortweb_browser", _where_line(request.config)))
    try:
        yield page
    finally:
        page.finish()


@pytest.fixture
def ortweb_providers(request: pytest.FixtureRequest) -> str:
    """The EP of this run: ``'wasm'`` or ``'webgpu'`` (the test runs once per EP)."""
    ep = getattr(request, "param", None) or _options(request.config).providers[0]
    if ep == "webgpu":
        info = request.getfixturevalue("ortweb_webgpu")
        if not info["available"]:
            pytest.skip(f"no WebGPU adapter: {info['reason']}")
    return str(ep)


@pytest.fixture(autouse=True)
def _ortweb_webgpu_marker(request: pytest.FixtureRequest) -> None:
    if request.node.get_closest_marker("webgpu") is not None:
        info = request.getfixturevalue("ortweb_webgpu")
        if not info["available"]:
            pytest.skip(f"no WebGPU adapter: {info['reason']}")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]
                              ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    page = item.stash.get(_PAGE_KEY, None)
    if page is not None and (report.when == "call" or report.failed):
        artifacts = item.stash.get(_ARTIFACTS_KEY, None)
        for name, text in page.report_sections(report.failed, artifacts, item.nodeid):
            report.sections.append((f"ortweb {name} ({report.when})", text))
            if name == "screenshot" and os.path.isfile(text):
                report.user_properties.append(("ortweb_screenshot", text))
    return report
