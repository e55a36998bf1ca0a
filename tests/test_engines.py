"""The engines beside onnxruntime-web: tract and wonnx, in real Chromium, against native.

Each engine runs real models through the same ``InferenceSession`` API; what an
engine cannot run is refused before it loads, with the reason; what fails inside it
is a named error and the session stays usable. Pure checks of the engine table run
on the host (tests/test_engines_units.py).
"""

from __future__ import annotations

import re

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from ortweb.host.native import run_native
from ortweb.testing import run_in_browser, samples

pytestmark = pytest.mark.browser


def _inferred(model: bytes) -> bytes:
    """``model`` with the shape of every intermediate value declared (wonnx needs it)."""
    return onnx.shape_inference.infer_shapes(onnx.load_from_string(model)).SerializeToString()


def _static_mlp() -> bytes:
    """The sample MLP with its batch fixed to 2 and every shape declared."""
    model = onnx.load_from_string(samples.mlp_model(n_in=8, n_hidden=16, n_out=4))
    for value in [*model.graph.input, *model.graph.output]:
        value.type.tensor_type.shape.dim[0].dim_value = 2
    return _inferred(model.SerializeToString())


def _static_dense(batch: int | str = 2) -> bytes:
    """``Relu(x @ W1 + b1) @ W2 + b2`` on float32 ``[batch, 8]``, every shape declared:
    the MLP without its Softmax, which wonnx 0.5.1 computes wrong (its operator table)."""
    rng = np.random.default_rng(3)
    w = {name: onnx.numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32), name)
         for name, shape in [("W1", (8, 16)), ("b1", (16,)), ("W2", (16, 4)), ("b2", (4,))]}
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "W1"], ["h0"]),
         helper.make_node("Add", ["h0", "b1"], ["h1"]),
         helper.make_node("Relu", ["h1"], ["h2"]),
         helper.make_node("MatMul", ["h2", "W2"], ["h3"]),
         helper.make_node("Add", ["h3", "b2"], ["y"])], "dense",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, 4])], list(w.values()))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return _inferred(model.SerializeToString())


def _undeclared(model: bytes) -> bytes:
    """``model`` without the shapes of its intermediate values."""
    proto = onnx.load_from_string(model)
    del proto.graph.value_info[:]
    return proto.SerializeToString()


def _dynamic_k_model() -> bytes:
    """``y = Reshape(x, [2, 4])`` with ``x`` float32 ``["n", 4]``: only n = 2 runs."""
    graph = helper.make_graph(
        [helper.make_node("Reshape", ["x", "shape"], ["y"])], "dynamic_n",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])],
        [onnx.numpy_helper.from_array(np.array([2, 4], dtype=np.int64), "shape")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model.SerializeToString()


def _int64_model() -> bytes:
    """``y = x + 1`` on int64 ``[3]``: a type tract's and wonnx's JS APIs cannot pass."""
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "one"], ["y"])], "int64_add",
        [helper.make_tensor_value_info("x", TensorProto.INT64, [3])],
        [helper.make_tensor_value_info("y", TensorProto.INT64, [3])],
        [onnx.numpy_helper.from_array(np.array(1, dtype=np.int64), "one")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model.SerializeToString()


def _dropout_ratio_model() -> bytes:
    """``Dropout(x, ratio)``, opset 22, as the node suite's ``test_dropout_default_ratio``:
    wonnx 0.5.1 panics while loading it (Known upstream problems)."""
    graph = helper.make_graph(
        [helper.make_node("Dropout", ["x", "r"], ["y"], seed=0)], "dropout_ratio",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 4, 5]),
         helper.make_tensor_value_info("r", TensorProto.FLOAT, [])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 4, 5])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 22)])
    model.ir_version = 10
    return model.SerializeToString()


@pytest.fixture(scope="module")
def models(ortweb_module_page):
    made = {
        "mlp": samples.mlp_model(n_in=8, n_hidden=16, n_out=4),
        "static_mlp": _static_mlp(),
        "static_dense": _static_dense(),
        "dense": _static_dense("batch"),
        "two": _inferred(samples.two_outputs_model()),
        "static_undeclared": _undeclared(_static_dense()),
        "dynamic_k": _dynamic_k_model(),
        "int64": _int64_model(),
        "dropout_ratio": _dropout_ratio_model(),
    }
    return {name: (ortweb_module_page.put_file(f"{name}.onnx", data), data)
            for name, data in made.items()}


@run_in_browser
async def _run(ortweb_page, model, providers, feeds, runs=1, policy=None):
    """Run ``model`` ``runs`` times on ``providers`` (or ``ProviderPolicy(**policy)``):
    outputs of the last run, or the error."""
    import ortweb

    try:
        chosen = providers if policy is None else ortweb.ProviderPolicy(**policy)
        s = await ortweb.InferenceSession.create(model, providers=chosen)
    except ortweb.OrtWebError as exc:
        return {"error": type(exc).__name__, "message": str(exc),
                "reasons": getattr(exc, "reasons", {})}
    try:
        for _ in range(runs):
            outputs = await s.run_async(None, feeds)
        return {"provider": s.provider, "providers": s.get_providers(),
                "report": str(s.provider_report),
                "outputs": {a.name: o for a, o in zip(s.get_outputs(), outputs, strict=True)}}
    finally:
        await s.close_async()


def _equal_to_native(result, data, feeds, rtol=1e-5, atol=1e-5):
    assert "error" not in result, result
    native = run_native(data, feeds)
    assert set(result["outputs"]) == set(native)
    for name, want in native.items():
        got = result["outputs"][name]
        assert got.dtype == want.dtype and got.shape == want.shape, name
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=name)


def test_tract_equals_native_on_every_output(ortweb_page, models):
    rng = np.random.default_rng(0)
    path, data = models["two"]
    feeds = {"x": rng.standard_normal((2, 2), dtype=np.float32)}
    result = _run(ortweb_page, path, ["tract"], feeds)
    assert result["provider"] == "tract" and result["providers"] == ["tract"]
    assert "engine: tract" in result["report"]
    # tractjs 0.4.0 itself returns the first output for every output: the second
    # output equals native only with ortweb's fix of its worker.
    _equal_to_native(result, data, feeds)


def test_tract_runs_ops_its_table_distrusts_only_when_trusted(ortweb_page, models):
    path, data = models["mlp"]
    feeds = {"x": np.random.default_rng(1).standard_normal((3, 8), dtype=np.float32)}
    refused = _run(ortweb_page, path, ["tract"], feeds)
    assert refused["error"] == "ProviderUnavailable"
    assert "gives wrong values on tract" in refused["message"]
    assert "ProviderPolicy(trust={'tract': [" in refused["message"]
    # This model's MatMul (2-D, no broadcast) and Softmax (last axis) are the cases
    # tract gets right: trusted, it equals native.
    trusted = _run(ortweb_page, path, None, feeds, policy={
        "require": "tract", "trust": {"tract": ["MatMul", "Softmax"]}})
    assert trusted.get("provider") == "tract", trusted
    _equal_to_native(trusted, data, feeds)


@pytest.mark.webgpu
def test_wonnx_equals_native(ortweb_page, models):
    rng = np.random.default_rng(1)
    for name, feeds in [("static_dense", {"x": rng.standard_normal((2, 8), dtype=np.float32)}),
                        ("two", {"x": rng.standard_normal((2, 2), dtype=np.float32)})]:
        path, data = models[name]
        # wonnx ran none of the node suite's MatMul cases (their dims are odd, which it
        # refuses); this model's are even, so MatMul is trusted.
        result = _run(ortweb_page, path, None, feeds, runs=2,
                      policy={"require": "wonnx", "trust": {"wonnx": ["MatMul"]}})
        assert result.get("provider") == "wonnx", result
        _equal_to_native(result, data, feeds, rtol=1e-4, atol=1e-5)


@pytest.mark.webgpu
def test_wonnx_runs_a_free_dim_pinned_by_the_cli(models, tmp_path):
    """``ortweb run --dim batch=2``: the dim is pinned in the bytes wonnx gets (its
    inputs, outputs and value_info), and the outputs equal native onnxruntime."""
    import json
    import subprocess
    import sys

    model = tmp_path / "dense.onnx"
    model.write_bytes(models["dense"][1])
    command = [sys.executable, "-m", "ortweb.cli", "run", str(model), "--providers", "wonnx",
               "--trust", "MatMul", "--compare-native", "--json"]
    refused = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert refused.returncode == 1 and "add_free_dimension_override_by_name('batch', n)" in (
        refused.stdout), refused.stdout + refused.stderr
    done = subprocess.run([*command, "--dim", "batch=2"], capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert report["provider"] == "wonnx" and report["outputs"][0]["shape"] == [2, 4], report
    assert report["compare_native"] and all(c["ok"] for c in report["compare_native"]), report


@pytest.mark.parametrize(("model", "provider", "said"), [
    ("int64", "tract", "input 'x': tensor(int64) is not a type the tract engine"),
    ("int64", "wonnx", "input 'x': tensor(int64) is not a type the wonnx engine"),
    ("mlp", "wonnx", "dynamic dim 'batch'"),
    ("static_undeclared", "wonnx", "value_info"),
])
def test_an_engine_that_cannot_run_the_model_is_refused_before_it_loads(
        ortweb_page, models, model, provider, said):
    feeds = {"int64": {"x": np.arange(3)}, "mlp": {"x": np.zeros((2, 8), np.float32)},
             "static_undeclared": {"x": np.zeros((2, 8), np.float32)}}[model]
    alone = _run(ortweb_page, models[model][0], [provider], feeds)
    assert alone["error"] == "ProviderUnavailable", alone
    assert said in alone["message"] and said in alone["reasons"][provider]
    # With a fallback, the next provider runs, and the report says why the engine did not.
    fell_back = _run(ortweb_page, models[model][0], [provider, "wasm"], feeds)
    assert fell_back["provider"] == "wasm"
    assert re.search(rf"{provider}\s+not tried: ", fell_back["report"]), fell_back["report"]
    assert said in fell_back["report"]


@run_in_browser
async def _failed_run_then_good_one(ortweb_page, model):
    import numpy as np

    import ortweb

    s = await ortweb.InferenceSession.create(model, providers=["tract"])
    failed: tuple[str, str] | None = None
    try:
        before = (await s.run_async(None, {"x": np.ones((2, 4), np.float32)}))[0]
        try:
            await s.run_async(None, {"x": np.ones((3, 4), np.float32)})
        except ortweb.OrtWebError as exc:
            failed = (type(exc).__name__, str(exc))
        good = (await s.run_async(None, {"x": np.ones((2, 4), np.float32)}))[0]
        return failed, before, good
    finally:
        await s.close_async()


def test_a_run_tract_fails_is_a_named_error_and_the_session_runs_again(ortweb_page, models):
    path, data = models["dynamic_k"]
    failed, before, good = _failed_run_then_good_one(ortweb_page, path)
    np.testing.assert_array_equal(before, good)
    assert failed is not None and failed[0] == "OrtRuntimeError" and "tract" in failed[1], failed
    np.testing.assert_allclose(good, run_native(data, {"x": np.ones((2, 4), np.float32)})["y"],
                               rtol=1e-6)


@run_in_browser
async def _wonnx_limit(ortweb_page, seconds):
    """Set (or, with None, drop) the page's ``ortwebConfig.wonnxTimeLimitS``."""
    import js

    config = getattr(js.globalThis, "ortwebConfig", None)
    if config is None:
        js.globalThis.ortwebConfig = config = js.Object.new()
    if seconds is None:
        js.Reflect.deleteProperty(config, "wonnxTimeLimitS")
    else:
        config.wonnxTimeLimitS = seconds


@pytest.mark.webgpu
def test_a_model_wonnx_panics_on_is_a_named_error_and_the_next_session_runs(ortweb_page, models):
    """A panic inside wonnx traps in a task of its own and left the call waiting for
    ever, and every later session of that instance too: now the call fails at once
    naming wonnx, the policy falls back where it allows, the page sees no uncaught
    error, and the next wonnx session runs on a fresh instance."""
    path, data = models["dropout_ratio"]
    feeds = {"x": np.random.default_rng(4).standard_normal((3, 4, 5), dtype=np.float32),
             "r": np.array(0.1, np.float32)}
    trust = {"wonnx": ["Dropout"]}
    two, two_feeds = models["two"], {"x": np.ones((2, 2), np.float32)}
    alone = _run(ortweb_page, path, None, feeds, policy={"require": "wonnx", "trust": trust})
    assert alone.get("error") in ("OrtRuntimeError", "ProviderUnavailable"), alone
    assert "wonnx panicked" in alone["message"], alone
    good = _run(ortweb_page, two[0], ["wonnx"], two_feeds)
    assert good.get("provider") == "wonnx", good
    _equal_to_native(good, two[1], two_feeds)
    fell_back = _run(ortweb_page, path, None, feeds,
                     policy={"order": ["wonnx", "wasm"], "trust": trust})
    assert fell_back.get("provider") == "wasm", fell_back
    assert "wonnx panicked" in fell_back["report"], fell_back["report"]
    _equal_to_native(fell_back, data, feeds)


@pytest.mark.webgpu
def test_a_wonnx_call_past_its_time_limit_is_a_named_error_and_the_next_session_runs(
        ortweb_page, models):
    """wonnx never settles on some models without a panic either: past the time limit
    (here shortened so that a good model's load outlasts it) the call fails naming
    wonnx and the limit, and the next session runs on a fresh instance."""
    two, two_feeds = models["two"], {"x": np.ones((2, 2), np.float32)}
    _wonnx_limit(ortweb_page, 0.001)
    try:
        late = _run(ortweb_page, two[0], ["wonnx"], two_feeds)
    finally:
        _wonnx_limit(ortweb_page, None)
    assert late.get("error") in ("OrtRuntimeError", "ProviderUnavailable"), late
    assert "wonnx did not finish loading the model within 0.001 s" in late["message"], late
    good = _run(ortweb_page, two[0], ["wonnx"], two_feeds)
    assert good.get("provider") == "wonnx", good
    _equal_to_native(good, two[1], two_feeds)


@run_in_browser
async def _gpu_feed_to_tract(ortweb_page, model):
    import numpy as np

    import ortweb

    s = await ortweb.InferenceSession.create(model, providers=["tract"])
    value = ortweb.OrtValue.ortvalue_from_numpy(np.ones((2, 2), np.float32), "webgpu")
    try:
        try:
            await s.run_async(None, {"x": value})
        except ortweb.NotImplementedByRuntime as exc:
            refused = str(exc)
        after = (await s.run_async(None, {"x": np.ones((2, 2), np.float32)}))[0]
        return refused, after
    finally:
        value.dispose()
        await s.close_async()


@pytest.mark.webgpu
def test_a_gpu_value_fed_to_tract_is_not_implemented_and_the_session_runs_on(
        ortweb_page, models):
    refused, after = _gpu_feed_to_tract(ortweb_page, models["two"][0])
    assert "tract" in refused and "GPU" in refused and "'x'" in refused
    np.testing.assert_array_equal(after, np.full((2, 2), 2, np.float32))


@run_in_browser
async def _default_and_downloads(ortweb_page, model):
    import js
    import numpy as np

    import ortweb

    s = await ortweb.InferenceSession.create(model)
    await s.run_async(None, {"x": np.ones((2, 2), np.float32)})
    provider = s.provider
    await s.close_async()
    urls = [e.name for e in js.performance.getEntriesByType("resource")]
    return provider, await ortweb.get_available_providers_async(), urls


@pytest.mark.ortweb_fresh_page
def test_the_default_is_unchanged_and_downloads_no_other_engine(ortweb_page, models):
    provider, available, urls = _default_and_downloads(ortweb_page, models["two"][0])
    assert provider in ("webgpu", "wasm")
    assert "tract" in available and "wasm" in available
    assert ("wonnx" in available) == ("webgpu" in available)
    assert not [u for u in urls if "/engines/" in u], urls


@pytest.mark.ortweb_fresh_page  # a page that fetched tract's worker keeps its checked bytes
@pytest.mark.parametrize(("served", "said"), [
    ({"status": 200, "body": "self.onmessage = () => {};"}, "not the pinned"),
    ({"status": 404, "body": "gone"}, "is missing (HTTP 404)"),
])
def test_a_changed_or_missing_engine_file_is_refused_and_the_policy_falls_back(
        ortweb_page, models, served, said):
    """The engine's file is checked before it runs (bridge_js/engine_files.js): a changed
    one is never run, a missing one is named, the policy falls back, and once the file
    is right again the engine runs."""
    path, data = models["two"]
    feeds = {"x": np.random.default_rng(2).standard_normal((2, 2), dtype=np.float32)}
    url = "**/engines/tract/tract-worker.js"
    page = ortweb_page.page
    page.route(url, lambda route: route.fulfill(
        status=served["status"], body=served["body"], content_type="text/javascript"))
    try:
        alone = _run(ortweb_page, path, ["tract"], feeds)
        fell_back = _run(ortweb_page, path, ["tract", "wasm"], feeds)
    finally:
        page.unroute(url)
    assert alone["error"] == "ProviderUnavailable", alone
    assert said in alone["reasons"]["tract"] and "tract-worker.js" in alone["reasons"]["tract"]
    assert fell_back["provider"] == "wasm" and said in fell_back["report"]
    _equal_to_native(fell_back, data, feeds)
    again = _run(ortweb_page, path, ["tract"], feeds)
    assert again["provider"] == "tract", again
    _equal_to_native(again, data, feeds)
