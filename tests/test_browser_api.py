"""The Python API inside Pyodide: errors, validation, sync façade, lifetime, isolation."""

from __future__ import annotations

import numpy as np
import pytest

from ortweb.host import samples
from ortweb.host.browser import PythonFailure
from ortweb.host.native import run_native

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def models(put_file):
    return {
        "sym": put_file("sym.onnx", samples.symbolic_dims_model()),
        "two": put_file("two.onnx", samples.two_outputs_model()),
        "str": put_file("str.onnx", samples.identity_model("tensor(string)", [2])),
        "i64": put_file("i64.onnx", samples.int64_model()),
        "junk": put_file("junk.onnx", b"this is not an onnx model at all"),
        "truncated": put_file("truncated.onnx", samples.mlp_model()[:200]),
    }


# Each bad feed, the exception class and the words its message must contain.
BAD_FEEDS = {
    "unknown_name": ('{"x": x, "z": z, "w": x}', "InvalidArgument", ["'w'", "'x'", "'z'"]),
    "missing": ('{"x": x}', "InvalidArgument", ["missing", "'z'", "tensor(float)"]),
    "none": ('{"x": None, "z": z}', "InvalidArgument", ["'x'", "None", "float32"]),
    "list": ('{"x": x.tolist(), "z": z}', "InvalidArgument", ["'x'", "list", "numpy.asarray"]),
    "not_a_dict": ("[x, z]", "InvalidArgument", ["dict", "list"]),
    "wrong_dtype": ('{"x": x.astype(np.float64), "z": z}', "InvalidArgument",
                    ["'x'", "float32", "float64"]),
    "wrong_rank": ('{"x": x[None], "z": z}', "InvalidArgument", ["'x'", "rank 2", "rank 3"]),
    "wrong_fixed_dim": ('{"x": np.ones((2, 5), np.float32), "z": z}', "InvalidArgument",
                        ["'x'", "dimension 1", "4", "5"]),
    "inconsistent_symbolic": ('{"x": x, "z": np.ones((3, 3), np.float32)}', "InvalidArgument",
                              ["'z'", "'batch'", "'x'", "2", "3"]),
    "int_key": ('{0: x, "z": z}', "InvalidArgument", ["str", "0"]),
}


def test_bad_feeds_raise_clear_errors_and_session_survives(page, models):
    code = f"""
import json, numpy as np, ortweb
sess = await ortweb.InferenceSession.create({models['sym']!r}, providers=["wasm"])
x = np.ones((2, 4), np.float32)
z = np.ones((2, 3), np.float32)
cases = {{{", ".join(f"{k!r}: lambda: {v[0]}" for k, v in BAD_FEEDS.items())}}}
out = {{}}
for name, make in cases.items():
    try:
        await sess.run_async(None, make())
        out[name] = ["no error", ""]
    except ortweb.OrtWebError as exc:
        out[name] = [type(exc).__name__, str(exc)]
    good = await sess.run_async(None, {{"x": x, "z": z}})
    out[name].append(good[0].tolist())
await sess.close_async()
json.dumps(out)
"""
    out = page.run_json(code)
    want = run_native(samples.symbolic_dims_model(),
                      {"x": np.ones((2, 4), np.float32), "z": np.ones((2, 3), np.float32)})["y"]
    for name, (_, cls, words) in BAD_FEEDS.items():
        got_cls, message, after = out[name]
        assert got_cls == cls, (name, got_cls, message)
        for word in words:
            assert word in message, (name, word, message)
        np.testing.assert_allclose(after, want, rtol=1e-5, err_msg=f"run after {name}")


def test_output_names_order_and_errors(page, models):
    out = page.run_json(f"""
import json, numpy as np, ortweb
sess = await ortweb.InferenceSession.create({models['two']!r}, providers=["wasm"])
x = np.array([[1, -2], [3, 4]], np.float32)
a = await sess.run_async(["negated", "double"], {{"x": x}})
b = await sess.run_async(["double"], {{"x": x}})
try:
    await sess.run_async(["nope"], {{"x": x}})
    err = ""
except ortweb.InvalidArgument as exc:
    err = str(exc)
json.dumps({{"a": [v.tolist() for v in a], "b": [v.tolist() for v in b], "err": err}})
""")
    assert out["a"] == [[[-1, 2], [-3, -4]], [[2, -4], [6, 8]]]
    assert out["b"] == [[[2, -4], [6, 8]]]
    assert "'nope'" in out["err"] and "double" in out["err"]


def test_strings_with_nul_are_refused(page, models):
    out = page.run_json(f"""
import json, numpy as np, ortweb
sess = await ortweb.InferenceSession.create({models['str']!r}, providers=["wasm"])
try:
    await sess.run_async(None, {{"x": np.array(["a\\x00b", "c"], dtype=object)}})
    err = ""
except ortweb.InvalidArgument as exc:
    err = str(exc)
ok = await sess.run_async(None, {{"x": np.array(["a", "é"], dtype=object)}})
json.dumps({{"err": err, "ok": ok[0].tolist()}})
""")
    assert "NUL" in out["err"] and "'x'" in out["err"]
    assert out["ok"] == ["a", "é"]


def test_metadata(page, models):
    out = page.run_json(f"""
import json, ortweb
sess = await ortweb.InferenceSession.create({models['i64']!r}, providers=["wasm"])
r = {{"inputs": [[a.name, a.type, a.shape] for a in sess.get_inputs()],
     "outputs": [[a.name, a.type, a.shape] for a in sess.get_outputs()],
     "providers": sess.get_providers(), "provider": sess.provider}}
await sess.close_async()
json.dumps(r)
""")
    assert out["inputs"] == [["ids", "tensor(int64)", ["n"]], ["table", "tensor(float)", [10, 3]]]
    assert out["outputs"][1] == ["argmax", "tensor(int64)", ["n"]]
    assert out["providers"] == ["wasm"] and out["provider"] == "wasm"


@pytest.mark.parametrize(
    ("source", "cls", "words"),
    [
        ("'does/not/exist.onnx'", "NoSuchFile", ["does/not/exist.onnx", "not found"]),
        ("MODELS['junk']", "InvalidGraph", ["create session"]),
        ("MODELS['truncated']", "InvalidGraph", ["create session"]),
        ("b''", "InvalidArgument", ["empty"]),
        ("12", "InvalidArgument", ["path_or_bytes", "int"]),
        ("js.location.origin + '/no-such-model.onnx'", "NoSuchFile", ["404"]),
    ],
    ids=["missing-path", "not-onnx", "truncated", "empty-bytes", "wrong-type", "url-404"],
)
def test_model_loading_errors(page, models, source, cls, words):
    out = page.run_json(f"""
import json, js, ortweb
MODELS = {models!r}
try:
    await ortweb.InferenceSession.create({source}, providers=["wasm"])
    r = ["no error", ""]
except ortweb.OrtWebError as exc:
    r = [type(exc).__name__, str(exc)]
json.dumps(r)
""")
    assert out[0] == cls, out
    for word in words:
        assert word in out[1], out


def test_model_from_url_and_bytes(page, models, runtime):
    with runtime.shared_folder() as (folder, prefix):
        (folder / "m.onnx").write_bytes(samples.two_outputs_model())
        out = page.run_json(f"""
import json, js, numpy as np, ortweb
x = np.eye(2, dtype=np.float32)
s1 = await ortweb.InferenceSession.create(js.location.origin + {prefix + 'm.onnx'!r})
s2 = await ortweb.InferenceSession.create(open({models['two']!r}, 'rb').read(), providers="wasm")
r = [(await s1.run_async(["double"], {{"x": x}}))[0].tolist(),
     (await s2.run_async(["double"], {{"x": x}}))[0].tolist()]
for s in (s1, s2):
    await s.close_async()
json.dumps(r)
""")
    assert out == [[[2, 0], [0, 2]], [[2, 0], [0, 2]]]


def test_close_twice_and_use_after_close(page, models):
    out = page.run_json(f"""
import json, numpy as np, ortweb
before = ortweb._bridge.stats()["sessions"]
sess = await ortweb.InferenceSession.create({models['two']!r}, providers=["wasm"])
await sess.close_async()
await sess.close_async()
sess.close()
try:
    await sess.run_async(None, {{"x": np.eye(2, dtype=np.float32)}})
    r = "no error"
except ortweb.SessionClosed as exc:
    r = str(exc)
with ortweb.InferenceSession({models['two']!r}, providers=["wasm"]) as s2:
    y = s2.run(None, {{"x": np.eye(2, dtype=np.float32)}})[1].tolist()
json.dumps([r, y, s2.closed, ortweb._bridge.stats()["sessions"] - before])
""")
    assert "closed" in out[0]
    assert out[1] == [[-1, 0], [0, -1]]
    assert out[2] is True
    assert out[3] == 0, "sessions leaked in the bridge"


def test_forgotten_session_is_released_when_collected(page, models):
    out = page.run_json(f"""
import asyncio, gc, json, ortweb
before = ortweb._bridge.stats()["sessions"]
sess = await ortweb.InferenceSession.create({models['two']!r}, providers=["wasm"])
during = ortweb._bridge.stats()["sessions"] - before
del sess
gc.collect()
for _ in range(50):
    await asyncio.sleep(0.01)
    if ortweb._bridge.stats()["sessions"] == before:
        break
json.dumps([during, ortweb._bridge.stats()["sessions"] - before])
""")
    assert out == [1, 0]


def test_unknown_provider_and_provider_aliases(page, models):
    out = page.run_json(f"""
import json, ortweb
r = []
try:
    await ortweb.InferenceSession.create({models['two']!r}, providers=["cuda"])
except ortweb.InvalidArgument as exc:
    r.append(str(exc))
s = await ortweb.InferenceSession.create({models['two']!r}, providers=["CPUExecutionProvider"])
r.append(s.provider)
await s.close_async()
json.dumps(r)
""")
    assert "'cuda'" in out[0] and "webgpu" in out[0]
    assert out[1] == "wasm"


def test_sync_api_through_run_python_async(page, models):
    out = page.run_json(f"""
import json, numpy as np, ortweb
sess = ortweb.InferenceSession({models['two']!r}, providers=["wasm"])
y = sess.run(["double"], {{"x": np.ones((2, 2), np.float32)}})[0]
providers = ortweb.get_available_providers()
sess.close()
json.dumps([y.tolist(), providers])
""")
    assert out[0] == [[2, 2], [2, 2]]
    assert out[1][-1] == "wasm"


def test_sync_api_from_run_python_says_what_to_do(page, models):
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


def test_python_exception_reaches_host_with_traceback(page):
    with pytest.raises(PythonFailure) as info:
        page.run_python("def f():\n    raise ValueError('boom')\nf()", filename="snippet.py")
    assert info.value.type == "ValueError"
    assert "snippet.py" in info.value.traceback and "boom" in info.value.traceback


def test_requests_outside_loopback_are_blocked(runtime):
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
def test_default_providers_prefer_webgpu(page, models):
    out = page.run_json(f"""
import json, numpy as np, ortweb
s = await ortweb.InferenceSession.create({models['two']!r})
r = [s.provider, s.get_providers(), await ortweb.get_available_providers_async()]
await s.close_async()
json.dumps(r)
""")
    assert out == ["webgpu", ["webgpu", "wasm"], ["webgpu", "wasm"]]


def test_page_default_providers(runtime, models):
    """The page's default (set by `ortweb exec --providers`) applies when none are named."""
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


def test_errors_from_the_runtime_are_translated(page, models):
    """An error inside ORT (Gather out of range) arrives as an ortweb error with ORT's text."""
    out = page.run_json(f"""
import json, numpy as np, ortweb
sess = await ortweb.InferenceSession.create({models['i64']!r}, providers=["wasm"])
table = np.zeros((10, 3), np.float32)
try:
    await sess.run_async(None, {{"ids": np.array([42], np.int64), "table": table}})
    r = ["no error", "", None]
except ortweb.OrtWebError as exc:
    r = [type(exc).__name__, str(exc), exc.code]
good = await sess.run_async(None, {{"ids": np.array([1], np.int64), "table": table + 1}})
r.append(good[2].tolist())
json.dumps(r)
""")
    assert out[0] in ("OrtRuntimeError", "InvalidArgument"), out
    assert out[1].startswith("run:") and "42" in out[1], out
    assert out[3] == [2]
