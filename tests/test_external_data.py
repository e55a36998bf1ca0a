"""Models saved with external data (``model.onnx`` + ``model.onnx.data``), in the browser.

The model is made with ``onnx`` and saved by ``onnx.save_model`` itself: three
initializers in ``model.onnx.data`` (one of 2 MiB) and a ``Constant`` node's tensor
(``convert_attribute=True``), so the reader's walk through nodes is used too. Every
output is compared with native onnxruntime on the very same files. Each bad case
(file missing, file too short, a location with ``..``, bytes without their file) is
refused before onnxruntime-web sees it, with the class and the words asserted, and
a good session is created afterwards on the same page.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.external_data_helper import (
    ExternalDataInfo,
    _get_all_tensors,
    convert_model_to_external_data,
    uses_external_data,
)

from ortweb._onnxproto import parse_model
from ortweb.testing import run_in_browser

MODEL = "model.onnx"
DATA = "model.onnx.data"


def _graph_model() -> onnx.ModelProto:
    """``y = MatMul(MatMul(x + s, W1) + b, W2) + c``, W1 2 MiB, c a Constant."""
    rng = np.random.default_rng(0)
    w1 = rng.standard_normal((4, 131072), dtype=np.float32) * 0.1  # 2 MiB
    b = rng.standard_normal((131072,), dtype=np.float32) * 0.1
    w2 = rng.standard_normal((131072, 8), dtype=np.float32) * 0.01  # 4 MiB
    s = np.arange(4, dtype=np.float32)  # small: stays inside model.onnx
    c = rng.standard_normal((64, 8), dtype=np.float32)  # 2 KiB: the Constant goes external
    nodes = [
        helper.make_node("Add", ["x", "s"], ["xs"]),
        helper.make_node("MatMul", ["xs", "W1"], ["h"]),
        helper.make_node("Add", ["h", "b"], ["hb"]),
        helper.make_node("MatMul", ["hb", "W2"], ["z"]),
        helper.make_node("Constant", [], ["c"], value=numpy_helper.from_array(c, "c")),
        helper.make_node("ReduceMean", ["c"], ["cm"], axes=[0], keepdims=1),
        helper.make_node("Add", ["z", "cm"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes, "external",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 8])],
        [numpy_helper.from_array(a, n) for a, n in ((w1, "W1"), (b, "b"), (w2, "W2"), (s, "s"))],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def _save(folder: Path) -> Path:
    model = _graph_model()
    convert_model_to_external_data(
        model, all_tensors_to_one_file=True, location=DATA, size_threshold=1024,
        convert_attribute=True,
    )
    folder.mkdir(parents=True, exist_ok=True)
    onnx.save_model(model, folder / MODEL)
    return folder / MODEL


def _relocated(model: Path, location: str) -> bytes:
    """``model``'s bytes with every external tensor pointing at ``location`` (onnx
    itself refuses to write a location with ``..``)."""
    proto = onnx.load(str(model), load_external_data=False)
    for t in _get_all_tensors(proto):
        for entry in t.external_data:
            if entry.key == "location":
                entry.value = location
    return proto.SerializeToString()


@pytest.fixture(scope="module")
def saved(tmp_path_factory) -> Path:
    """``model.onnx`` + ``model.onnx.data``, as onnx writes them."""
    return _save(tmp_path_factory.mktemp("ext"))


@pytest.fixture(scope="module")
def x() -> np.ndarray:
    return np.random.default_rng(1).standard_normal((3, 4), dtype=np.float32)


@pytest.fixture(scope="module")
def want(saved, x) -> np.ndarray:
    """Native onnxruntime on the same files (by path: it finds the data beside it)."""
    sess = ort.InferenceSession(str(saved), providers=["CPUExecutionProvider"])
    return sess.run(None, {"x": x})[0]


# -- the reader, on the host -------------------------------------------------------------


def test_reader_lists_every_external_tensor_as_onnx_does(saved):
    proto = onnx.load(str(saved), load_external_data=False)
    expected = []
    for t in _get_all_tensors(proto):
        if uses_external_data(t):
            info = ExternalDataInfo(t)
            expected.append((t.name, info.location, info.offset or 0, info.length))
    assert {e[0] for e in expected} == {"W1", "b", "W2", "c"}  # the Constant's too
    got = parse_model(saved.read_bytes()).external
    assert sorted((t.name, t.location, t.offset, t.length) for t in got) == sorted(expected)
    assert parse_model(saved.read_bytes()).initializer_names == {"W1", "b", "W2", "s"}


def test_reader_computes_a_length_the_model_does_not_write(tmp_path):
    model = onnx.load(str(_save(tmp_path)), load_external_data=False)
    w1 = next(t for t in model.graph.initializer if t.name == "W1")
    entries = [e for e in w1.external_data if e.key != "length"]
    del w1.external_data[:]
    w1.external_data.extend(entries)
    (t,) = [t for t in parse_model(model.SerializeToString()).external if t.name == "W1"]
    assert t.length == 4 * 131072 * 4


def test_reader_of_a_model_without_external_data_lists_none(saved):
    assert parse_model(_graph_model().SerializeToString()).external == []


# -- in the browser ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def in_page(ortweb_module_page, saved) -> str:
    """The model and its data file side by side in the page's file system."""
    put = ortweb_module_page.put_file
    put(f"ext/{DATA}", saved.parent / DATA)
    return put(f"ext/{MODEL}", saved)


@run_in_browser
async def _run(ortweb_page, source, x, providers, external_data=None):
    import ortweb

    if isinstance(source, tuple):  # (path to read as bytes,)
        with open(source[0], "rb") as f:
            source = f.read()
    if isinstance(source, str) and source.startswith("/_files/"):
        import js

        source = js.location.origin + source
    sess = await ortweb.InferenceSession.create(
        source, providers=providers, external_data=external_data
    )
    (y,) = await sess.run_async(None, {"x": x})
    provider = sess.provider
    await sess.close_async()
    return provider, y


@pytest.mark.browser
@pytest.mark.parametrize("provider", ["wasm", pytest.param("webgpu", marks=pytest.mark.webgpu)])
def test_by_path_equals_native(ortweb_page, in_page, x, want, provider):
    got_provider, y = _run(ortweb_page, in_page, x, [provider])
    assert got_provider == provider
    np.testing.assert_allclose(y, want, rtol=1e-3, atol=1e-4)


@pytest.fixture
def served(ortweb_runtime, saved):
    """The two files at URLs of the local server, in a folder of their own."""
    with ortweb_runtime.shared_folder() as (folder, prefix):
        (folder / "m").mkdir()
        for name in (MODEL, DATA):
            (folder / "m" / name).write_bytes((saved.parent / name).read_bytes())
        yield prefix + "m/"


@pytest.mark.browser
def test_by_url_equals_native(ortweb_page, served, x, want):
    got_provider, y = _run(ortweb_page, served + MODEL, x, ["wasm"])
    assert got_provider == "wasm"
    np.testing.assert_allclose(y, want, rtol=1e-3, atol=1e-4)


@pytest.mark.browser
def test_by_bytes_with_the_mapping_equals_native(ortweb_page, in_page, saved, x, want):
    data_path = in_page.rsplit("/", 1)[0] + "/" + DATA
    _, y = _run(ortweb_page, (in_page,), x, ["wasm"], {DATA: (saved.parent / DATA).read_bytes()})
    np.testing.assert_allclose(y, want, rtol=1e-3, atol=1e-4)
    _, y = _run(ortweb_page, (in_page,), x, ["wasm"], {DATA: data_path})  # a path in the page
    np.testing.assert_allclose(y, want, rtol=1e-3, atol=1e-4)


@run_in_browser
def _absolute(ortweb_page, path):
    import js

    return js.location.origin + path


@pytest.mark.browser
def test_by_bytes_with_a_url_in_the_mapping(ortweb_page, in_page, served, x, want):
    # The URL is made absolute in the page: the mapping's value goes to ORT-web as is.
    url = _absolute(ortweb_page, served + DATA)
    _, y = _run(ortweb_page, (in_page,), x, ["wasm"], {DATA: url})
    np.testing.assert_allclose(y, want, rtol=1e-3, atol=1e-4)


@run_in_browser
async def _refused_then_good(ortweb_page, source, good, x, external_data=None):
    """Create a session that must fail, then a good one on the same page."""
    import ortweb

    if isinstance(source, tuple):
        with open(source[0], "rb") as f:
            source = f.read()
    if isinstance(source, str) and source.startswith("/_files/"):
        import js

        source = js.location.origin + source
    try:
        await ortweb.InferenceSession.create(source, providers=["wasm"],
                                             external_data=external_data)
    except ortweb.OrtWebError as exc:
        outcome = (type(exc).__name__, str(exc))
    else:
        outcome = ("no error", "")
    sess = await ortweb.InferenceSession.create(good, providers=["wasm"])
    (y,) = await sess.run_async(None, {"x": x})
    await sess.close_async()
    return outcome, y


def _put_variant(page, folder: str, model: Path | bytes, data: bytes | None) -> str:
    if data is not None:
        page.put_file(f"{folder}/{DATA}", data)
    return page.put_file(f"{folder}/{MODEL}", model)


@pytest.mark.browser
def test_missing_data_file_is_refused_by_name(ortweb_page, in_page, saved, x, want):
    lone = _put_variant(ortweb_page, "lone", saved, None)
    (cls, msg), y = _refused_then_good(ortweb_page, lone, in_page, x)
    assert cls == "NoSuchFile", msg
    for words in ("/home/pyodide/lone/model.onnx.data", "not found", "'W1'", "external_data"):
        assert words in msg, msg
    np.testing.assert_allclose(y, want, rtol=1e-3, atol=1e-4)


@pytest.mark.browser
def test_truncated_data_file_is_refused_with_sizes(ortweb_page, in_page, saved, x, want):
    data = (saved.parent / DATA).read_bytes()
    short = _put_variant(ortweb_page, "short", saved, data[: len(data) - 100])
    (cls, msg), y = _refused_then_good(ortweb_page, short, in_page, x)
    assert cls == "InvalidGraph", msg
    need = len(data)  # the last tensor ends where the file does
    for words in ("/home/pyodide/short/model.onnx.data", "too short", str(need),
                  str(need - 100)):
        assert words in msg, msg
    np.testing.assert_allclose(y, want, rtol=1e-3, atol=1e-4)
    # Bytes that are too short are refused the same way, named by their key.
    (cls, msg), _ = _refused_then_good(ortweb_page, (in_page,), in_page, x,
                                       {DATA: data[:1000]})
    assert cls == "InvalidGraph" and "external_data['model.onnx.data']" in msg, msg
    assert "'W1'" in msg and "1000" in msg, msg


@pytest.mark.browser
@pytest.mark.parametrize("location", ["../" + DATA, "/home/pyodide/up/" + DATA])
def test_location_leaving_the_folder_is_refused(ortweb_page, in_page, saved, x, want, location):
    ortweb_page.put_file(f"up/{DATA}", saved.parent / DATA)  # where the location points
    page_path = _put_variant(ortweb_page, "up/inner", _relocated(saved, location), None)
    (cls, msg), y = _refused_then_good(ortweb_page, page_path, in_page, x)
    assert cls == "InvalidGraph", msg
    why = "'..'" if location.startswith("..") else "an absolute path"
    for words in (repr(location), why, "model's folder"):
        assert words in msg, msg
    np.testing.assert_allclose(y, want, rtol=1e-3, atol=1e-4)


@pytest.mark.browser
def test_bytes_without_the_mapping_name_what_is_needed(ortweb_page, in_page, x, want):
    (cls, msg), y = _refused_then_good(ortweb_page, (in_page,), in_page, x)
    assert cls == "NoSuchFile", msg
    for words in ("given as bytes", "'model.onnx.data'", "external_data={'model.onnx.data'",
                  "'W1'"):
        assert words in msg, msg
    np.testing.assert_allclose(y, want, rtol=1e-3, atol=1e-4)
    (cls, msg), _ = _refused_then_good(ortweb_page, (in_page,), in_page, x,
                                       {DATA: b"", "other.bin": b""})
    assert cls == "InvalidArgument" and "'other.bin'" in msg and DATA in msg, msg


@pytest.mark.browser
def test_missing_file_at_a_url_is_refused_by_name(ortweb_runtime, ortweb_page, in_page, saved,
                                                  x, want):
    with ortweb_runtime.shared_folder() as (folder, prefix):
        (folder / MODEL).write_bytes(saved.read_bytes())
        (cls, msg), y = _refused_then_good(ortweb_page, prefix + MODEL, in_page, x)
    assert cls == "NoSuchFile", msg
    assert prefix + DATA in msg and "HTTP 404" in msg and "'W1'" in msg, msg
    np.testing.assert_allclose(y, want, rtol=1e-3, atol=1e-4)


@run_in_browser
def _drop_in(ortweb_page, path, x, data):
    import onnxruntime

    with open(path, "rb") as f:
        model = f.read()
    sess = onnxruntime.InferenceSession(model, providers=["CPUExecutionProvider"],
                                        external_data={"model.onnx.data": data})
    return sess.run(None, {"x": x})[0]


@pytest.mark.browser
def test_drop_in_onnxruntime_passes_external_data_through(ortweb_page, in_page, saved, x,
                                                          want):
    y = _drop_in(ortweb_page, in_page, x, (saved.parent / DATA).read_bytes())
    np.testing.assert_allclose(y, want, rtol=1e-3, atol=1e-4)


@run_in_browser
def _drop_in_from_memory(ortweb_page, path, x, data):
    import numpy as np
    import onnxruntime

    with open(path, "rb") as f:
        model = f.read()
    so = onnxruntime.SessionOptions()
    buffer = np.frombuffer(data + b"tail", np.uint8)  # only `length` bytes are the file
    so.add_external_initializers_from_files_in_memory(["model.onnx.data"], [buffer], [len(data)])
    sess = onnxruntime.InferenceSession(model, so, providers=["CPUExecutionProvider"])
    return sess.run(None, {"x": x})[0]


@pytest.mark.browser
def test_drop_in_takes_data_files_from_memory_as_native_does(ortweb_page, in_page, saved, x):
    data = (saved.parent / DATA).read_bytes()
    so = ort.SessionOptions()
    so.add_external_initializers_from_files_in_memory(
        [DATA], [np.frombuffer(data, np.uint8)], [len(data)])
    native = ort.InferenceSession(saved.read_bytes(), so, providers=["CPUExecutionProvider"])
    want = native.run(None, {"x": x})[0]
    np.testing.assert_allclose(_drop_in_from_memory(ortweb_page, in_page, x, data), want,
                               rtol=1e-3, atol=1e-4)


@pytest.mark.browser
def test_cli_run_compare_native_carries_the_data_file(saved, tmp_path):
    inputs = tmp_path / "x.npz"
    np.savez(inputs, x=np.ones((2, 4), np.float32))
    done = subprocess.run(
        [sys.executable, "-m", "ortweb.cli", "run", str(saved), "-i", str(inputs),
         "--providers", "wasm", "--compare-native", "--json"],
        capture_output=True, text=True, timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert report["ok"] and [c["name"] for c in report["compare_native"]] == ["y"], report
    # Without its data file the command stops before any page, naming the file.
    lone = tmp_path / "lone"
    lone.mkdir()
    (lone / MODEL).write_bytes(saved.read_bytes())
    done = subprocess.run(
        [sys.executable, "-m", "ortweb.cli", "run", str(lone / MODEL)],
        capture_output=True, text=True, timeout=600,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert str(lone / DATA) in done.stderr and "'W1'" in done.stderr, done.stderr


# -- ortweb site ----------------------------------------------------------------------------

SITE_APP = '''\
import json
import os

import numpy as np

import ortweb

x = np.array(json.loads(os.environ.get("X", "[[0.5, -1.0, 2.0, 0.25]]")), np.float32)
print("FILES", sorted(os.listdir(".")))
for source in (os.environ["ORTWEB_MODEL"], os.environ["ORTWEB_MODEL_URL"]):
    sess = await ortweb.InferenceSession.create(source, providers=["wasm"])
    (y,) = await sess.run_async(None, {"x": x})
    print("RESULT", json.dumps(y.tolist()))
    await sess.close_async()
'''


@pytest.mark.browser
def test_site_ships_and_verifies_the_data_file(ortweb_runtime, saved, tmp_path):
    from ortweb.host.build.site import build_site
    from ortweb.host.serve import StaticServer
    from ortweb.host.sitepage import SiteContext, SiteFailure

    (tmp_path / "app.py").write_text(SITE_APP)
    site = tmp_path / "site"
    build_site(saved, tmp_path / "app.py", site, providers=["wasm"])
    data = (saved.parent / DATA).read_bytes()
    manifest = json.loads((site / "ortweb-manifest.json").read_text())
    import hashlib

    from ortweb.host.build.site_hashed import by_name, located

    entry = by_name(manifest["files"])[f"app/{DATA}"]
    assert {k: entry[k] for k in ("size", "sha256", "first_visit")} == {
        "size": len(data), "sha256": hashlib.sha256(data).hexdigest(), "first_visit": True}
    sess = ort.InferenceSession(str(saved), providers=["CPUExecutionProvider"])
    want = sess.run(None, {"x": np.array([[0.5, -1.0, 2.0, 0.25]], np.float32)})[0]
    browser = ortweb_runtime.browser
    with StaticServer(site) as server:
        with SiteContext(browser, server.url) as ctx, ctx.open(server.url) as page:
            out = page.output()
            rows = page.progress()
            assert not ctx.blocked
        # The page's download rows still show the model and its data file, which the
        # script also loads by URL (ortweb's fetch is answered by the site's loader).
        for name in (MODEL, DATA):
            (row,) = [r for url, r in rows.items() if url.endswith(f"app/{name}")]
            assert row["state"] in ("done", "cached") and row["loaded"] == row["total"], rows
        assert f"FILES ['app.py', '{MODEL}', '{DATA}']" in out, out
        results = [json.loads(line.split(" ", 1)[1]) for line in out.splitlines()
                   if line.startswith("RESULT ")]
        assert len(results) == 2, out  # by path, by URL
        for got in results:
            np.testing.assert_allclose(np.array(got, np.float32), want, rtol=1e-3, atol=1e-4)
        # A data file changed after `ortweb site` wrote it stops the page, named.
        target = site / located(manifest["files"], f"app/{DATA}")
        target.write_bytes(data[:-1] + bytes([data[-1] ^ 1]))
        with SiteContext(browser, server.url) as ctx:
            with pytest.raises(SiteFailure, match=rf"app/{DATA} does not match the site's "
                                                  "manifest"):
                ctx.open(server.url, timeout=120)
            assert not ctx.blocked


def test_site_refuses_a_model_without_its_data_file(saved, tmp_path):
    from ortweb.host.build.site import SiteError, build_site

    (tmp_path / "app.py").write_text(SITE_APP)
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / MODEL).write_bytes(saved.read_bytes())
    with pytest.raises(SiteError, match=r"external data file .*model\.onnx\.data not found.*'W1'"):
        build_site(tmp_path / "m" / MODEL, tmp_path / "app.py", tmp_path / "site",
                   providers=["wasm"])
