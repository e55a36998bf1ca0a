"""Shared fixtures: one headless Chromium per session, one Pyodide page per module.

Browser tests are marked ``browser``; they compare ortweb in the page with native
onnxruntime on the host. Every page asserts at teardown that no request left the
local server.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from ortweb.host.browser import PyodidePage, Runtime, open_runtime


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "webgpu" in item.keywords:
            item.add_marker(pytest.mark.browser)


@pytest.fixture(scope="session")
def runtime() -> Iterator[Runtime]:
    with open_runtime() as rt:
        yield rt


@pytest.fixture(scope="module")
def page(runtime: Runtime) -> Iterator[PyodidePage]:
    p = runtime.new_page()
    try:
        yield p
    finally:
        blocked = p.blocked_requests
        errors = list(p.capture.errors)
        p.close()
    assert not blocked, f"requests left 127.0.0.1: {blocked}"
    assert not errors, f"uncaught page errors: {errors}"


@pytest.fixture(scope="session")
def webgpu_info(runtime: Runtime) -> dict:
    """The page's WebGPU probe: ``{available, reason, features, info}``."""
    with runtime.new_page() as p:
        return p.run_json(
            "import json, ortweb\njson.dumps(await ortweb._bridge.probe_webgpu())"
        )


@pytest.fixture(autouse=True)
def _skip_without_webgpu(request: pytest.FixtureRequest) -> None:
    if request.node.get_closest_marker("webgpu") is not None:
        info = request.getfixturevalue("webgpu_info")
        if not info["available"]:
            pytest.skip(f"no WebGPU adapter: {info['reason']}")


@pytest.fixture(scope="module")
def put_file(runtime: Runtime, page: PyodidePage) -> Iterator[Callable[[str, bytes], str]]:
    """Write bytes into the page's file system; returns the path there."""
    with runtime.shared_folder() as (folder, prefix):

        def put(name: str, data: bytes) -> str:
            (folder / name).write_bytes(data)
            path = f"/home/pyodide/{name}"
            page.write_file(prefix + name, path)
            return path

        yield put


@pytest.fixture(scope="session")
def light_models() -> Path:
    import onnx

    return Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"
