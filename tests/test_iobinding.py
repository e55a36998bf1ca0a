"""IO binding on real WebGPU (SwiftShader): GPU tensors in and out, ownership, chaining.

Each test runs Python inside the page and compares with native onnxruntime on the
host. Every behaviour of ../shared/reference/io-binding-spec.md has a test here.
"""

from __future__ import annotations

import numpy as np
import pytest

from ortweb.host import samples
from ortweb.host.native import run_native
from pagecode import GPU_PRELUDE as PRELUDE

pytestmark = [pytest.mark.browser, pytest.mark.webgpu]

X = np.array([[1.5, -2.0], [3.25, 4.0]], dtype=np.float32)


@pytest.fixture(scope="module")
def models(put_file):
    return {
        "two": put_file("two.onnx", samples.two_outputs_model()),
        "sym": put_file("sym.onnx", samples.symbolic_dims_model()),
        "mlp": put_file("mlp.onnx", samples.mlp_model(n_in=4, n_hidden=8, n_out=4)),
        "f16": put_file("f16.onnx", samples.float16_model()),
    }



def run(page, code):
    return page.run_json(PRELUDE + code)


def test_input_from_user_gpu_buffer(page, models):
    out = run(page, f"""
sess = await ortweb.InferenceSession.create({models['two']!r}, providers=["webgpu"])
buf = gpu_buffer(X)
x = OrtValue.from_gpu_buffer(buf, np.float32, [2, 2])
assert x.location == "gpu-buffer" and x.device_name() == "webgpu" and x.owner == "user"
double, negated = await sess.run_async(None, {{"x": x}})
x.dispose(); x.dispose()
await sess.close_async()
json.dumps([double.tolist(), negated.tolist(), x.is_disposed])
""")
    want = run_native(samples.two_outputs_model(), {"x": X})
    np.testing.assert_array_equal(out[0], want["double"])
    np.testing.assert_array_equal(out[1], want["negated"])
    assert out[2] is True


def test_preferred_output_location_global_and_reading(page, models):
    out = run(page, f"""
sess = await ortweb.InferenceSession.create({models['two']!r}, providers=["webgpu"],
                                            preferred_output_location="gpu-buffer")
double, negated = await sess.run_async(None, {{"x": X}})
info = [type(double).__name__, double.location, double.owner, double.shape(), double.data_type(),
        int(double.gpu_buffer.size) >= 16]
before = ortweb.live_handles()
a = await double.get_data()          # download, value still alive
b = await negated.get_data(release=True)  # download and release
after_release = [double.is_disposed, negated.is_disposed]
c = double.numpy()                   # sync read works too (JSPI)
double.dispose(); double.dispose()
gone = ortweb.live_handles()
try:
    double.numpy(); use_after = "no error"
except ortweb.InvalidArgument as exc:
    use_after = str(exc)
await sess.close_async()
json.dumps([info, a.tolist(), b.tolist(), c.tolist(), after_release, before, gone, use_after])
""")
    info, a, b, c, after_release, before, gone, use_after = out
    assert info == ["OrtValue", "gpu-buffer", "ort", [2, 2], "tensor(float)", True]
    want = run_native(samples.two_outputs_model(), {"x": X})
    np.testing.assert_array_equal(a, want["double"])
    np.testing.assert_array_equal(b, want["negated"])
    np.testing.assert_array_equal(c, want["double"])
    assert after_release == [False, True]
    assert gone["gpu_tensors"] == before["gpu_tensors"] - 2
    assert "disposed" in use_after


def test_preferred_output_location_per_output_mixed(page, models):
    out = run(page, f"""
sess = await ortweb.InferenceSession.create({models['two']!r}, providers=["webgpu"],
                                            preferred_output_location={{"negated": "gpu-buffer"}})
double, negated = await sess.run_async(None, {{"x": X}})
r = [type(double).__name__, type(negated).__name__, negated.location,
     sess.output_location("double"), sess.output_location("negated"),
     double.tolist(), (await negated.get_data(release=True)).tolist()]
bad = await aerror(ortweb.InferenceSession.create({models['two']!r}, providers=["webgpu"],
                                            preferred_output_location={{"nope": "gpu-buffer"}}))
await sess.close_async()
json.dumps(r + [bad])
""")
    assert out[:5] == ["ndarray", "OrtValue", "gpu-buffer", "cpu", "gpu-buffer"]
    np.testing.assert_array_equal(out[5], X * 2)
    np.testing.assert_array_equal(out[6], -X)
    assert out[7][0] == "InvalidArgument" and "'nope'" in out[7][1]


def test_preallocated_gpu_outputs(page, models):
    out = run(page, f"""
sess = await ortweb.InferenceSession.create({models['two']!r}, providers=["webgpu"])
binding = sess.io_binding()
binding.bind_ortvalue_input("x", await OrtValue.ortvalue_from_numpy_async(X, "webgpu"))
target = await OrtValue.ortvalue_from_shape_and_type_async([2, 2], np.float32, "webgpu")
binding.bind_ortvalue_output("double", target)
user_buf = gpu_buffer(np.zeros((2, 2), np.float32))
binding.bind_output("negated", "webgpu", element_type=np.float32, shape=[2, 2], buffer_ptr=user_buf)
await sess.run_with_iobinding_async(binding)
outs = binding.get_outputs()
same = outs[0] is target
vals = await binding.copy_outputs_to_cpu_async()
# The user's buffer really holds the result: read it through a fresh wrapper.
check = OrtValue.from_gpu_buffer(user_buf, np.float32, [2, 2])
direct = (await check.get_data()).tolist()
for v in outs + [check, binding._inputs["x"]]:
    v.dispose()
await sess.close_async()
json.dumps([same, [v.tolist() for v in vals], direct, ortweb.live_handles()["gpu_tensors"]])
""")
    assert out[0] is True
    np.testing.assert_array_equal(out[1][0], X * 2)
    np.testing.assert_array_equal(out[1][1], -X)
    np.testing.assert_array_equal(out[2], -X)


def test_cpu_bindings_and_preallocated_cpu_output(page, models):
    """A pre-allocated CPU output is filled (ORT-web itself returns zeros there)."""
    out = run(page, f"""
sess = await ortweb.InferenceSession.create({models['two']!r}, providers=["webgpu"])
binding = sess.io_binding()
binding.bind_cpu_input("x", X)
target = OrtValue.ortvalue_from_numpy(np.zeros((2, 2), np.float32))
binding.bind_ortvalue_output("double", target)
binding.bind_output("negated", "cpu")
sess.run_with_iobinding(binding)
vals = binding.copy_outputs_to_cpu()
r = [binding.get_outputs()[0] is target, target.numpy().tolist(), [v.tolist() for v in vals]]
binding.clear_binding_outputs()
r.append(await aerror(sess.run_with_iobinding_async(binding)))
await sess.close_async()
json.dumps(r)
""")
    assert out[0] is True
    np.testing.assert_array_equal(out[1], X * 2)
    np.testing.assert_array_equal(out[2][1], -X)
    assert out[3][0] == "InvalidArgument" and "bind_output" in out[3][1]


def test_two_model_gpu_chain(page, models):
    """A's GPU output feeds B with no CPU copy; the answer equals native A then B."""
    x = np.random.default_rng(3).standard_normal((2, 4)).astype(np.float32)
    out = run(page, f"""
x = np.array({x.tolist()!r}, dtype=np.float32)
a = await ortweb.InferenceSession.create({models['mlp']!r}, providers=["webgpu"],
                                         preferred_output_location="gpu-buffer")
b = await ortweb.InferenceSession.create({models['mlp']!r}, providers=["webgpu"])
(mid,) = await a.run_async(None, {{"x": x}})
(final,) = await b.run_async(None, {{"x": mid}})
r = [mid.location, final.tolist()]
mid.dispose()
await a.close_async(); await b.close_async()
json.dumps(r)
""")
    model = samples.mlp_model(n_in=4, n_hidden=8, n_out=4)
    mid = run_native(model, {"x": x})["probabilities"]
    want = run_native(model, {"x": mid})["probabilities"]
    assert out[0] == "gpu-buffer"
    np.testing.assert_allclose(out[1], want, rtol=1e-4, atol=1e-6)


def test_gpu_value_fed_to_wasm_session(page, models):
    out = run(page, f"""
sess = await ortweb.InferenceSession.create({models['two']!r}, providers=["wasm"],
                                            preferred_output_location="gpu-buffer")
x = await OrtValue.ortvalue_from_numpy_async(X, "webgpu")
double, negated = await sess.run_async(None, {{"x": x}})
r = [type(double).__name__, double.location, double.numpy().tolist()]
x.dispose()
await sess.close_async()
json.dumps(r)
""")
    # A wasm session asked for GPU outputs returns CPU OrtValues: same code works.
    assert out[:2] == ["OrtValue", "cpu"]
    np.testing.assert_array_equal(out[2], X * 2)


BAD = {
    "no_storage_usage": ("""
b = gpu_buffer(X, usage=Usage.COPY_DST | Usage.COPY_SRC)
r = error(lambda: OrtValue.from_gpu_buffer(b, np.float32, [2, 2]))
""", "InvalidArgument", ["STORAGE"]),
    "too_small": ("""
b = gpu_buffer(np.zeros(2, np.float32))
r = error(lambda: OrtValue.from_gpu_buffer(b, np.float32, [4, 4]))
""", "InvalidArgument", ["holds 8 bytes", "needs 64"]),
    "other_device": ("""
adapter = await js.navigator.gpu.requestAdapter()
other = await adapter.requestDevice()
v = OrtValue.from_gpu_buffer(gpu_buffer(X, dev=other), np.float32, [2, 2])
r = await aerror(sess.run_async(None, {"x": v}))
v.dispose(); other.destroy()
""", "InvalidArgument", ["input 'x'", "another GPUDevice"]),
    "destroyed": ("""
b = gpu_buffer(X)
v = OrtValue.from_gpu_buffer(b, np.float32, [2, 2])
b.destroy()
r = await aerror(sess.run_async(None, {"x": v}))
v.dispose()
""", "InvalidArgument", ["input 'x'", "destroyed"]),
    "wrong_dtype_value": ("""
v = await OrtValue.ortvalue_from_numpy_async(X.astype(np.int32), "webgpu")
r = await aerror(sess.run_async(None, {"x": v}))
v.dispose()
""", "InvalidArgument", ["'x'", "tensor(float)", "tensor(int32)"]),
    "wrong_rank_value": ("""
v = await OrtValue.ortvalue_from_numpy_async(X.reshape(4), "webgpu")
r = await aerror(sess.run_async(None, {"x": v}))
v.dispose()
""", "InvalidArgument", ["'x'", "rank 2", "rank 1"]),
    "disposed_input": ("""
v = await OrtValue.ortvalue_from_numpy_async(X, "webgpu")
v.dispose()
r = await aerror(sess.run_async(None, {"x": v}))
""", "InvalidArgument", ["'x'", "disposed"]),
    "prealloc_wrong_dims": ("""
bd = sess.io_binding()
t = await OrtValue.ortvalue_from_shape_and_type_async([3, 2], np.float32, "webgpu")
r = error(lambda: bd.bind_ortvalue_output("double", t))
t.dispose()
""", "InvalidArgument", ["output 'double'", "dimension 0 must be 2", "3"]),
    "prealloc_wrong_dtype": ("""
bd = sess.io_binding()
t = await OrtValue.ortvalue_from_shape_and_type_async([2, 2], np.int32, "webgpu")
r = error(lambda: bd.bind_ortvalue_output("double", t))
t.dispose()
""", "InvalidArgument", ["output 'double'", "tensor(float)", "tensor(int32)"]),
    "prealloc_buffer_too_small": ("""
bd = sess.io_binding()
r = error(lambda: bd.bind_output("double", "webgpu", element_type=np.float32, shape=[2, 2],
                                 buffer_ptr=gpu_buffer(np.zeros(2, np.float32))))
""", "InvalidArgument", ["holds 8 bytes", "needs 16"]),
    "double_on_gpu": ("""
r = error(lambda: OrtValue.ortvalue_from_numpy(np.zeros(2), "webgpu"))
""", "InvalidArgument", ["tensor(double)", "WebGPU"]),
    "float16_without_shader_f16": ("""
if "shader-f16" in list(device.features):
    r = ["skip", "adapter has shader-f16"]
else:
    r = await aerror(OrtValue.ortvalue_from_numpy_async(np.zeros(2, np.float16), "webgpu"))
""", "ProviderUnavailable", ["shader-f16"]),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_gpu_bindings_are_refused_and_session_survives(page, models, case):
    code, cls, words = BAD[case]
    out = run(page, f"""
sess = await ortweb.InferenceSession.create({models['two']!r}, providers=["webgpu"])
{code}
good = await sess.run_async(["double"], {{"x": X}})
await sess.close_async()
json.dumps([r, good[0].tolist()])
""")
    got, good = out
    if got[0] == "skip":
        pytest.skip(got[1])
    assert got[0] == cls, got
    for word in words:
        assert word in got[1], (word, got[1])
    np.testing.assert_array_equal(good, X * 2)


def test_error_under_iobinding_recreates_session(page, models):
    """A pre-allocated output whose symbolic dims cannot be checked beforehand: ORT
    fails, ortweb re-creates the session, and the next run works."""
    out = run(page, f"""
sess = await ortweb.InferenceSession.create({models['sym']!r}, providers=["webgpu"])
x = np.ones((2, 4), np.float32); z = np.ones((2, 3), np.float32)
bd = sess.io_binding()
bd.bind_cpu_input("x", x); bd.bind_cpu_input("z", z)
wrong = await OrtValue.ortvalue_from_shape_and_type_async([5, 3], np.float32, "webgpu")
bd.bind_ortvalue_output("y", wrong)
old = sess._handle
r = await aerror(sess.run_with_iobinding_async(bd))
wrong.dispose()
good = await sess.run_async(None, {{"x": x, "z": z}})
r += [sess._handle != old, good[0].tolist(), ortweb.live_handles()["sessions"]]
await sess.close_async()
json.dumps(r)
""")
    cls, message, recreated, good, _ = out
    assert cls != "no error"
    assert "re-created" in message
    assert recreated is True
    want = run_native(samples.symbolic_dims_model(),
                      {"x": np.ones((2, 4), np.float32), "z": np.ones((2, 3), np.float32)})["y"]
    np.testing.assert_allclose(good, want, rtol=1e-5)


def test_user_buffer_survives_session_close(page, models):
    out = run(page, f"""
b = gpu_buffer(X)
sess = await ortweb.InferenceSession.create({models['two']!r}, providers=["webgpu"])
v = OrtValue.from_gpu_buffer(b, np.float32, [2, 2])
await sess.run_async(None, {{"x": v}})
await sess.close_async()
# No WebGPU session is left: the device and the user's buffer must both be alive.
after = (await v.get_data()).tolist()
v.dispose()
again = OrtValue.from_gpu_buffer(b, np.float32, [2, 2])
s2 = await ortweb.InferenceSession.create({models['two']!r}, providers=["webgpu"])
(neg,) = await s2.run_async(["negated"], {{"x": again}})
again.dispose()
await s2.close_async()
json.dumps([after, neg.tolist()])
""")
    np.testing.assert_array_equal(out[0], X)
    np.testing.assert_array_equal(out[1], -X)


def test_thousand_runs_with_gpu_outputs_disposed_do_not_leak(page, models):
    out = run(page, f"""
import gc
sess = await ortweb.InferenceSession.create({models['two']!r}, providers=["webgpu"],
                                            preferred_output_location="gpu-buffer")
x = await OrtValue.ortvalue_from_numpy_async(X, "webgpu")
start = ortweb.live_handles()
for i in range(1000):
    double, negated = await sess.run_async(None, {{"x": x}})
    double.dispose(); negated.dispose()
    if i == 9:
        early = ortweb.live_handles()
end = ortweb.live_handles()
last = (await sess.run_async(["double"], {{"x": x}}))[0]
value = (await last.get_data(release=True)).tolist()
# A forgotten GPU output is released by the garbage collector, and counted.
forgotten, _ = await sess.run_async(None, {{"x": x}})
_.dispose()
del forgotten
gc.collect()
collected = ortweb.live_handles()
x.dispose()
await sess.close_async()
json.dumps([start, early, end, value, collected])
""")
    start, early, end, value, collected = out
    assert start["gpu_tensors"] == early["gpu_tensors"] == end["gpu_tensors"]
    assert start["sessions"] == end["sessions"]
    np.testing.assert_array_equal(value, X * 2)
    assert collected["gpu_tensors"] == end["gpu_tensors"]
    assert collected["finalized"] == end["finalized"] + 1


def test_sync_iobinding_from_exec_style_code(page, models):
    """The whole flow with the synchronous API (JSPI), as a script would write it."""
    out = run(page, f"""
sess = ortweb.InferenceSession({models['two']!r}, providers=["webgpu"],
                               preferred_output_location="gpu-buffer")
dev = ortweb.webgpu_device()
x = OrtValue.ortvalue_from_numpy(X, "webgpu")
binding = sess.io_binding()
binding.bind_ortvalue_input("x", x)
binding.bind_output("double", "webgpu")
binding.bind_output("negated", "cpu")
sess.run_with_iobinding(binding)
double, negated = binding.get_outputs()
r = [double.location, negated.location, double.numpy().tolist(), negated.numpy().tolist(),
     str(dev) == str(device)]
for v in (double, negated, x):
    v.dispose()
sess.close()
json.dumps(r)
""")
    assert out[:2] == ["gpu-buffer", "cpu"]
    np.testing.assert_array_equal(out[2], X * 2)
    np.testing.assert_array_equal(out[3], -X)


def test_iobinding_example_script_through_ortweb_exec(tmp_path):
    """The README's IO binding example, run by `ortweb exec` on WebGPU."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    (tmp_path / "m.onnx").write_bytes(samples.two_outputs_model())
    result = subprocess.run(
        [sys.executable, "-m", "ortweb.cli", "exec",
         str(root / "docs/examples/iobinding_chain.py"),
         "--file", str(tmp_path / "m.onnx"), "--", "m.onnx"],
        capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "first run: gpu-buffer gpu-buffer" in result.stdout
    assert "x * 4 = [[4.0, -8.0], [12.0, 16.0]]" in result.stdout
    assert "-(x * 2) = [[-2.0, 4.0], [-6.0, -8.0]]" in result.stdout
    live = "live: {'sessions': 0, 'cpu_tensors': 0, 'gpu_tensors': 0, 'finalized': 0}"
    assert live in result.stdout
