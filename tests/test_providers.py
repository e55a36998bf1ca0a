"""Execution-provider policy: order, disallow, require, fallback reasons, auto, reports."""

from __future__ import annotations

import re

import numpy as np
import pytest

from ortweb.host import samples
from ortweb.host.native import run_native
from ortweb.host.server import StaticServer

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def models(put_file):
    return {
        "two": put_file("two.onnx", samples.two_outputs_model()),
        "unsupported": put_file("unsupported.onnx", samples.unsupported_on_webgpu_model()),
        "mlp": put_file("mlp.onnx", samples.mlp_model(n_in=8, n_hidden=8, n_out=4)),
        "f16": put_file("f16.onnx", samples.float16_model()),
    }


def _session_report(page, model, providers_expr):
    return page.run_json(f"""
import json, ortweb
from ortweb import ProviderPolicy
try:
    s = await ortweb.InferenceSession.create({model!r}, providers={providers_expr})
    r = {{"provider": s.provider, "attempts": [[a.provider, a.status, a.reason]
          for a in s.provider_report.attempts], "text": str(s.provider_report),
          "cpu": s.provider_report.cpu_nodes, "gpu": s.provider_report.gpu_nodes,
          "skipped": s.skipped_providers}}
    await s.close_async()
except ortweb.OrtWebError as exc:
    r = {{"error": type(exc).__name__, "message": str(exc),
          "reasons": getattr(exc, "reasons", {{}})}}
json.dumps(r)
""")


@pytest.mark.webgpu
@pytest.mark.parametrize(("order", "want"), [(["wasm", "webgpu"], "wasm"),
                                              (["webgpu", "wasm"], "webgpu")])
def test_order_is_respected(page, models, order, want):
    r = _session_report(page, models["two"], repr(order))
    assert r["provider"] == want
    assert r["attempts"][0] == [want, "used", ""]
    # The other one was merely later in the order: listed, but not as skipped.
    assert r["attempts"][1][:2] == [order[1], "not needed"]
    assert r["skipped"] == {}


@pytest.mark.webgpu
def test_disallow_is_respected(page, models):
    r = _session_report(page, models["two"], 'ProviderPolicy(disallow=["webgpu"])')
    assert r["provider"] == "wasm"
    assert ["webgpu", "disallowed", "disallowed by the provider policy"] in r["attempts"]
    assert "webgpu" in r["skipped"]


def test_everything_disallowed_is_refused(page, models):
    r = _session_report(page, models["two"],
                        'ProviderPolicy(order=["wasm"], disallow=["wasm"])')
    assert r["error"] == "InvalidArgument" and "disallowed" in r["message"]


@pytest.mark.webgpu
def test_fallback_false_tries_only_the_first(page, models):
    r = _session_report(page, models["f16"], 'ProviderPolicy(order=["webgpu", "wasm"], '
                                             'fallback=False)')
    # float16 cannot run on this adapter's WebGPU (no shader-f16 on SwiftShader):
    # without fallback the session fails instead of moving to wasm.
    if "provider" in r:
        assert r["provider"] == "webgpu"  # an adapter with shader-f16
    else:
        assert r["error"] == "ProviderUnavailable"
        assert "shader-f16" in r["reasons"]["webgpu"]
        assert r["reasons"]["wasm"] == "not tried: fallback=False"


@pytest.mark.webgpu
def test_float16_model_falls_back_with_reason(page, models):
    r = _session_report(page, models["f16"], '["webgpu", "wasm"]')
    if r["provider"] == "wasm":
        assert ["webgpu", "skipped"] == r["attempts"][0][:2]
        assert "shader-f16" in r["attempts"][0][2]


@pytest.fixture(scope="module")
def no_gpu_page(runtime):
    """A page in a browser launched without the WebGPU flags: no adapter."""
    with runtime.browser.sibling(webgpu=False) as browser, \
            browser.new_page(runtime.server.url) as p:
        yield p
        assert not p.blocked_requests


def test_without_webgpu_fallback_reason_and_require(no_gpu_page, runtime):
    with runtime.shared_folder() as (folder, prefix):
        (folder / "two.onnx").write_bytes(samples.two_outputs_model())
        no_gpu_page.write_file(prefix + "two.onnx", "two.onnx")
        fallback = _session_report(no_gpu_page, "two.onnx", "None")
        required = _session_report(no_gpu_page, "two.onnx", 'ProviderPolicy(require="webgpu")')
        available = no_gpu_page.run_json(
            "import json, ortweb\njson.dumps(ortweb.get_available_providers())")
    assert fallback["provider"] == "wasm"
    status = {a[0]: a for a in fallback["attempts"]}
    assert status["webgpu"][1] == "skipped"
    assert re.search(r"navigator\.gpu|requestAdapter", status["webgpu"][2])
    assert required["error"] == "ProviderUnavailable"
    assert "requires 'webgpu'" in required["message"]
    assert re.search(r"navigator\.gpu|requestAdapter", required["message"])
    assert available == ["wasm"]


def _webgpu_operators(runtime) -> set[str]:
    """Op types listed in the WebGPU operator table shipped in the npm package (JSEP)."""
    text = (runtime.assets.ort_package / "docs" / "webgpu-operators.md").read_text()
    return set(re.findall(r"^\|\s*([A-Z][A-Za-z0-9]+)\s*\|", text, re.M))


@pytest.mark.webgpu
def test_cpu_placed_nodes_match_the_jsep_operator_list(runtime, models):
    """The report's CPU nodes are the ones whose op the (JSEP) WebGPU EP lacks."""
    import onnx

    model = onnx.load_model_from_string(samples.unsupported_on_webgpu_model())
    ops = {n.op_type for n in model.graph.node}
    listed = _webgpu_operators(runtime)
    assert "Conv" in listed and "Round" not in listed, "operator table not parsed"
    with runtime.new_page(webgpu_build="jsep") as p, runtime.shared_folder() as (folder, prefix):
        (folder / "u.onnx").write_bytes(samples.unsupported_on_webgpu_model())
        p.write_file(prefix + "u.onnx", "u.onnx")
        r = _session_report(p, "u.onnx", '["webgpu"]')
    cpu_ops = {n.split(" ")[0] for n in r["cpu"]}
    gpu_ops = {n.split(" ")[0] for n in r["gpu"]}
    assert r["provider"] == "webgpu"
    assert cpu_ops | gpu_ops == ops
    assert ops - listed <= cpu_ops, (ops - listed, r["text"])
    assert "on the CPU" in r["text"]


@pytest.mark.webgpu
def test_cpu_placed_nodes_native_build_and_answers_right(page, models):
    r = _session_report(page, models["unsupported"], '["webgpu"]')
    assert r["provider"] == "webgpu"
    assert r["text"].splitlines()[1:4] == [
        "  webgpu  used", "  1 node(s) on the CPU, 1 on WebGPU; on the CPU:", "    Round ()",
    ], r["text"]
    cpu_ops = {n.split(" ")[0] for n in r["cpu"]}
    # Measured on the native (C++) WebGPU EP of 1.30: Round is missing there, TopK is not.
    assert "Round" in cpu_ops and "TopK" not in cpu_ops, r["text"]
    x = np.array([[0.5, 2.5, -1.5, 3.7, 0.2], [9.0, -2.2, 4.4, 1.1, 0.0]], np.float32)
    out = page.run_json(f"""
import json, numpy as np, ortweb
s = await ortweb.InferenceSession.create({models['unsupported']!r}, providers=["webgpu"])
outs = await s.run_async(None, {{"x": np.array({x.tolist()!r}, np.float32)}})
await s.close_async()
json.dumps([o.tolist() for o in outs])
""")
    want = run_native(samples.unsupported_on_webgpu_model(), {"x": x})
    for got, (name, value) in zip(out, want.items(), strict=True):
        np.testing.assert_allclose(got, value, rtol=1e-6, err_msg=name)


@pytest.mark.webgpu
def test_auto_measures_stores_and_reuses(page, models):
    out = page.run_json(f"""
import json, ortweb
first = await ortweb.InferenceSession.create({models['mlp']!r}, providers="auto")
r1 = first.provider_report
second = await ortweb.InferenceSession.create({models['mlp']!r}, providers="auto")
r2 = second.provider_report
res = [first.provider, r1.auto, r1.timings, second.provider, r2.auto, r2.timings, str(r1)]
for s in (first, second):
    await s.close_async()
keys = [k.url for k in await (await js.caches.open("ortweb-choices-v1")).keys()]
json.dumps(res + [keys])
""".replace("import json, ortweb", "import json, js, ortweb"))
    p1, how1, t1, p2, how2, t2, text, keys = out
    assert how1 == "measured" and set(t1) == {"webgpu", "wasm"}
    assert p1 == min(t1, key=lambda p: t1[p]["median_ms"])
    assert all(t["runs"] >= 1 and t["median_ms"] > 0 for t in t1.values())
    assert how2 == "remembered" and p2 == p1 and t2 == t1
    assert "auto timings" in text and "measured" in text
    assert any("ortweb.invalid/choice/auto" in k for k in keys)


def _info(page, threads):
    return page.run_json(f"""
import json, warnings, ortweb
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    used = ortweb.set_num_threads({threads})
    s = await ortweb.InferenceSession.create(open("m.onnx", "rb").read(), providers=["wasm"])
    await s.close_async()
info = ortweb.runtime_info()
json.dumps([used, info, [str(w.message) for w in caught]])
""")


def test_runtime_info_isolated_page(runtime):
    with runtime.new_page() as p, runtime.shared_folder() as (folder, prefix):
        (folder / "m.onnx").write_bytes(samples.two_outputs_model())
        p.write_file(prefix + "m.onnx", "m.onnx")
        used, info, warned = _info(p, 2)
    assert info["cross_origin_isolated"] is True
    assert info["onnxruntime_web"] == "1.30.0"
    assert info["webgpu_build"] == "native"
    assert info["simd"] is True
    assert used == 2 and info["builds"]["wasm"]["numThreads"] == 2
    assert not [w for w in warned if "isolated" in w]


def test_runtime_info_non_isolated_page_warns_once(runtime):
    with StaticServer(runtime.assets.mounts(), isolation=False) as plain, \
            runtime.browser.new_page(plain.url) as p:
        plain.add_mount("/m/", runtime.assets.root / "build" / "pyodide")
        import tempfile
        from pathlib import Path

        with tempfile.TemporaryDirectory() as tmp:
            (Path(tmp) / "m.onnx").write_bytes(samples.two_outputs_model())
            plain.add_mount("/f/", Path(tmp))
            p.write_file("/f/m.onnx", "m.onnx")
            used, info, warned = _info(p, 2)
            again = p.run_json("""
import json, warnings, ortweb
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    ortweb.set_num_threads(2)
json.dumps([str(w.message) for w in caught])
""")
    assert info["cross_origin_isolated"] is False
    assert used == 1 and info["builds"]["wasm"]["numThreads"] == 1
    isolation = [w for w in warned if "cross-origin isolated" in w]
    assert len(isolation) == 1 and "Cross-Origin-Embedder-Policy" in isolation[0]
    assert not [w for w in again if "cross-origin isolated" in w], "warned twice"


@pytest.mark.webgpu
def test_runtime_info_webgpu_adapter(page):
    info = page.run_json("import json, ortweb\njson.dumps(ortweb.runtime_info())")
    assert info["webgpu"]["available"] is True
    assert isinstance(info["webgpu"]["features"], list)
    assert "description" in info["webgpu"]["info"]
