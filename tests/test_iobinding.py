"""IO binding on real WebGPU (SwiftShader): GPU tensors in and out, ownership, chaining.

The tests' bodies run inside the page (``@run_in_browser``) and compare with native
onnxruntime on the host, whose results come in as fixtures. Every behaviour that
the docs' page "IO binding: tensors that stay on the GPU" (docs/pages/iobinding.md)
describes (inputs
from a user's GPUBuffer, ``preferred_output_location``, pre-allocated outputs,
chaining without a CPU copy, who releases what, the checks before ORT sees a
buffer, re-creating a session after an ORT error) has a test here.
"""

from __future__ import annotations

import numpy as np
import pytest

import ortweb
from ortweb import OrtValue
from ortweb.host.native import run_native
from ortweb.testing import run_in_browser, samples
from pagecode import aerror, error, gpu_buffer, install_in_page, webgpu_device

pytestmark = [pytest.mark.browser, pytest.mark.webgpu]

X = np.array([[1.5, -2.0], [3.25, 4.0]], dtype=np.float32)


@pytest.fixture(scope="module")
def ortweb_module_page(ortweb_module_page):
    return install_in_page(ortweb_module_page)


@pytest.fixture(scope="module")
def models(ortweb_module_page):
    put_file = ortweb_module_page.put_file
    return {
        "two": put_file("two.onnx", samples.two_outputs_model()),
        "sym": put_file("sym.onnx", samples.symbolic_dims_model()),
        "mlp": put_file("mlp.onnx", samples.mlp_model(n_in=4, n_hidden=8, n_out=4)),
        "f16": put_file("f16.onnx", samples.float16_model()),
    }


@pytest.fixture
def x() -> np.ndarray:
    """The input most tests feed to the two-outputs model."""
    return X.copy()


@pytest.fixture(scope="module")
def two_want() -> dict[str, np.ndarray]:
    """Native onnxruntime's outputs of the two-outputs model for ``X``."""
    return run_native(samples.two_outputs_model(), {"x": X})


@run_in_browser
async def test_input_from_user_gpu_buffer(ortweb_page, models, x, two_want):
    device = await webgpu_device()
    sess = await ortweb.InferenceSession.create(models["two"], providers=["webgpu"])
    buf = gpu_buffer(device, x)
    xv = OrtValue.from_gpu_buffer(buf, np.float32, [2, 2])
    assert xv.location == "gpu-buffer" and xv.device_name() == "webgpu" and xv.owner == "user"
    double, negated = await sess.run_async(None, {"x": xv})
    xv.dispose()
    xv.dispose()
    await sess.close_async()
    np.testing.assert_array_equal(double, two_want["double"])
    np.testing.assert_array_equal(negated, two_want["negated"])
    assert xv.is_disposed is True


@run_in_browser
async def test_preferred_output_location_global_and_reading(ortweb_page, models, x, two_want):
    sess = await ortweb.InferenceSession.create(models["two"], providers=["webgpu"],
                                                preferred_output_location="gpu-buffer")
    double, negated = await sess.run_async(None, {"x": x})
    info = [type(double).__name__, double.location, double.owner, double.shape(),
            double.data_type(), int(double.gpu_buffer.size) >= 16]
    before = ortweb.live_handles()
    a = await double.get_data()                # download, value still alive
    b = await negated.get_data(release=True)   # download and release
    after_release = [double.is_disposed, negated.is_disposed]
    c = double.numpy()                         # sync read works too (JSPI)
    double.dispose()
    double.dispose()
    gone = ortweb.live_handles()
    try:
        double.numpy()
        use_after = "no error"
    except ortweb.InvalidArgument as exc:
        use_after = str(exc)
    await sess.close_async()
    assert info == ["OrtValue", "gpu-buffer", "ort", [2, 2], "tensor(float)", True]
    np.testing.assert_array_equal(a, two_want["double"])
    np.testing.assert_array_equal(b, two_want["negated"])
    np.testing.assert_array_equal(c, two_want["double"])
    assert after_release == [False, True]
    assert gone["gpu_tensors"] == before["gpu_tensors"] - 2
    assert "disposed" in use_after


@run_in_browser
async def test_preferred_output_location_per_output_mixed(ortweb_page, models, x):
    sess = await ortweb.InferenceSession.create(
        models["two"], providers=["webgpu"], preferred_output_location={"negated": "gpu-buffer"})
    double, negated = await sess.run_async(None, {"x": x})
    r = [type(double).__name__, type(negated).__name__, negated.location,
         sess.output_location("double"), sess.output_location("negated")]
    negated_data = await negated.get_data(release=True)
    bad = await aerror(ortweb.InferenceSession.create(
        models["two"], providers=["webgpu"], preferred_output_location={"nope": "gpu-buffer"}))
    await sess.close_async()
    assert r == ["ndarray", "OrtValue", "gpu-buffer", "cpu", "gpu-buffer"]
    np.testing.assert_array_equal(double, x * 2)
    np.testing.assert_array_equal(negated_data, -x)
    assert bad[0] == "InvalidArgument" and "'nope'" in bad[1]


@run_in_browser
async def test_preallocated_gpu_outputs(ortweb_page, models, x):
    device = await webgpu_device()
    sess = await ortweb.InferenceSession.create(models["two"], providers=["webgpu"])
    binding = sess.io_binding()
    binding.bind_ortvalue_input("x", await OrtValue.ortvalue_from_numpy_async(x, "webgpu"))
    target = await OrtValue.ortvalue_from_shape_and_type_async([2, 2], np.float32, "webgpu")
    binding.bind_ortvalue_output("double", target)
    user_buf = gpu_buffer(device, np.zeros((2, 2), np.float32))
    binding.bind_output("negated", "webgpu", element_type=np.float32, shape=[2, 2],
                        buffer_ptr=user_buf)
    await sess.run_with_iobinding_async(binding)
    outs = binding.get_outputs()
    same = outs[0] is target
    vals = await binding.copy_outputs_to_cpu_async()
    # The user's buffer really holds the result: read it through a fresh wrapper.
    check = OrtValue.from_gpu_buffer(user_buf, np.float32, [2, 2])
    direct = await check.get_data()
    bound = binding._inputs["x"]
    assert isinstance(bound, OrtValue)  # bound with bind_ortvalue_input
    for v in [*outs, check, bound]:
        v.dispose()
    await sess.close_async()
    assert same is True
    np.testing.assert_array_equal(vals[0], x * 2)
    np.testing.assert_array_equal(vals[1], -x)
    np.testing.assert_array_equal(direct, -x)


@run_in_browser
async def test_cpu_bindings_and_preallocated_cpu_output(ortweb_page, models, x):
    """A pre-allocated CPU output is filled (ORT-web itself returns zeros there)."""
    sess = await ortweb.InferenceSession.create(models["two"], providers=["webgpu"])
    binding = sess.io_binding()
    binding.bind_cpu_input("x", x)
    target = OrtValue.ortvalue_from_numpy(np.zeros((2, 2), np.float32))
    binding.bind_ortvalue_output("double", target)
    binding.bind_output("negated", "cpu")
    sess.run_with_iobinding(binding)
    vals = binding.copy_outputs_to_cpu()
    same = binding.get_outputs()[0] is target
    filled = target.numpy()
    binding.clear_binding_outputs()
    unbound = await aerror(sess.run_with_iobinding_async(binding))
    await sess.close_async()
    assert same is True
    np.testing.assert_array_equal(filled, x * 2)
    np.testing.assert_array_equal(vals[1], -x)
    assert unbound[0] == "InvalidArgument" and "bind_output" in unbound[1]


@pytest.fixture(scope="module")
def chain_feed_and_want() -> tuple[np.ndarray, np.ndarray]:
    """A feed of the MLP, and native onnxruntime's answer for the MLP run twice on it."""
    x = np.random.default_rng(3).standard_normal((2, 4)).astype(np.float32)
    model = samples.mlp_model(n_in=4, n_hidden=8, n_out=4)
    mid = run_native(model, {"x": x})["probabilities"]
    return x, run_native(model, {"x": mid})["probabilities"]


@run_in_browser
async def test_two_model_gpu_chain(ortweb_page, models, chain_feed_and_want):
    """A's GPU output feeds B with no CPU copy; the answer equals native A then B."""
    x, want = chain_feed_and_want
    a = await ortweb.InferenceSession.create(models["mlp"], providers=["webgpu"],
                                             preferred_output_location="gpu-buffer")
    b = await ortweb.InferenceSession.create(models["mlp"], providers=["webgpu"])
    (mid,) = await a.run_async(None, {"x": x})
    (final,) = await b.run_async(None, {"x": mid})
    location = mid.location
    mid.dispose()
    await a.close_async()
    await b.close_async()
    assert location == "gpu-buffer"
    np.testing.assert_allclose(final, want, rtol=1e-4, atol=1e-6)


@run_in_browser
async def test_gpu_value_fed_to_wasm_session(ortweb_page, models, x):
    sess = await ortweb.InferenceSession.create(models["two"], providers=["wasm"],
                                                preferred_output_location="gpu-buffer")
    xv = await OrtValue.ortvalue_from_numpy_async(x, "webgpu")
    double, _negated = await sess.run_async(None, {"x": xv})
    r = [type(double).__name__, double.location]
    value = double.numpy()
    xv.dispose()
    await sess.close_async()
    # A wasm session asked for GPU outputs returns CPU OrtValues: same code works.
    assert r == ["OrtValue", "cpu"]
    np.testing.assert_array_equal(value, x * 2)


# Each bad binding (made in _bad_gpu_binding), the exception class and the words its
# message must contain.
BAD = {
    "no_storage_usage": ("InvalidArgument", ["STORAGE"]),
    "too_small": ("InvalidArgument", ["holds 8 bytes", "needs 64"]),
    "other_device": ("InvalidArgument", ["input 'x'", "another GPUDevice"]),
    "destroyed": ("InvalidArgument", ["input 'x'", "destroyed"]),
    "wrong_dtype_value": ("InvalidArgument", ["'x'", "tensor(float)", "tensor(int32)"]),
    "wrong_rank_value": ("InvalidArgument", ["'x'", "rank 2", "rank 1"]),
    "disposed_input": ("InvalidArgument", ["'x'", "disposed"]),
    "prealloc_wrong_dims": ("InvalidArgument", ["output 'double'", "dimension 0 must be 2",
                                                "3"]),
    "prealloc_wrong_dtype": ("InvalidArgument", ["output 'double'", "tensor(float)",
                                                 "tensor(int32)"]),
    "prealloc_buffer_too_small": ("InvalidArgument", ["holds 8 bytes", "needs 16"]),
    "double_on_gpu": ("InvalidArgument", ["tensor(double)", "WebGPU"]),
    "float16_without_shader_f16": ("ProviderUnavailable", ["shader-f16"]),
}


@run_in_browser
async def _bad_gpu_binding(ortweb_page, models, x, case):
    """``[class, message]`` of the error of bad binding ``case`` (``["skip", why]`` when
    the case cannot happen here), and the next good run on the same session."""
    import js

    device = await webgpu_device()
    usage = js.GPUBufferUsage
    sess = await ortweb.InferenceSession.create(models["two"], providers=["webgpu"])
    if case == "no_storage_usage":
        b = gpu_buffer(device, x, usage=usage.COPY_DST | usage.COPY_SRC)
        r = error(lambda: OrtValue.from_gpu_buffer(b, np.float32, [2, 2]))
    elif case == "too_small":
        b = gpu_buffer(device, np.zeros(2, np.float32))
        r = error(lambda: OrtValue.from_gpu_buffer(b, np.float32, [4, 4]))
    elif case == "other_device":
        adapter = await js.navigator.gpu.requestAdapter()
        other = await adapter.requestDevice()
        v = OrtValue.from_gpu_buffer(gpu_buffer(other, x), np.float32, [2, 2])
        r = await aerror(sess.run_async(None, {"x": v}))
        v.dispose()
        other.destroy()
    elif case == "destroyed":
        b = gpu_buffer(device, x)
        v = OrtValue.from_gpu_buffer(b, np.float32, [2, 2])
        b.destroy()
        r = await aerror(sess.run_async(None, {"x": v}))
        v.dispose()
    elif case == "wrong_dtype_value":
        v = await OrtValue.ortvalue_from_numpy_async(x.astype(np.int32), "webgpu")
        r = await aerror(sess.run_async(None, {"x": v}))
        v.dispose()
    elif case == "wrong_rank_value":
        v = await OrtValue.ortvalue_from_numpy_async(x.reshape(4), "webgpu")
        r = await aerror(sess.run_async(None, {"x": v}))
        v.dispose()
    elif case == "disposed_input":
        v = await OrtValue.ortvalue_from_numpy_async(x, "webgpu")
        v.dispose()
        r = await aerror(sess.run_async(None, {"x": v}))
    elif case == "prealloc_wrong_dims":
        bd = sess.io_binding()
        t = await OrtValue.ortvalue_from_shape_and_type_async([3, 2], np.float32, "webgpu")
        r = error(lambda: bd.bind_ortvalue_output("double", t))
        t.dispose()
    elif case == "prealloc_wrong_dtype":
        bd = sess.io_binding()
        t = await OrtValue.ortvalue_from_shape_and_type_async([2, 2], np.int32, "webgpu")
        r = error(lambda: bd.bind_ortvalue_output("double", t))
        t.dispose()
    elif case == "prealloc_buffer_too_small":
        bd = sess.io_binding()
        r = error(lambda: bd.bind_output("double", "webgpu", element_type=np.float32,
                                         shape=[2, 2],
                                         buffer_ptr=gpu_buffer(device, np.zeros(2, np.float32))))
    elif case == "double_on_gpu":
        r = error(lambda: OrtValue.ortvalue_from_numpy(np.zeros(2), "webgpu"))
    elif case == "float16_without_shader_f16":
        if "shader-f16" in list(device.features):
            r = ["skip", "adapter has shader-f16"]
        else:
            r = await aerror(OrtValue.ortvalue_from_numpy_async(np.zeros(2, np.float16),
                                                                "webgpu"))
    else:
        raise ValueError(f"no such case: {case}")
    good = await sess.run_async(["double"], {"x": x})
    await sess.close_async()
    return r, good[0]


@pytest.mark.parametrize("case", list(BAD))
def test_bad_gpu_bindings_are_refused_and_session_survives(ortweb_page, models, x, case):
    cls, words = BAD[case]
    got, good = _bad_gpu_binding(ortweb_page, models, x, case)
    if got[0] == "skip":
        pytest.skip(got[1])
    assert got[0] == cls, got
    for word in words:
        assert word in got[1], (word, got[1])
    np.testing.assert_array_equal(good, X * 2)


@pytest.fixture(scope="module")
def sym_want() -> np.ndarray:
    """Native onnxruntime's output of the symbolic-dims model for ones((2, 4)), ones((2, 3))."""
    return run_native(samples.symbolic_dims_model(),
                      {"x": np.ones((2, 4), np.float32), "z": np.ones((2, 3), np.float32)})["y"]


@run_in_browser
async def test_error_under_iobinding_recreates_session(ortweb_page, models, sym_want):
    """A pre-allocated output whose symbolic dims cannot be checked beforehand: ORT
    fails, ortweb re-creates the session, and the next run works."""
    sess = await ortweb.InferenceSession.create(models["sym"], providers=["webgpu"])
    x = np.ones((2, 4), np.float32)
    z = np.ones((2, 3), np.float32)
    bd = sess.io_binding()
    bd.bind_cpu_input("x", x)
    bd.bind_cpu_input("z", z)
    wrong = await OrtValue.ortvalue_from_shape_and_type_async([5, 3], np.float32, "webgpu")
    bd.bind_ortvalue_output("y", wrong)
    old = sess._handle
    cls, message = await aerror(sess.run_with_iobinding_async(bd))
    wrong.dispose()
    good = await sess.run_async(None, {"x": x, "z": z})
    recreated = sess._handle != old
    await sess.close_async()
    assert cls != "no error"
    assert "re-created" in message
    assert recreated is True
    np.testing.assert_allclose(good[0], sym_want, rtol=1e-5)


@run_in_browser
async def test_user_buffer_survives_session_close(ortweb_page, models, x):
    device = await webgpu_device()
    b = gpu_buffer(device, x)
    sess = await ortweb.InferenceSession.create(models["two"], providers=["webgpu"])
    v = OrtValue.from_gpu_buffer(b, np.float32, [2, 2])
    await sess.run_async(None, {"x": v})
    await sess.close_async()
    # No WebGPU session is left: the device and the user's buffer must both be alive.
    after = await v.get_data()
    v.dispose()
    again = OrtValue.from_gpu_buffer(b, np.float32, [2, 2])
    s2 = await ortweb.InferenceSession.create(models["two"], providers=["webgpu"])
    (neg,) = await s2.run_async(["negated"], {"x": again})
    again.dispose()
    await s2.close_async()
    np.testing.assert_array_equal(after, x)
    np.testing.assert_array_equal(neg, -x)


@run_in_browser
async def test_thousand_runs_with_gpu_outputs_disposed_do_not_leak(ortweb_page, models, x):
    import gc

    sess = await ortweb.InferenceSession.create(models["two"], providers=["webgpu"],
                                                preferred_output_location="gpu-buffer")
    xv = await OrtValue.ortvalue_from_numpy_async(x, "webgpu")
    start = ortweb.live_handles()
    for i in range(1000):
        double, negated = await sess.run_async(None, {"x": xv})
        double.dispose()
        negated.dispose()
        if i == 9:
            early = ortweb.live_handles()
    end = ortweb.live_handles()
    last = (await sess.run_async(["double"], {"x": xv}))[0]
    value = await last.get_data(release=True)
    # A forgotten GPU output is released by the garbage collector, and counted.
    forgotten, kept = await sess.run_async(None, {"x": xv})
    kept.dispose()
    del forgotten
    gc.collect()
    collected = ortweb.live_handles()
    xv.dispose()
    await sess.close_async()
    assert start["gpu_tensors"] == early["gpu_tensors"] == end["gpu_tensors"]
    assert start["sessions"] == end["sessions"]
    np.testing.assert_array_equal(value, x * 2)
    assert collected["gpu_tensors"] == end["gpu_tensors"]
    assert collected["finalized"] == end["finalized"] + 1


@run_in_browser
def test_sync_iobinding_from_exec_style_code(ortweb_page, models, x):
    """The whole flow with the synchronous API (JSPI), as a script would write it."""
    sess = ortweb.InferenceSession(models["two"], providers=["webgpu"],
                                   preferred_output_location="gpu-buffer")
    # A script asks for the device first, to allocate its own buffers on.
    assert ortweb.webgpu_device() is not None
    xv = OrtValue.ortvalue_from_numpy(x, "webgpu")
    binding = sess.io_binding()
    binding.bind_ortvalue_input("x", xv)
    binding.bind_output("double", "webgpu")
    binding.bind_output("negated", "cpu")
    sess.run_with_iobinding(binding)
    double, negated = binding.get_outputs()
    locations = [double.location, negated.location]
    values = [double.numpy(), negated.numpy()]
    for v in (double, negated, xv):
        v.dispose()
    sess.close()
    assert locations == ["gpu-buffer", "cpu"]
    np.testing.assert_array_equal(values[0], x * 2)
    np.testing.assert_array_equal(values[1], -x)


def test_iobinding_example_script_through_ortweb_exec(tmp_path):
    """The docs' IO binding example, run by `ortweb exec` on WebGPU."""
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


@run_in_browser
async def test_cpu_ortvalue_bound_on_a_gpu_output_gets_the_result(ortweb_page, models, x,
                                                                 two_want):
    # The session keeps outputs on the GPU; a CPU OrtValue bound as an output still
    # receives the result (native accepts this), and ORT's GPU output is released.
    sess = await ortweb.InferenceSession.create(models["two"], providers=["webgpu"],
                                                preferred_output_location="gpu-buffer")
    binding = sess.io_binding()
    binding.bind_cpu_input("x", x)
    double = OrtValue.ortvalue_from_numpy(np.zeros((2, 2), np.float32))
    binding.bind_ortvalue_output("double", double)
    binding.bind_output("negated", "cpu")
    before = ortweb.live_handles()["gpu_tensors"]
    for _ in range(3):
        await sess.run_with_iobinding_async(binding)
    after = ortweb.live_handles()["gpu_tensors"]
    (got_double, got_negated) = binding.get_outputs()
    assert got_double is double
    np.testing.assert_array_equal(double.numpy(), two_want["double"])
    np.testing.assert_array_equal(got_negated.numpy(), two_want["negated"])
    assert after == before, (before, after)
    await sess.close_async()
