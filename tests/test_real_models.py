"""Real models as an exporter wrote them, from a wheel on PyPI, against native onnxruntime.

rapidocr-onnxruntime ships PaddleOCR's models exported by paddle2onnx: the text
direction classifier declares its input ``[-1, 3, '?', '?']`` (a ``-1`` dim, which
onnxruntime-web reports as 4294967295), and the recogniser keeps its character set in
``metadata_props``. Only the model files are used (the package itself needs opencv,
which Pyodide cannot get offline here).
"""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from ortweb.testing import run_in_browser

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[1]
MODELS = "rapidocr_onnxruntime/models/"
CLS = "ch_ppocr_mobile_v2.0_cls_infer.onnx"
REC = "ch_PP-OCRv4_rec_infer.onnx"


def _model(name: str) -> bytes:
    pinned = json.loads((ROOT / "assets.lock.json").read_text())["pypi"]
    wheel = ROOT / "build" / "downloads" / pinned["rapidocr-onnxruntime"]["file"]
    assert wheel.exists(), f"run `python3 build.py setup` first: {wheel}"
    with zipfile.ZipFile(wheel) as zf:
        return zf.read(MODELS + name)


def _native(model: bytes) -> ort.InferenceSession:
    return ort.InferenceSession(model, providers=["CPUExecutionProvider"])


@pytest.mark.parametrize("provider", ["wasm", pytest.param("webgpu", marks=pytest.mark.webgpu)])
def test_cli_compare_native_on_a_paddle2onnx_model_with_a_minus_one_dim(tmp_path, provider):
    model = tmp_path / CLS
    model.write_bytes(_model(CLS))
    dims = onnx.load(model).graph.input[0].type.tensor_type.shape.dim
    declared = [d.dim_value if d.HasField("dim_value") else d.dim_param for d in dims]
    assert declared == [-1, 3, "?", "?"]  # the quirk this test is about
    inputs = tmp_path / "x.npz"
    x = np.random.default_rng(0).random((2, 3, 48, 192), dtype=np.float32)
    np.savez(inputs, x=x)
    done = subprocess.run(
        [sys.executable, "-m", "ortweb.cli", "run", str(model), "-i", str(inputs),
         "--providers", provider, "--compare-native", "--json"],
        capture_output=True, text=True, timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert report["ok"] and report["provider"] == provider, report
    assert [c["name"] for c in report["compare_native"]] == [
        o.name for o in _native(model.read_bytes()).get_outputs()
    ]
    assert all(c["ok"] for c in report["compare_native"]), report


@run_in_browser
async def _describe_and_run(ortweb_page, path, x):
    import ortweb

    sess = await ortweb.InferenceSession.create(path, providers=["wasm"])
    meta = sess.get_modelmeta()
    described = {
        "inputs": [[a.name, a.type, a.shape] for a in sess.get_inputs()],
        "outputs": [[a.name, a.type, a.shape] for a in sess.get_outputs()],
        "meta": [meta.producer_name, meta.graph_name, meta.graph_description, meta.domain,
                 meta.description, meta.version, meta.custom_metadata_map],
    }
    (y,) = await sess.run_async(None, {"x": x})
    await sess.close_async()
    return described, y


def test_recogniser_metadata_props_and_outputs_equal_native(ortweb_page):
    model = _model(REC)
    native = _native(model)
    x = np.random.default_rng(1).random((1, 3, 48, 320), dtype=np.float32)
    described, y = _describe_and_run(ortweb_page, ortweb_page.put_file(REC, model), x)
    meta = native.get_modelmeta()
    assert described["meta"] == [meta.producer_name, meta.graph_name, meta.graph_description,
                                 meta.domain, meta.description, meta.version,
                                 meta.custom_metadata_map]
    characters = described["meta"][-1]["character"].splitlines()
    assert len(characters) > 6000 and "疗" in characters  # the model's own character set
    assert described["inputs"] == [[a.name, a.type, a.shape] for a in native.get_inputs()]
    assert described["outputs"] == [[a.name, a.type, a.shape] for a in native.get_outputs()]
    np.testing.assert_allclose(y, native.run(None, {"x": x})[0], rtol=1e-3, atol=1e-4)
