"""``ortweb site`` worker mode (the default) against ``--main-thread``, in real Chromium.

Python, ortweb and onnxruntime-web run in a module Web Worker: the page keeps
``window.ortweb`` (ready, call, timings, console, progress), typed arrays from the
page reach Python as buffers (not lists), tracebacks reach the page, WebGPU and IO
binding work in the worker, ``ortweb_page`` talks to the page, and a worker that
cannot start is named on the page.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest

from ortweb.host.browser import Browser, Runtime
from ortweb.host.build.assets import find_assets
from ortweb.host.build.site import build_site
from ortweb.host.serve import StaticServer
from ortweb.host.sitepage import SiteContext, SiteFailure, SitePage
from ortweb.testing import samples

pytestmark = pytest.mark.browser

X = np.array([[1.5, -2.0], [0.25, 4.0]], np.float32)

APP = '''\
import json
import os

import numpy as np

import ortweb
import ortweb_page

try:
    import js
    IN_WORKER = not hasattr(js, "document")
except ImportError:
    IN_WORKER = None
print("IN_WORKER", IN_WORKER)
ortweb_page.status("warming up")
sess = await ortweb.InferenceSession.create(os.environ["ORTWEB_MODEL"], providers=["wasm"])
(d,) = await sess.run_async(["double"], {"x": np.array([[1.5, -2.0], [0.25, 4.0]], np.float32)})
print("DOUBLE", json.dumps(d.tolist()), sess.provider)


def kind(value):
    # What a page's typed array arrives as: a buffer, never a list.
    return {"type": type(value).__name__, "nbytes": memoryview(value).nbytes,
            "sum": float(np.frombuffer(value, np.float32).sum())}


def double_sync(rows):
    # The synchronous API (JSPI) in the worker.
    (out,) = sess.run(["double"], {"x": np.frombuffer(rows, np.float32).reshape(2, 2)})
    return out


async def on_webgpu(rows):
    gpu = await ortweb.InferenceSession.create(os.environ["ORTWEB_MODEL"], providers=["webgpu"])
    x = np.frombuffer(rows, np.float32).reshape(2, 2)
    double, negated = await gpu.run_async(None, {"x": x})
    # IO binding with outputs kept on the GPU, read back afterwards.
    binding = gpu.io_binding()
    binding.bind_cpu_input("x", x)
    binding.bind_output("double", "webgpu")
    binding.bind_output("negated", "webgpu")
    await gpu.run_with_iobinding_async(binding)
    locations = [v.location for v in binding.get_outputs()]
    bound = await binding.copy_outputs_to_cpu_async()
    for v in binding.get_outputs():
        v.dispose()
    provider = gpu.provider
    await gpu.close_async()
    return {"provider": provider, "double": double, "negated": negated,
            "bound": [b.tolist() for b in bound], "locations": locations}


def notify(n):
    ortweb_page.status(f"step {n}")
    ortweb_page.post({"n": n, "values": np.arange(3)})
    return n


def fails():
    raise KeyError("missing on purpose")
'''


def _native(x: np.ndarray) -> dict[str, np.ndarray]:
    sess = ort.InferenceSession(samples.two_outputs_model(), providers=["CPUExecutionProvider"])
    double, negated = sess.run(None, {"x": x})
    return {"double": double, "negated": negated}


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("worker-inputs")
    (folder / "two.onnx").write_bytes(samples.two_outputs_model())
    (folder / "app.py").write_text(APP)
    return {"model": folder / "two.onnx", "script": folder / "app.py"}


@pytest.fixture(scope="module")
def browser(ortweb_runtime: Runtime) -> Browser:
    return ortweb_runtime.browser


def _site(inputs: dict[str, Path], out: Path, **kw) -> Path:
    kw.setdefault("providers", ["webgpu", "wasm"])
    build_site(inputs["model"], inputs["script"], out, **kw)
    return out


@pytest.fixture(scope="module", params=["worker", "main-thread"])
def visit(request: pytest.FixtureRequest, inputs: dict[str, Path], browser: Browser,
          tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, SitePage]]:
    mode = request.param
    site = _site(inputs, tmp_path_factory.mktemp("worker-sites") / mode,
                 worker=mode == "worker")
    with StaticServer(site) as server, SiteContext(browser, server.url) as ctx:
        page = ctx.open(server.url)
        yield mode, page
        errors = list(page.errors)
        page.close()
        assert not ctx.blocked, ctx.blocked
    assert not errors, errors


def test_mode_and_page_api(visit: tuple[str, SitePage]) -> None:
    mode, page = visit
    got = page.evaluate("""() => ({mode: window.ortweb.mode,
        pyodide: Boolean(window.ortweb.pyodide), worker: Boolean(window.ortweb.worker),
        isolated: crossOriginIsolated, functions: window.ortweb.functions(),
        timings: Object.keys(window.ortweb.timings)})""")
    assert got["mode"] == mode
    assert got["pyodide"] is (mode == "main-thread")
    assert got["worker"] is (mode == "worker")
    assert got["isolated"] is True
    assert got["functions"] == ["double_sync", "fails", "kind", "notify", "on_webgpu"]
    assert {"start", "pyodide", "script", "ready"} <= set(got["timings"])
    timings = page.timings()
    assert 0 < timings["start"] < timings["pyodide"] < timings["script"] < timings["ready"]
    console = page.evaluate("() => document.getElementById('ortweb-console').innerText")
    assert f"IN_WORKER {mode == 'worker'}" in console
    assert f"DOUBLE {json.dumps(_native(X)['double'].tolist())} wasm" in console
    rows = page.progress()
    assert rows and all(r["state"] in ("done", "cached") for r in rows.values()), rows


def test_ort_wasm_is_fetched_with_pyodide_not_after_ort_js(visit: tuple[str, SitePage]) -> None:
    # The wasm of the first session's build starts downloading with Pyodide's files,
    # before onnxruntime-web's JS is even checked and imported (python.js).
    mode, page = visit
    realm = page.page.workers[0] if mode == "worker" else page.page
    starts = dict(realm.evaluate(
        "() => performance.getEntriesByType('resource').map((e) => [e.name, e.startTime])"))
    wasm = [t for url, t in starts.items() if url.endswith("/ort-wasm-simd-threaded.asyncify.wasm")]
    js = [t for url, t in starts.items() if url.endswith("/ort.webgpu.min.mjs")]
    assert wasm and js, sorted(starts)
    assert min(wasm) < min(js), (wasm, js)


def test_without_webgpu_the_webgpu_build_is_not_fetched(browser: Browser, inputs,
                                                        tmp_path: Path) -> None:
    # A WebGPU-first site in a browser with no adapter: its sessions fall to the plain
    # wasm build, and the WebGPU build's wasm (tens of MB) is never downloaded.
    site = _site(inputs, tmp_path / "site")
    with browser.sibling(webgpu=False) as plain, StaticServer(site) as server, \
            SiteContext(plain, server.url) as ctx:
        page = ctx.open(server.url)
        urls = page.page.workers[0].evaluate(
            "() => performance.getEntriesByType('resource').map((e) => e.name)")
        page.close()
    names = {url.rsplit("/", 1)[1] for url in urls}
    assert "ort-wasm-simd-threaded.wasm" in names, sorted(names)
    assert "ort-wasm-simd-threaded.asyncify.wasm" not in names, sorted(names)


def test_typed_arrays_and_the_sync_api(visit: tuple[str, SitePage]) -> None:
    _, page = visit
    got = page.evaluate("() => window.ortweb.call('kind', new Float32Array([1, 2, 3.5]))")
    assert got == {"type": "memoryview", "nbytes": 12, "sum": 6.5}
    out = page.evaluate(
        "(x) => window.ortweb.call('double_sync', new Float32Array(x))", X.ravel().tolist())
    np.testing.assert_array_equal(np.asarray(out, np.float32), _native(X)["double"])


def test_webgpu_and_io_binding(visit: tuple[str, SitePage]) -> None:
    _, page = visit
    got = page.evaluate(
        "(x) => window.ortweb.call('on_webgpu', new Float32Array(x))", X.ravel().tolist())
    want = _native(X)
    assert got["provider"] == "webgpu"
    np.testing.assert_array_equal(np.asarray(got["double"], np.float32), want["double"])
    np.testing.assert_array_equal(np.asarray(got["negated"], np.float32), want["negated"])
    assert got["locations"] == ["gpu-buffer", "gpu-buffer"]
    np.testing.assert_array_equal(np.asarray(got["bound"][0], np.float32), want["double"])
    np.testing.assert_array_equal(np.asarray(got["bound"][1], np.float32), want["negated"])


def test_ortweb_page_posts_and_tracebacks_reach_the_page(visit: tuple[str, SitePage]) -> None:
    _, page = visit
    got = page.evaluate("""async () => {
        const seen = [];
        addEventListener('ortweb:message', (event) => seen.push(event.detail));
        const n = await window.ortweb.call('notify', 7);
        return {n, seen, status: document.getElementById('ortweb-status').textContent};
    }""")
    assert got == {"n": 7, "seen": [{"n": 7, "values": [0, 1, 2]}], "status": "step 7"}
    with pytest.raises(SiteFailure) as info:
        page.call("fails")
    assert info.value.type == "KeyError"
    assert 'File "app.py", line' in info.value.traceback and "in fails" in info.value.traceback
    box = page.evaluate("() => document.getElementById('ortweb-error').innerText")
    assert "KeyError: 'missing on purpose'" in box


def test_error_in_the_worker_script_shows_its_traceback(browser: Browser, inputs,
                                                        tmp_path: Path) -> None:
    script = tmp_path / "boom.py"
    script.write_text('print("before")\n\n\ndef helper():\n    raise RuntimeError("exploded")\n\n\n'
                      "helper()\n")
    site = tmp_path / "boom"
    build_site(inputs["model"], script, site, providers=["wasm"])
    with StaticServer(site) as server, SiteContext(browser, server.url) as ctx:
        with pytest.raises(SiteFailure) as info:
            ctx.open(server.url)
        assert info.value.type == "RuntimeError"
        assert 'File "boom.py", line 8, in <module>' in info.value.traceback
        assert 'File "boom.py", line 5, in helper' in info.value.traceback


def test_a_worker_that_cannot_start_is_named(browser: Browser, inputs, tmp_path: Path) -> None:
    # A missing file.
    site = _site(inputs, tmp_path / "missing", providers=["wasm"])
    (site / "ortweb" / "site_worker.js").unlink()
    with StaticServer(site) as server, SiteContext(browser, server.url) as ctx:
        with pytest.raises(SiteFailure, match=r"Web Worker ortweb/site_worker\.js.*HTTP 404"):
            ctx.open(server.url, timeout=60)
    # A Content-Security-Policy that forbids workers.
    template = tmp_path / "csp-template"
    shutil.copytree(find_assets().root / "templates" / "default", template)
    index = template / "index.html.j2"
    index.write_text(index.read_text().replace(
        '<meta charset="utf-8">',
        '<meta charset="utf-8">\n<meta http-equiv="Content-Security-Policy" '
        "content=\"worker-src 'none'\">"))
    site = _site(inputs, tmp_path / "csp", providers=["wasm"], template=template)
    with StaticServer(site) as server, SiteContext(browser, server.url) as ctx:
        with pytest.raises(SiteFailure, match=r"Web Worker ortweb/site_worker\.js"):
            ctx.open(server.url, timeout=60)
