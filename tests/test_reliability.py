"""Reliability: the bad-input matrix, recovery, soak, and conversion properties.

Every case of ``badinputs.CASES`` runs on each provider it applies to: the error
class and message are checked, and the next good run on the same session must give
the right answer (compared with native onnxruntime).
"""

from __future__ import annotations

import base64
import json

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from badinputs import CASES
from ortweb.host import samples
from ortweb.host.native import run_native
from pagecode import GPU_PRELUDE

pytestmark = pytest.mark.browser

MODELS = {
    "sym": samples.symbolic_dims_model(),
    "identity": samples.identity_model("tensor(float)", [2, 3]),
    "str": samples.identity_model("tensor(string)", [2]),
    "two": samples.two_outputs_model(),
    "mlp": samples.mlp_model(),
    "f16": samples.float16_model(),
    "unsupported": samples.unsupported_on_webgpu_model(),
}
X = np.arange(8, dtype=np.float32).reshape(2, 4) / 8
Z = np.ones((2, 3), np.float32)
X2 = np.array([[1.5, -2.0], [3.25, 4.0]], np.float32)
IDENT = np.arange(6, dtype=np.float32).reshape(2, 3)
GOOD = {
    "sym": {"x": X, "z": Z},
    "identity": {"x": IDENT},
    "str": {"x": np.array(["a", "b"], dtype=object)},
    "two": {"x": X2},
}


@pytest.fixture(scope="module")
def model_paths(put_file):
    return {name: put_file(f"{name}.onnx", data) for name, data in MODELS.items()}


def _params():
    for name, case in CASES.items():
        for ep in case.eps:
            marks = [pytest.mark.webgpu] if ep == "webgpu" else []
            yield pytest.param(name, ep, id=f"{name}[{ep}]", marks=marks)


@pytest.mark.parametrize(("name", "ep"), list(_params()))
def test_bad_input_matrix(page, model_paths, name, ep):
    case = CASES[name]
    good = GOOD[case.model]
    body = "\n".join("    " + line for line in case.code.splitlines())
    out = page.run_json(GPU_PRELUDE + f"""
import asyncio
from pyodide.code import run_js
from pyodide.ffi import create_proxy
EP = {ep!r}
MODELS = {model_paths!r}
MODEL_BYTES = {{k: open(v, "rb").read() for k, v in MODELS.items()}}
X = np.array({X.tolist()!r}, np.float32); Z = np.array({Z.tolist()!r}, np.float32)
X2 = np.array({X2.tolist()!r}, np.float32)
GOOD = {{k: np.array(v, dtype=object if isinstance(v[0], str) else np.float32)
        for k, v in {({k: v.tolist() for k, v in good.items()})!r}.items()}}
sess = await ortweb.InferenceSession.create(MODELS[{case.model!r}], providers=[EP])
try:
{body}
    r = ["ok", ""]
except (ortweb.OrtWebError, asyncio.CancelledError) as exc:
    r = [type(exc).__name__, str(exc)]
after = await sess.run_async(None, GOOD)
await sess.close_async()
json.dumps([r, [a.tolist() for a in after], sess.provider])
""")
    (got_cls, message), after, provider = out
    assert got_cls == case.expect, (got_cls, message)
    for word in case.words:
        assert word in message, (word, message)
    assert provider == ep
    want = run_native(MODELS[case.model], good)
    for got, value in zip(after, want.values(), strict=True):
        if value.dtype == object:
            assert got == value.tolist()
        else:
            np.testing.assert_allclose(got, value, rtol=1e-5, atol=1e-6)


def test_matrix_is_big_enough():
    assert sum(len(c.eps) for c in CASES.values()) >= 30


def _reshape_model() -> bytes:
    """y = Reshape(x, shape) with the target shape fed at run time."""
    import onnx
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Reshape", ["x", "shape"], ["y"])], "reshape",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [6]),
         helper.make_tensor_value_info("shape", TensorProto.INT64, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["rows", "cols"])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.checker.check_model(model)
    return model.SerializeToString()


@pytest.mark.webgpu
def test_runtime_error_with_gpu_inputs_recreates_session(page, put_file):
    """ORT fails inside a run fed from the GPU (a shape that cannot be reshaped to,
    known only at run time): the session is re-created, the error says so, and the
    next run is right."""
    path = put_file("reshape.onnx", _reshape_model())
    x = np.arange(6, dtype=np.float32)
    out = page.run_json(GPU_PRELUDE + f"""
sess = await ortweb.InferenceSession.create({path!r}, providers=["webgpu"])
x = await OrtValue.ortvalue_from_numpy_async(np.arange(6, dtype=np.float32), "webgpu")
old = sess._handle
r = await aerror(sess.run_async(None, {{"x": x, "shape": np.array([4, 4], np.int64)}}))
good = await sess.run_async(None, {{"x": x, "shape": np.array([2, 3], np.int64)}})
x.dispose()
await sess.close_async()
json.dumps([r, sess._handle != old, [g.tolist() for g in good], ortweb.live_handles()])
""")
    (cls, message), recreated, good, live = out
    assert cls != "no error", message
    assert "re-created" in message and "reshape" in message.lower(), message
    assert recreated is True
    want = run_native(_reshape_model(), {"x": x, "shape": np.array([2, 3], np.int64)})["y"]
    np.testing.assert_array_equal(good[0], want)
    assert live["gpu_tensors"] == 0


@pytest.mark.webgpu
def test_short_soak_is_flat(runtime):
    """A short version of `ortweb soak` (the full one is 10,000 runs, 1,000 cycles),
    in a fresh page, as the command runs it."""
    from ortweb.host.soak import run_soak

    with runtime.new_page() as fresh:
        result = run_soak(runtime, fresh, "webgpu", runs=200, cycles=20)
    print(result.table())
    assert result.problems() == []
    assert result.readings[-1]["sessions"] == result.readings[0]["sessions"]


@pytest.mark.webgpu
def test_upstream_buffers_held_while_another_webgpu_session_lives(runtime):
    """Pins an onnxruntime-web 1.30 (native WebGPU build) behaviour: while another
    WebGPU session is open, each session created and closed leaves a few small GPU
    buffers in ORT's WebGPU context; they go when the last session closes. ortweb's
    own handles stay flat throughout."""
    with runtime.new_page() as fresh, runtime.shared_folder() as (folder, prefix):
        (folder / "two.onnx").write_bytes(samples.two_outputs_model())
        fresh.write_file(prefix + "two.onnx", "two.onnx")
        out = fresh.run_json("""
import json, numpy as np, ortweb
x = np.ones((2, 2), np.float32)
async def cycle():
    s = await ortweb.InferenceSession.create("two.onnx", providers=["webgpu"])
    await s.run_async(None, {"x": x})
    await s.close_async()
keep = await ortweb.InferenceSession.create("two.onnx", providers=["webgpu"])
await cycle()
a = (await ortweb.memory_info_async())["gpu_buffers"]
for _ in range(5):
    await cycle()
b = (await ortweb.memory_info_async())["gpu_buffers"]
handles = ortweb.live_handles()
await keep.close_async()
c = (await ortweb.memory_info_async())["gpu_buffers"]
json.dumps([a, b, c, handles])
""")
    a, b, c, handles = out
    assert b > a, "ORT-web no longer holds buffers per cycle: drop this test and its note"
    assert c == 0
    assert handles["sessions"] == 1 and handles["gpu_tensors"] == 0


# -- conversion properties, against native onnxruntime's Identity ------------------------

PROPERTY_TYPES = {
    "tensor(float)": np.float32, "tensor(double)": np.float64, "tensor(float16)": np.float16,
    "tensor(int8)": np.int8, "tensor(int16)": np.int16, "tensor(int32)": np.int32,
    "tensor(int64)": np.int64, "tensor(uint8)": np.uint8, "tensor(uint16)": np.uint16,
    "tensor(uint32)": np.uint32, "tensor(uint64)": np.uint64, "tensor(bool)": np.bool_,
}


@pytest.fixture(scope="module")
def identity_sessions(page, put_file):
    """One identity model per dtype with a fully symbolic rank-3 input, opened once."""
    paths = {t: put_file(f"id_{i}.onnx", samples.identity_model(t, ["a", "b", "c"]))
             for i, t in enumerate(PROPERTY_TYPES)}
    page.run_python(f"""
import numpy as np, ortweb, base64
IDS = {{t: await ortweb.InferenceSession.create(p, providers=["wasm"])
        for t, p in {paths!r}.items()}}
""")
    return paths


_ORDERS = st.sampled_from(["C", "F", "transposed", "strided", "reversed"])


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data(), type_str=st.sampled_from(list(PROPERTY_TYPES)), order=_ORDERS)
def test_conversion_roundtrip_matches_native_identity(page, identity_sessions, data, type_str,
                                                      order):
    dtype = np.dtype(PROPERTY_TYPES[type_str])
    shape = data.draw(hnp.array_shapes(min_dims=3, max_dims=3, min_side=0, max_side=6))
    base = data.draw(hnp.arrays(dtype, tuple(s * 2 for s in shape)))
    # The memory order is built inside the page, so the bridge sees the real layout.
    out = page.run_json(f"""
import json
raw = np.frombuffer(base64.b64decode({base64.b64encode(base.tobytes()).decode()!r}),
                    dtype={dtype.str!r}).reshape({base.shape!r})
order = {order!r}
a = raw[::2, ::2, ::2]
if order == "F":
    a = np.asfortranarray(a)
elif order == "C":
    a = np.ascontiguousarray(a)
elif order == "transposed":
    a = np.ascontiguousarray(a).transpose(2, 0, 1).copy().transpose(1, 2, 0)
elif order == "reversed":
    a = a[::-1, :, ::-1]
(y,) = await IDS[{type_str!r}].run_async(None, {{"x": a}})
json.dumps([y.dtype.str, list(y.shape), base64.b64encode(y.tobytes()).decode(),
            a.flags.c_contiguous])
""")
    got_dtype, got_shape, got_b64, _ = out
    x = base[::2, ::2, ::2]
    if order == "reversed":
        x = x[::-1, :, ::-1]
    native = run_native(samples.identity_model(type_str, ["a", "b", "c"]), {"x": x})["y"]
    got = np.frombuffer(base64.b64decode(got_b64), dtype=got_dtype).reshape(got_shape)
    assert got.dtype == native.dtype and got.shape == native.shape
    assert got.tobytes() == np.ascontiguousarray(native).tobytes()


def test_large_tensor_roundtrip(page, identity_sessions):
    """16 MiB each way, compared by checksum with the array built in the page."""
    out = page.run_json("""
import json, hashlib
a = np.arange(4 * 1024 * 1024, dtype=np.float32).reshape(64, 256, 256)
(y,) = await IDS["tensor(float)"].run_async(None, {"x": a})
json.dumps([hashlib.sha256(a.tobytes()).hexdigest(), hashlib.sha256(y.tobytes()).hexdigest()])
""")
    assert out[0] == out[1]
    assert json.dumps(out)


def test_staging_arrays_are_reused_without_mixing_runs(page, identity_sessions):
    """Feeds of the same size reuse staging arrays (the fast path for transfers); two
    queued runs must still each see their own data."""
    out = page.run_json("""
import asyncio, json
a = np.full((8, 64, 64), 1.0, np.float32)
b = np.full((8, 64, 64), 2.0, np.float32)
ya, yb = await asyncio.gather(IDS["tensor(float)"].run_async(None, {"x": a}),
                              IDS["tensor(float)"].run_async(None, {"x": b}))
pooled_after = int(ortweb._bridge.get_bridge().stats().pooledBytes)
(yc,) = await IDS["tensor(float)"].run_async(None, {"x": a * 3})
json.dumps([float(ya[0].min()), float(ya[0].max()), float(yb[0].min()), float(yb[0].max()),
            float(yc.min()), float(yc.max()), pooled_after])
""")
    assert out[:6] == [1.0, 1.0, 2.0, 2.0, 3.0, 3.0]
    assert out[6] >= 8 * 64 * 64 * 4
