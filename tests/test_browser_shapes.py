"""Open shapes in the browser: -1 dims, unset dims, no shape, scalars, free dims.

ortweb describes a model's inputs and outputs from the model's bytes, as native
onnxruntime does, and accepts every feed native accepts. Each test compares with
native onnxruntime on the host, on wasm and on WebGPU.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import numpy as np
import onnxruntime as ort
import pytest

from ortweb.testing import run_in_browser
from shape_models import feed_sets, open_shapes_model

pytestmark = pytest.mark.browser


def _native(model: bytes, **overrides: int) -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.log_severity_level = 3
    for name, size in overrides.items():
        options.add_free_dimension_override_by_name(name, size)
    return ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])


def _args(node_args: Any) -> list[list[Any]]:
    return [[a.name, a.type, a.shape] for a in node_args]


def _meta(m: Any) -> dict[str, Any]:
    keys = ("producer_name", "graph_name", "graph_description", "domain", "description",
            "version", "custom_metadata_map")
    return {k: getattr(m, k) for k in keys}


@pytest.fixture(scope="module")
def model_path(ortweb_module_page):
    return ortweb_module_page.put_file("open_shapes.onnx", open_shapes_model())


@run_in_browser
async def _run_all(ortweb_page, source, provider, feeds_list):
    import ortweb

    sess = await ortweb.InferenceSession.create(source, providers=[provider])
    described = {
        "provider": sess.provider,
        "inputs": [[a.name, a.type, a.shape] for a in sess.get_inputs()],
        "outputs": [[a.name, a.type, a.shape] for a in sess.get_outputs()],
        "overridable": sess.get_overridable_initializers(),
        "meta": {k: getattr(sess.get_modelmeta(), k) for k in (
            "producer_name", "graph_name", "graph_description", "domain", "description",
            "version", "custom_metadata_map")},
        "repr": repr(sess.get_inputs()[0]),
    }
    results = [await sess.run_async(None, feeds) for feeds in feeds_list]
    # A feed native refuses is still refused before ORT-web, and the session lives.
    try:
        await sess.run_async(None, {**feeds_list[0], "a": np.zeros((2, 4), np.float32)})
        refusal = "no error"
    except ortweb.InvalidArgument as exc:
        refusal = str(exc)
    again = await sess.run_async(None, feeds_list[0])
    await sess.close_async()
    return described, results, refusal, again


def test_open_shapes_run_as_native(ortweb_page, ortweb_providers, model_path) -> None:
    model = open_shapes_model()
    native = _native(model)
    feeds_list = feed_sets()
    described, results, refusal, again = _run_all(
        ortweb_page, model_path, ortweb_providers, feeds_list
    )
    assert described["provider"] == ortweb_providers
    assert described["inputs"] == _args(native.get_inputs())
    assert described["inputs"][:3] == [
        ["a", "tensor(float)", [None, 3]], ["b", "tensor(float)", [None, 2]],
        ["c", "tensor(float)", []],
    ]
    assert described["outputs"] == _args(native.get_outputs())
    assert described["overridable"] == []
    assert described["meta"] == _meta(native.get_modelmeta())
    assert described["repr"] == "NodeArg(name='a', type='tensor(float)', shape=[None, 3])"
    names = [o.name for o in native.get_outputs()]
    for feeds, got in zip(feeds_list, results, strict=True):
        want = native.run(names, feeds)
        for name, g, w in zip(names, got, want, strict=True):
            assert g.shape == w.shape, (name, feeds[name[2:]].shape)
            np.testing.assert_allclose(g, w, rtol=1e-6, err_msg=name)
    assert "input 'a'" in refusal and "dimension 1 must be 3, got 4" in refusal
    np.testing.assert_allclose(again[0], native.run(names, feeds_list[0])[0], rtol=1e-6)


@run_in_browser
async def _with_override(ortweb_page, model, provider, feeds):
    import ortweb

    options = ortweb.SessionOptions()
    options.add_free_dimension_override_by_name("n", 2)
    sess = await ortweb.InferenceSession.create(model, options, providers=[provider])
    inputs = [[a.name, a.type, a.shape] for a in sess.get_inputs()]
    outputs = [[a.name, a.type, a.shape] for a in sess.get_outputs()]
    try:
        await sess.run_async(None, feeds)
        refusal = "no error"
    except ortweb.InvalidArgument as exc:
        refusal = str(exc)
    ok = await sess.run_async(None, {**feeds, "n1": feeds["n1"][:2], "n2": feeds["n2"][:2]})
    await sess.close_async()
    return inputs, outputs, refusal, ok


def test_free_dimension_overrides_fix_dims_as_native(ortweb_page, ortweb_providers) -> None:
    model = open_shapes_model()  # passed as bytes this time
    native = _native(model, n=2)
    feeds = feed_sets()[0]  # n1 has n = 3: native refuses it under the override
    inputs, outputs, refusal, ok = _with_override(ortweb_page, model, ortweb_providers, feeds)
    assert inputs == _args(native.get_inputs())
    assert ["n1", "tensor(float)", [2, 2]] in inputs
    assert outputs == _args(native.get_outputs())
    with pytest.raises(Exception, match=r"input: n[12]"):
        native.run(None, feeds)
    assert "input 'n1'" in refusal and "dimension 0 must be 2, got 3" in refusal
    fixed = {**feeds, "n1": feeds["n1"][:2], "n2": feeds["n2"][:2]}
    for got, want in zip(ok, native.run(None, fixed), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-6)


# -- `ortweb run --compare-native` -------------------------------------------------------


def _ortweb_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ortweb.cli", *args],
                          capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("provider", ["wasm", pytest.param("webgpu", marks=pytest.mark.webgpu)])
def test_cli_run_compare_native_on_open_shapes(tmp_path, provider) -> None:
    model = tmp_path / "open_shapes.onnx"
    model.write_bytes(open_shapes_model())
    result = _ortweb_cli("run", str(model), "--compare-native", "--providers", provider,
                         "--json")
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads(result.stdout)
    assert report["ok"] and report["provider"] == provider, report
    assert [c["name"] for c in report["compare_native"]] == [f"y_{n}" for n in
                                                            ("a", "b", "c", "s", "n1", "n2")]
    assert all(c["ok"] and c["tolerance_used"] <= 1 for c in report["compare_native"])
    text = _ortweb_cli("run", str(model), "--compare-native", "--providers", provider)
    assert text.returncode == 0, text.stdout + text.stderr
    assert "tol used" in text.stdout and "max rel" not in text.stdout


# -- overridable initializers -------------------------------------------------------------


def _initializer_model() -> bytes:
    """``y = x + w``, ``w`` an initializer that is also a graph input (overridable)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "w"], ["y"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3]),
         helper.make_tensor_value_info("w", TensorProto.FLOAT, [3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])],
        [numpy_helper.from_array(np.array([1, 2, 3], np.float32), "w")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model.SerializeToString()


@run_in_browser
async def _feed_initializer(ortweb_page, model, provider, x, w):
    import ortweb

    sess = await ortweb.InferenceSession.create(model, providers=[provider])
    listed = [[a.name, a.type, a.shape] for a in sess.get_overridable_initializers()]
    try:
        await sess.run_async(None, {"x": x, "w": w})
        refusal = "no error"
    except ortweb.NotImplementedByRuntime as exc:
        refusal = str(exc)
    (y,) = await sess.run_async(None, {"x": x})
    await sess.close_async()
    return listed, refusal, y


def test_overridable_initializer_feed_is_refused_clearly(ortweb_page) -> None:
    """Native lets a feed override an initializer; onnxruntime-web 1.30's run() takes
    graph inputs only, so ortweb says so before ORT sees it, and the session goes on."""
    model = _initializer_model()
    native = _native(model)
    x, w = np.ones(3, np.float32), np.full(3, 10, np.float32)
    assert native.run(None, {"x": x, "w": w})[0].tolist() == [11, 11, 11]
    listed, refusal, y = _feed_initializer(ortweb_page, model, "wasm", x, w)
    assert listed == _args(native.get_overridable_initializers())
    assert "'w' is an initializer" in refusal and "onnxruntime-web" in refusal, refusal
    np.testing.assert_array_equal(y, native.run(None, {"x": x})[0])
