"""Shared fixtures, on top of ``ortweb.testing`` (the pytest plugin ortweb ships).

The plugin gives one headless Chromium per session (per xdist worker), one page per
test module (Pyodide + numpy + ortweb) and, per test, ``ortweb_page`` and
``@run_in_browser``. The older names below stay for tests that use them:
``runtime`` (server + browser), ``page`` (the module's page), ``put_file`` and
``webgpu_info``. The ``webgpu`` marker (skip without an adapter) is the plugin's.

Browser tests are marked ``browser``; they compare ortweb in the page with native
onnxruntime on the host. No test may send a request off the local server or leave
an uncaught error in the page: checked per test for ``ortweb_page``, per module for
``page``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from ortweb.host.browser import PyodidePage, Runtime
from ortweb.testing import ModulePage

_BROWSER_FIXTURES = {
    "runtime", "page", "put_file", "webgpu_info", "ortweb_page", "ortweb_module_page",
    "ortweb_runtime", "ortweb_browser", "ortweb_webgpu", "ortweb_providers",
}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "webgpu" in item.keywords or _BROWSER_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.browser)


@pytest.fixture(scope="session")
def runtime(ortweb_runtime: Runtime) -> Runtime:
    return ortweb_runtime


@pytest.fixture(scope="module")
def page(ortweb_module_page: ModulePage) -> Iterator[PyodidePage]:
    p = ortweb_module_page.pyodide_page
    blocked, errors = len(p.capture.blocked), len(p.capture.errors)
    yield p
    assert not p.capture.blocked[blocked:], f"requests left 127.0.0.1: {p.capture.blocked}"
    assert not p.capture.errors[errors:], f"uncaught page errors: {p.capture.errors}"


@pytest.fixture(autouse=True)
def _page_stays_offline_and_clean(request: pytest.FixtureRequest) -> Iterator[None]:
    yield
    p: Any = getattr(request.node, "funcargs", {}).get("ortweb_page")
    if p is not None:
        assert not p.blocked_requests, f"requests left 127.0.0.1: {p.blocked_requests}"
        assert not p.errors, f"uncaught page errors: {p.errors}"


@pytest.fixture(scope="session")
def webgpu_info(ortweb_webgpu: dict) -> dict:
    """The browser's WebGPU probe: ``{available, reason, features, info}``."""
    return ortweb_webgpu


@pytest.fixture(scope="module")
def put_file(ortweb_module_page: ModulePage, page: PyodidePage) -> Callable[[str, bytes], str]:
    """Write bytes into the module page's file system; returns the path there."""
    return ortweb_module_page.put_file


@pytest.fixture(scope="session")
def light_models() -> Path:
    import onnx

    return Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"
