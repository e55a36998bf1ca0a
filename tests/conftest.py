"""Shared fixtures, on top of ``ortweb.testing`` (the pytest plugin ortweb ships).

The plugin gives one headless Chromium per session (per xdist worker), one page
shared by the tests of every module (Pyodide + numpy + ortweb; tidied after each
test, replaced when one left a mess) and, per test, ``ortweb_page`` and
``@run_in_browser``. ``other_page`` opens a page of a test's own for
``@run_in_browser`` functions, where the module's page will not do. Tests that drive
the module's page directly take ``ortweb_module_page`` (``.pyodide_page``,
``.put_file()``). The ``webgpu`` marker (skip without an adapter) is the plugin's.

Browser tests are marked ``browser``; they compare ortweb in the page with native
onnxruntime on the host. No test may send a request off the local server or leave
an uncaught error in the page: checked per test for ``ortweb_page`` and
``other_page``, and over the whole module for the module's page.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

import pytest

from ortweb.host.browser import Runtime
from ortweb.testing import ModulePage, OrtwebPage

# The remote browsers' fixtures (two modules use them), loaded here so that pytest
# rewrites their asserts before a test module imports their helpers.
pytest_plugins = ["remote_browsers"]

# The browsers that ortweb's commands launch in the tests' subprocesses compile
# WebAssembly as the plugin's do: V8's baseline compiler only. Pyodide's boot otherwise
# has TurboFan recompile hundreds of hot functions on the other core, which on this
# suite's short pages is CPU taken from the other worker (docs: Development). The
# bench pins V8's default tiers for what it times; test_launch checks both.
os.environ.setdefault("ORTWEB_WASM_TIERS", "baseline")

_BROWSER_FIXTURES = {
    "other_page", "ortweb_page", "ortweb_module_page", "ortweb_runtime", "ortweb_browser",
    "ortweb_webgpu", "ortweb_providers",
}


#: The modules whose tests took a minute or more together, longest first (their summed
#: times in the fresh-clone run of f0d0b7f, docs/pages/development.md). Collected first,
#: so that pytest-xdist hands them out in its first round (``--dist loadfile`` deals the
#: first modules in turn) and no worker ends the phase alone on one of them while the
#: other idles.
_LONG_MODULES = (
    "test_remote_browsers.py", "test_site_snapshot.py", "test_cli.py", "test_site.py",
    "test_bench.py", "test_lite.py", "test_testing_plugin.py", "test_site_offline.py",
    "test_conformance.py", "test_external_data.py", "test_reliability.py",
    "test_site_unpacked.py", "test_engines_real_models.py", "test_site_engines.py",
    "test_engines.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "webgpu" in item.keywords or _BROWSER_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.browser)
    rank = {name: i for i, name in enumerate(_LONG_MODULES)}
    # Stable: a module's tests keep their order.
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))


def _uses_module_page(module: pytest.Module, items: list[pytest.Item]) -> bool:
    return any(item.getparent(pytest.Module) is module
               and "ortweb_module_page" in getattr(item, "fixturenames", ())
               for item in items)


@pytest.fixture(scope="module", autouse=True)
def _module_page_stays_offline_and_clean(request: pytest.FixtureRequest) -> Iterator[None]:
    # Module-scoped fixtures (models written into the page) and tests that drive
    # ``ortweb_module_page`` directly run outside any ``ortweb_page``'s own check, so
    # the module's page is checked as a whole when the module is done. Modules that
    # never use it get no page: asking for one would start the browser.
    if not _uses_module_page(request.node, request.session.items):
        yield
        return
    module_page: ModulePage = request.getfixturevalue("ortweb_module_page")
    # The page is shared with other modules: what it logged before this one is theirs.
    start = module_page.current
    marks = (len(start.capture.blocked), len(start.capture.errors)) if start else (0, 0)
    yield
    # The page in use now; one discarded after a timeout took its log with it.
    p = module_page.current
    if p is not None:
        blocked, errors = p.capture.blocked, p.capture.errors
        if p is start:
            blocked, errors = blocked[marks[0]:], errors[marks[1]:]
        assert not blocked, f"requests left 127.0.0.1: {blocked}"
        assert not errors, f"uncaught page errors: {errors}"


@pytest.fixture(autouse=True)
def _page_stays_offline_and_clean(request: pytest.FixtureRequest) -> Iterator[None]:
    yield
    p: Any = getattr(request.node, "funcargs", {}).get("ortweb_page")
    if p is not None:
        assert not p.blocked_requests, f"requests left 127.0.0.1: {p.blocked_requests}"
        assert not p.errors, f"uncaught page errors: {p.errors}"


@pytest.fixture
def other_page(request: pytest.FixtureRequest, ortweb_runtime: Runtime
               ) -> Callable[..., AbstractContextManager[OrtwebPage]]:
    """``other_page(runtime=None, webgpu_build="native")``: a new page, closed on leaving.

    For ``@run_in_browser`` functions that need what the module's page cannot give:
    a page no earlier test has touched (thread count, ORT's GPU buffers), another
    server or browser (``runtime``: one without cross-origin isolation or WebGPU), or
    the JSEP WebGPU build. Checked like ``ortweb_page``: no request off the local
    server, no uncaught page error.
    """
    config = request.config
    timeout = float(config.getoption("ortweb_timeout") or config.getini("ortweb_timeout"))

    @contextmanager
    def open_page(runtime: Runtime | None = None, webgpu_build: str = "native"
                  ) -> Iterator[OrtwebPage]:
        module_page = ModulePage(runtime or ortweb_runtime, webgpu_build=webgpu_build)
        try:
            p = OrtwebPage(module_page, providers=None, timeout=timeout, request=request)
            yield p
            assert not p.blocked_requests, f"requests left 127.0.0.1: {p.blocked_requests}"
            assert not p.errors, f"uncaught page errors: {p.errors}"
        finally:
            module_page.close()

    return open_page


@pytest.fixture(scope="session")
def light_models() -> Path:
    import onnx

    return Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"
