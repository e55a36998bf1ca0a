"""The Python API inside Pyodide: errors, validation, sync façade, lifetime, isolation.

Most tests are written with ``@run_in_browser`` (ortweb.testing): the body runs in the
page, fixtures such as ``models`` (paths in the page) and native results come in as
arguments.
"""

from __future__ import annotations

import numpy as np
import pytest

from ortweb.host.browser import PythonFailure
from ortweb.host.native import run_native
from ortweb.testing import run_in_browser, samples

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def models(ortweb_module_page):
    put_file = ortweb_module_page.put_file
    return {
        "sym": put_file("sym.onnx", samples.symbolic_dims_model()),
        "two": put_file("two.onnx", samples.two_outputs_model()),
        "str": put_file("str.onnx", samples.identity_model("tensor(string)", [2])),
        "i64": put_file("i64.onnx", samples.int64_model()),
        "junk": put_file("junk.onnx", b"this is not an onnx model at all"),
        "truncated": put_file("truncated.onnx", samples.mlp_model()[:200]),
    }


@pytest.fixture(scope="module")
def sym_want() -> np.ndarray:
    """Native onnxruntime's output for the good feed of the symbolic-dims model."""
    feeds = {"x": np.ones((2, 4), np.float32), "z": np.ones((2, 3), np.float32)}
    return run_native(samples.symbolic_dims_model(), feeds)["y"]


# Each bad feed, the exception class and the words its message must contain.
BAD_FEEDS = {
    "unknown_name": ("InvalidArgument", ["'w'", "'x'", "'z'"]),
    "missing": ("InvalidArgument", ["missing", "'z'", "tensor(float)"]),
    "none": ("InvalidArgument", ["'x'", "None", "float32"]),
    "tuple": ("InvalidArgument", ["'x'", "tuple", "numpy.asarray"]),
    "ragged_list": ("InvalidArgument", ["'x'", "Could not create tensor"]),
    "not_a_dict": ("InvalidArgument", ["dict", "list"]),
    "wrong_dtype": ("InvalidArgument", ["'x'", "float32", "float64"]),
    "wrong_rank": ("InvalidArgument", ["'x'", "rank 2", "rank 3"]),
    "wrong_fixed_dim": ("InvalidArgument", ["'x'", "dimension 1", "4", "5"]),
    # Native accepts feeds whose symbolic dims disagree, so ortweb does too: the
    # model's Add then fails inside the runtime, and the session survives that.
    "inconsistent_symbolic": ("OrtRuntimeError", ["broadcast", "2 by 3"]),
    "int_key": ("InvalidArgument", ["str", "0"]),
}


@pytest.mark.parametrize(("case", "cls", "words"),
                         [(k, *v) for k, v in BAD_FEEDS.items()], ids=list(BAD_FEEDS))
@run_in_browser
async def test_bad_feeds_raise_clear_errors_and_session_survives(
    ortweb_page, models, sym_want, case, cls, words
):
    import ortweb

    sess = await ortweb.InferenceSession.create(models["sym"], providers=["wasm"])
    x = np.ones((2, 4), np.float32)
    z = np.ones((2, 3), np.float32)
    feed = {
        "unknown_name": lambda: {"x": x, "z": z, "w": x},
        "missing": lambda: {"x": x},
        "none": lambda: {"x": None, "z": z},
        "tuple": lambda: {"x": tuple(x.tolist()), "z": z},
        "ragged_list": lambda: {"x": [[1.0], [1.0, 2.0]], "z": z},
        "not_a_dict": lambda: [x, z],
        "wrong_dtype": lambda: {"x": x.astype(np.float64), "z": z},
        "wrong_rank": lambda: {"x": x[None], "z": z},
        "wrong_fixed_dim": lambda: {"x": np.ones((2, 5), np.float32), "z": z},
        "inconsistent_symbolic": lambda: {"x": x, "z": np.ones((3, 3), np.float32)},
        "int_key": lambda: {0: x, "z": z},
    }[case]()
    error = None
    try:
        await sess.run_async(None, feed)
    except ortweb.OrtWebError as exc:
        error = exc
    assert type(error).__name__ == cls
    for word in words:
        assert word in str(error)
    (good,) = await sess.run_async(None, {"x": x, "z": z})
    np.testing.assert_allclose(good, sym_want, rtol=1e-5)
    await sess.close_async()


@run_in_browser
async def test_output_names_order_and_errors(ortweb_page, models):
    import ortweb

    sess = await ortweb.InferenceSession.create(models["two"], providers=["wasm"])
    x = np.array([[1, -2], [3, 4]], np.float32)
    a = await sess.run_async(["negated", "double"], {"x": x})
    b = await sess.run_async(["double"], {"x": x})
    assert [v.tolist() for v in a] == [[[-1, 2], [-3, -4]], [[2, -4], [6, 8]]]
    assert [v.tolist() for v in b] == [[[2, -4], [6, 8]]]
    try:
        await sess.run_async(["nope"], {"x": x})
        message = "no error"
    except ortweb.InvalidArgument as exc:
        message = str(exc)
    assert "'nope'" in message and "double" in message
    await sess.close_async()


@run_in_browser
async def test_strings_with_nul_are_refused(ortweb_page, models):
    import ortweb

    sess = await ortweb.InferenceSession.create(models["str"], providers=["wasm"])
    try:
        await sess.run_async(None, {"x": np.array(["a\x00b", "c"], dtype=object)})
        message = "no error"
    except ortweb.InvalidArgument as exc:
        message = str(exc)
    assert "NUL" in message and "'x'" in message
    (ok,) = await sess.run_async(None, {"x": np.array(["a", "é"], dtype=object)})
    assert ok.tolist() == ["a", "é"]


@run_in_browser
async def test_metadata(ortweb_page, models):
    import ortweb

    sess = await ortweb.InferenceSession.create(models["i64"], providers=["wasm"])
    inputs = [[a.name, a.type, a.shape] for a in sess.get_inputs()]
    outputs = [[a.name, a.type, a.shape] for a in sess.get_outputs()]
    assert inputs == [["ids", "tensor(int64)", ["n"]], ["table", "tensor(float)", [10, 3]]]
    assert outputs[1] == ["argmax", "tensor(int64)", ["n"]]
    assert sess.get_providers() == ["wasm"] and sess.provider == "wasm"
    await sess.close_async()


# How each bad model source is made in the page: (kind, value).
_SOURCES = {
    "missing-path": ("value", "does/not/exist.onnx"),
    "not-onnx": ("model", "junk"),
    "truncated": ("model", "truncated"),
    "empty-bytes": ("value", b""),
    "wrong-type": ("value", 12),
    "url-404": ("url", "/no-such-model.onnx"),
}


@pytest.mark.parametrize(
    ("source", "cls", "words"),
    [
        ("missing-path", "NoSuchFile", ["does/not/exist.onnx", "not found"]),
        ("not-onnx", "InvalidGraph", ["create session"]),
        ("truncated", "InvalidGraph", ["create session"]),
        ("empty-bytes", "InvalidArgument", ["empty"]),
        ("wrong-type", "InvalidArgument", ["path_or_bytes", "int"]),
        ("url-404", "NoSuchFile", ["404"]),
    ],
    ids=list(_SOURCES),
)
def test_model_loading_errors(ortweb_page, models, source, cls, words):
    got_cls, message = _load_error(ortweb_page, models, *_SOURCES[source])
    assert got_cls == cls, message
    for word in words:
        assert word in message


@run_in_browser
async def _load_error(ortweb_page, models, kind, value):
    import js

    import ortweb

    if kind == "model":
        value = models[value]
    elif kind == "url":
        value = js.location.origin + value
    try:
        await ortweb.InferenceSession.create(value, providers=["wasm"])
    except ortweb.OrtWebError as exc:
        return type(exc).__name__, str(exc)
    return "no error", ""


@pytest.fixture
def served_model(ortweb_runtime):
    """The two-outputs model at a URL of the local server."""
    with ortweb_runtime.shared_folder() as (folder, prefix):
        (folder / "m.onnx").write_bytes(samples.two_outputs_model())
        yield prefix + "m.onnx"


@run_in_browser
async def test_model_from_url_and_bytes(ortweb_page, models, served_model):
    import js

    import ortweb

    x = np.eye(2, dtype=np.float32)
    from_url = await ortweb.InferenceSession.create(js.location.origin + served_model)
    with open(models["two"], "rb") as f:
        from_bytes = await ortweb.InferenceSession.create(f.read(), providers="wasm")
    for sess in (from_url, from_bytes):
        (y,) = await sess.run_async(["double"], {"x": x})
        assert y.tolist() == [[2, 0], [0, 2]]
        await sess.close_async()


@run_in_browser
async def test_close_twice_and_use_after_close(ortweb_page, models):
    import ortweb

    before = ortweb._bridge.stats()["sessions"]
    sess = await ortweb.InferenceSession.create(models["two"], providers=["wasm"])
    await sess.close_async()
    await sess.close_async()
    sess.close()
    try:
        await sess.run_async(None, {"x": np.eye(2, dtype=np.float32)})
        message = "no error"
    except ortweb.SessionClosed as exc:
        message = str(exc)
    assert "closed" in message
    with ortweb.InferenceSession(models["two"], providers=["wasm"]) as s2:
        y = s2.run(None, {"x": np.eye(2, dtype=np.float32)})[1]
    assert y.tolist() == [[-1, 0], [0, -1]]
    assert s2.closed is True
    assert ortweb._bridge.stats()["sessions"] == before, "sessions leaked in the bridge"


@run_in_browser
async def test_forgotten_session_is_released_when_collected(ortweb_page, models):
    import asyncio
    import gc

    import ortweb

    before = ortweb._bridge.stats()["sessions"]
    sess = await ortweb.InferenceSession.create(models["two"], providers=["wasm"])
    assert ortweb._bridge.stats()["sessions"] - before == 1
    del sess
    gc.collect()
    for _ in range(50):
        await asyncio.sleep(0.01)
        if ortweb._bridge.stats()["sessions"] == before:
            break
    assert ortweb._bridge.stats()["sessions"] == before


@run_in_browser
async def test_unknown_provider_and_provider_aliases(ortweb_page, models):
    import ortweb

    try:
        await ortweb.InferenceSession.create(models["two"], providers=["cuda"])
        message = "no error"
    except ortweb.InvalidArgument as exc:
        message = str(exc)
    assert "'cuda'" in message and "webgpu" in message
    sess = await ortweb.InferenceSession.create(models["two"], providers=["CPUExecutionProvider"])
    assert sess.provider == "wasm"
    await sess.close_async()


@run_in_browser
def test_sync_api_through_run_python_async(ortweb_page, models):
    import ortweb

    sess = ortweb.InferenceSession(models["two"], providers=["wasm"])
    (y,) = sess.run(["double"], {"x": np.ones((2, 2), np.float32)})
    assert y.tolist() == [[2, 2], [2, 2]]
    assert "wasm" in ortweb.get_available_providers()
    sess.close()


def test_sync_api_from_run_python_says_what_to_do(ortweb_module_page, models):
    page = ortweb_module_page.pyodide_page
    message = page.page.evaluate(f"""() => {{
        try {{
            pyodide.runPython(`
import ortweb
try:
    ortweb.InferenceSession({models['two']!r}, providers=["wasm"])
    result = "no error"
except ortweb.SyncUnavailable as exc:
    result = str(exc)
`);
            return pyodide.globals.get('result');
        }} catch (e) {{ return 'JS error: ' + e.message; }}
    }}""")
    assert "runPythonAsync" in message and "await" in message, message


def test_python_exception_reaches_host_with_traceback(ortweb_module_page):
    page = ortweb_module_page.pyodide_page
    with pytest.raises(PythonFailure) as info:
        page.run_python("def f():\n    raise ValueError('boom')\nf()", filename="snippet.py")
    assert info.value.type == "ValueError"
    assert "snippet.py" in info.value.traceback and "boom" in info.value.traceback


def test_requests_outside_loopback_are_blocked(ortweb_runtime):
    runtime = ortweb_runtime
    with runtime.new_page() as p:
        result = p.page.evaluate(
            "() => fetch('http://ortweb-blocked.invalid/probe').then(() => 'sent', e => 'refused')"
        )
        assert result == "refused"
        assert p.blocked_requests == ["http://ortweb-blocked.invalid/probe"]
        # Everything else the page loaded came from the local server.
        others = [u for u in p.capture.requests if u not in p.blocked_requests]
        assert others, "no requests were seen at all"
        assert all(u.startswith(runtime.server.url) for u in others), others


@pytest.mark.webgpu
@run_in_browser
async def test_default_providers_prefer_webgpu(ortweb_page, models):
    import ortweb

    ortweb.set_default_providers(None)  # the rule itself, whatever --ortweb-providers says
    sess = await ortweb.InferenceSession.create(models["two"])
    assert sess.provider == "webgpu"
    assert sess.get_providers() == ["webgpu", "wasm"]
    assert await ortweb.get_available_providers_async() == ["webgpu", "wasm", "tract", "wonnx"]
    await sess.close_async()


def test_page_default_providers(ortweb_runtime, models):
    """The page's default (set by `ortweb exec --providers`) applies when none are named."""
    runtime = ortweb_runtime
    with runtime.new_page(providers=["wasm"]) as p, runtime.shared_folder() as (folder, prefix):
        (folder / "m.onnx").write_bytes(samples.two_outputs_model())
        p.write_file(prefix + "m.onnx", "m.onnx")
        out = p.run_json("""
import json, ortweb
s = await ortweb.InferenceSession.create("m.onnx")
r = [s.provider]
await s.close_async()
ortweb.set_default_providers(["webgpu", "wasm"])
s = await ortweb.InferenceSession.create("m.onnx")
r.append(s.provider in ("webgpu", "wasm"))
await s.close_async()
json.dumps(r)
""")
    assert out == ["wasm", True]


@run_in_browser
async def test_errors_from_the_runtime_are_translated(ortweb_page, models):
    """An error inside ORT (Gather out of range) arrives as an ortweb error with ORT's text."""
    import ortweb

    sess = await ortweb.InferenceSession.create(models["i64"], providers=["wasm"])
    table = np.zeros((10, 3), np.float32)
    error = None
    try:
        await sess.run_async(None, {"ids": np.array([42], np.int64), "table": table})
    except ortweb.OrtWebError as exc:
        error = exc
    assert type(error).__name__ in ("OrtRuntimeError", "InvalidArgument")
    assert str(error).startswith("run:") and "42" in str(error)
    good = await sess.run_async(None, {"ids": np.array([1], np.int64), "table": table + 1})
    assert good[2].tolist() == [2]
    await sess.close_async()


@run_in_browser
def test_invalidate_caches_reads_no_zip_but_those_that_may_change(ortweb_page):
    # Python 3.12 reads a zip's whole listing again on importlib.invalidate_caches(),
    # which every loadPackage calls; the page's boot keeps the standard library's
    # (bridge_js/pyodide_boot.js). A zip of one's own is still read again.
    import importlib
    import json
    import sys
    import tempfile
    import zipfile
    import zipimport

    stdlib = json.__spec__.loader.archive  # type: ignore[union-attr]
    listing = zipimport._zip_directory_cache[stdlib]  # type: ignore[attr-defined]
    own = tempfile.mkdtemp() + "/own.zip"
    with zipfile.ZipFile(own, "w") as archive:
        archive.writestr("ortweb_zip_one.py", "VALUE = 1\n")
    sys.path.append(own)
    try:
        import ortweb_zip_one

        assert ortweb_zip_one.VALUE == 1
        with zipfile.ZipFile(own, "a") as archive:
            archive.writestr("ortweb_zip_two.py", "VALUE = 2\n")
        importlib.invalidate_caches()
        assert zipimport._zip_directory_cache[stdlib] is listing  # type: ignore[attr-defined]
        import ortweb_zip_two

        assert ortweb_zip_two.VALUE == 2
    finally:
        sys.path.remove(own)
