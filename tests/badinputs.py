"""The bad-input matrix: what a user can get wrong, and what must still work.

Each case is a function run inside the page (test_reliability.py installs this file
there) with a :class:`Env`: a session of the case's model on the case's provider,
good feeds and the models. ``expect`` is the exception class name, or ``"ok"`` when
the case must succeed (its function asserts the result). After every case, the
runner checks that the next good run on the same session gives the right answer.

Page-only modules (``js``, ``pyodide``) are imported in the functions, so that the
host can import this file to list the cases.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

import ortweb
from ortweb import OrtValue
from pagecode import gpu_buffer

BOTH = ("wasm", "webgpu")
GPU = ("webgpu",)


@dataclass
class Env:
    """What a case sees in the page."""

    sess: Any  # ortweb.InferenceSession of the case's model, on ``ep``
    ep: str
    models: dict[str, str]  # model name -> its path in the page
    x: np.ndarray  # feeds of the "sym" model
    z: np.ndarray
    x2: np.ndarray  # the feed of the "two" model
    good: dict[str, np.ndarray]  # good feeds of the case's model
    device: Any  # ortweb's GPUDevice, None without WebGPU

    def model_bytes(self, name: str) -> bytes:
        with open(self.models[name], "rb") as f:
            return f.read()


@dataclass(frozen=True)
class Case:
    run: Callable[[Env], Awaitable[None]]
    expect: str
    words: tuple[str, ...] = ()
    model: str = "sym"
    eps: tuple[str, ...] = BOTH


# -- feeds ------------------------------------------------------------------------


async def unknown_input_name(t: Env) -> None:
    await t.sess.run_async(None, {"q": t.x, "x": t.x, "z": t.z})


async def missing_input(t: Env) -> None:
    await t.sess.run_async(None, {"x": t.x})


async def extra_input(t: Env) -> None:
    await t.sess.run_async(None, {**t.good, "extra": t.x})


async def none_value(t: Env) -> None:
    await t.sess.run_async(None, {"x": None, "z": t.z})


async def python_list(t: Env) -> None:
    (y,) = await t.sess.run_async(None, {"x": t.x.tolist(), "z": t.z.tolist()})
    (want,) = await t.sess.run_async(None, t.good)
    assert y.tolist() == want.tolist(), (y, want)


async def python_tuple(t: Env) -> None:
    await t.sess.run_async(None, {"x": tuple(t.x.tolist()), "z": t.z})


async def ragged_list(t: Env) -> None:
    await t.sess.run_async(None, {"x": [[1.0], [1.0, 2.0]], "z": t.z})


async def feed_not_a_dict(t: Env) -> None:
    await t.sess.run_async(None, [t.x, t.z])


async def wrong_dtype(t: Env) -> None:
    await t.sess.run_async(None, {"x": t.x.astype(np.float64), "z": t.z})


async def wrong_rank(t: Env) -> None:
    await t.sess.run_async(None, {"x": t.x[None], "z": t.z})


async def wrong_fixed_dim(t: Env) -> None:
    await t.sess.run_async(None, {"x": np.ones((2, 5), np.float32), "z": t.z})


async def inconsistent_symbolic_dim(t: Env) -> None:
    await t.sess.run_async(None, {"x": t.x, "z": np.ones((3, 3), np.float32)})


async def unknown_output_name(t: Env) -> None:
    await t.sess.run_async(["nope"], t.good)


async def output_names_a_string(t: Env) -> None:
    await t.sess.run_async("y", t.good)


async def tensor_larger_than_wasm_heap(t: Env) -> None:
    # A broadcast view: 1 GiB + 16 B of float32 that costs nothing until copied.
    big = np.broadcast_to(np.float32(1), (2**26 + 1, 4))
    await t.sess.run_async(None, {"x": big,
                                  "z": np.broadcast_to(np.float32(1), (2**26 + 1, 3))})


async def zero_size_tensors(t: Env) -> None:
    out = await t.sess.run_async(None, {"x": np.ones((0, 4), np.float32),
                                        "z": np.ones((0, 3), np.float32)})
    assert out[0].shape == (0, 3), out[0].shape


async def nan_and_inf_pass_through(t: Env) -> None:
    v = np.array([np.nan, np.inf, -np.inf, -0.0, 1.0, 5e-45], np.float32).reshape(2, 3)
    (y,) = await t.sess.run_async(None, {"x": v})
    assert y.tobytes() == v.tobytes(), (y, v)


async def string_with_nul(t: Env) -> None:
    await t.sess.run_async(None, {"x": np.array(["a\x00b", "c"], dtype=object)})


async def string_not_utf8(t: Env) -> None:
    await t.sess.run_async(None, {"x": np.array([b"\xff\xfe", b"ok"], dtype=object)})


async def string_tensors_on_webgpu(t: Env) -> None:
    (y,) = await t.sess.run_async(None, {"x": np.array(["é", "日本"], dtype=object)})
    assert y.tolist() == ["é", "日本"], y


# -- models -----------------------------------------------------------------------


async def corrupt_model_bytes(t: Env) -> None:
    bad = bytearray(t.model_bytes("mlp"))
    bad[40:120] = b"\xff" * 80
    await ortweb.InferenceSession.create(bytes(bad), providers=[t.ep])


async def truncated_model(t: Env) -> None:
    await ortweb.InferenceSession.create(t.model_bytes("mlp")[:300], providers=[t.ep])


async def not_an_onnx_file(t: Env) -> None:
    await ortweb.InferenceSession.create(b"\x89PNG\r\n\x1a\n" + bytes(64), providers=[t.ep])


async def missing_model_path(t: Env) -> None:
    await ortweb.InferenceSession.create("no/such/model.onnx", providers=[t.ep])


async def model_url_404(t: Env) -> None:
    import js

    await ortweb.InferenceSession.create(js.location.origin + "/missing.onnx",
                                         providers=[t.ep])


async def op_the_webgpu_ep_lacks(t: Env) -> None:
    s = await ortweb.InferenceSession.create(t.models["unsupported"], providers=["webgpu"])
    xs = np.array([[0.5, 2.5, -1.5, 3.7, 0.2], [9.0, -2.2, 4.4, 1.1, 0.0]], np.float32)
    _values, indices, rounded = await s.run_async(None, {"x": xs})
    assert rounded.tolist() == np.round(xs).tolist(), rounded
    assert indices.tolist() == [[3, 1], [0, 2]], indices
    assert s.provider_report.cpu_nodes, str(s.provider_report)
    await s.close_async()


async def float16_without_shader_f16(t: Env) -> None:
    s = await ortweb.InferenceSession.create(t.models["f16"], providers=["webgpu", "wasm"])
    (y, _y32) = await s.run_async(None, {"x": np.ones((2, 3), np.float16)})
    assert y.tolist() == [[2.5] * 3] * 2, y
    assert s.provider == "webgpu" or "shader-f16" in s.skipped_providers["webgpu"]
    await s.close_async()


# -- GPU bindings --------------------------------------------------------------------


async def prealloc_output_wrong_dims(t: Env) -> None:
    v = await OrtValue.ortvalue_from_shape_and_type_async([3, 2], np.float32, "webgpu")
    try:
        t.sess.io_binding().bind_ortvalue_output("double", v)
    finally:
        v.dispose()


async def prealloc_output_wrong_dtype(t: Env) -> None:
    v = await OrtValue.ortvalue_from_shape_and_type_async([2, 2], np.int32, "webgpu")
    try:
        t.sess.io_binding().bind_ortvalue_output("double", v)
    finally:
        v.dispose()


async def prealloc_buffer_too_small(t: Env) -> None:
    t.sess.io_binding().bind_output("double", "webgpu", element_type=np.float32, shape=[2, 2],
                                    buffer_ptr=gpu_buffer(t.device, np.zeros(2, np.float32)))


async def gpu_buffer_without_storage_usage(t: Env) -> None:
    import js

    usage = js.GPUBufferUsage
    OrtValue.from_gpu_buffer(gpu_buffer(t.device, t.x2, usage=usage.COPY_DST | usage.COPY_SRC),
                             np.float32, [2, 2])


async def gpu_buffer_from_another_device(t: Env) -> None:
    import js

    other = await (await js.navigator.gpu.requestAdapter()).requestDevice()
    v = OrtValue.from_gpu_buffer(gpu_buffer(other, t.x2), np.float32, [2, 2])
    try:
        await t.sess.run_async(None, {"x": v})
    finally:
        v.dispose()
        other.destroy()


async def gpu_buffer_destroyed(t: Env) -> None:
    b = gpu_buffer(t.device, t.x2)
    v = OrtValue.from_gpu_buffer(b, np.float32, [2, 2])
    b.destroy()
    try:
        await t.sess.run_async(None, {"x": v})
    finally:
        v.dispose()


async def use_after_dispose(t: Env) -> None:
    v = await OrtValue.ortvalue_from_numpy_async(t.x2, "webgpu" if t.ep == "webgpu" else "cpu")
    v.dispose()
    v.numpy()


async def double_dispose(t: Env) -> None:
    v = await OrtValue.ortvalue_from_numpy_async(t.x2, "webgpu" if t.ep == "webgpu" else "cpu")
    v.dispose()
    v.dispose()
    assert v.is_disposed


async def session_used_after_close(t: Env) -> None:
    s = await ortweb.InferenceSession.create(t.models["two"], providers=[t.ep])
    await s.close_async()
    await s.close_async()
    await s.run_async(None, {"x": t.x2})


# -- concurrency and control flow ---------------------------------------------------------


async def two_concurrent_runs(t: Env) -> None:
    a, b = await asyncio.gather(t.sess.run_async(None, {"x": t.x2}),
                                t.sess.run_async(None, {"x": -t.x2}))
    assert a[0].tolist() == (t.x2 * 2).tolist() and b[0].tolist() == (-t.x2 * 2).tolist()


async def _hold_the_queue() -> None:
    # A wasm run settles within the microtasks of the step that starts it, and wakes
    # its task at once: holding the page's ORT queue keeps the run waiting while its
    # task is cancelled.
    from pyodide.code import run_js

    queue = (await run_js("import('/bridge/queue.js')")).pageQueue
    run_js("(q) => { q.run(() => new Promise((ok) => setTimeout(ok, 50))); }")(queue)


async def run_cancelled_from_asyncio(t: Env) -> None:
    before = ortweb.live_handles()
    await _hold_the_queue()
    task = asyncio.ensure_future(t.sess.run_async(None, {"x": t.x2}))
    await asyncio.sleep(0)
    assert not task.done()
    task.cancel()
    cancelled = False
    try:
        await task
    except asyncio.CancelledError:
        cancelled = True
    assert cancelled
    for _ in range(100):
        await asyncio.sleep(0.01)
        if ortweb.live_handles() == before:
            break
    assert ortweb.live_handles() == before, (before, ortweb.live_handles())
    raise asyncio.CancelledError("checked")


async def run_with_gpu_outputs_cancelled(t: Env) -> None:
    # What ORT made on the GPU for a cancelled run has no owner: the bridge disposes
    # of it when the run settles.
    g = await ortweb.InferenceSession.create(t.models["two"], providers=["webgpu"],
                                             preferred_output_location="gpu-buffer")
    before = ortweb.live_handles()["gpu_tensors"]
    await _hold_the_queue()
    task = asyncio.ensure_future(g.run_async(None, {"x": t.x2}))
    await asyncio.sleep(0)
    assert not task.done()
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        pass
    else:
        raise AssertionError("the run was not cancelled")
    for _ in range(300):  # until the cancelled run has run and settled
        await asyncio.sleep(0.01)
        if ortweb._bridge.stats()["queued"] == 0:
            break
    await asyncio.sleep(0.05)
    assert ortweb._bridge.stats()["queued"] == 0
    after = ortweb.live_handles()["gpu_tensors"]
    (d, *rest) = await g.run_async(None, {"x": t.x2})
    assert d.numpy().tolist() == (t.x2 * 2).tolist()
    for v in (d, *rest):
        v.dispose()
    await g.close_async()
    assert after == before, (before, after)


async def exception_inside_user_callback(t: Env) -> None:
    # JS calls back into Python (as a page's event handler would); the callback's
    # error reaches the JS caller with its traceback and ortweb is unaffected.
    from pyodide.code import run_js
    from pyodide.ffi import create_proxy

    def callback(v: object) -> None:
        raise ValueError(f"user callback failed on {v}")

    proxy = create_proxy(callback)
    try:
        outcome = await run_js('async (f) => { try { f(7); return "no error"; } '
                               "catch (e) { return String(e.message); } }")(proxy)
    finally:
        proxy.destroy()
    assert "user callback failed on 7" in outcome and "ValueError" in outcome, outcome


CASES: dict[str, Case] = {
    # -- feeds
    "unknown_input_name": Case(unknown_input_name, "InvalidArgument", ("'q'", "'x'", "'z'")),
    "missing_input": Case(missing_input, "InvalidArgument", ("missing", "'z'", "tensor(float)")),
    "extra_input": Case(extra_input, "InvalidArgument", ("'extra'", "inputs are")),
    "none_value": Case(none_value, "InvalidArgument", ("'x'", "None", "float32")),
    # A list is converted as native onnxruntime converts it; a tuple is refused, as
    # native refuses it.
    "python_list": Case(python_list, "ok"),
    "python_tuple": Case(python_tuple, "InvalidArgument", ("'x'", "tuple", "numpy.asarray")),
    "ragged_list": Case(ragged_list, "InvalidArgument", ("'x'", "Could not create tensor")),
    "feed_not_a_dict": Case(feed_not_a_dict, "InvalidArgument", ("dict", "list")),
    "wrong_dtype": Case(wrong_dtype, "InvalidArgument", ("'x'", "float32", "float64")),
    "wrong_rank": Case(wrong_rank, "InvalidArgument", ("'x'", "rank 2", "rank 3")),
    "wrong_fixed_dim": Case(wrong_fixed_dim, "InvalidArgument",
                            ("'x'", "dimension 1 must be 4", "5")),
    # Native accepts feeds whose symbolic dims disagree, so ortweb passes them on:
    # the model's Add fails inside the runtime, which leaves the session usable.
    "inconsistent_symbolic_dim": Case(inconsistent_symbolic_dim, "OrtRuntimeError", ()),
    "unknown_output_name": Case(unknown_output_name, "InvalidArgument", ("'nope'", "'y'")),
    "output_names_a_string": Case(output_names_a_string, "InvalidArgument",
                                  ("output_names", "str")),
    "tensor_larger_than_wasm_heap": Case(tensor_larger_than_wasm_heap, "InvalidArgument",
                                         ("'x'", "GiB", "wasm heap")),
    "zero_size_tensors": Case(zero_size_tensors, "ok"),
    "nan_and_inf_pass_through": Case(nan_and_inf_pass_through, "ok", model="identity"),
    "string_with_nul": Case(string_with_nul, "InvalidArgument", ("'x'", "NUL"), model="str"),
    "string_not_utf8": Case(string_not_utf8, "InvalidArgument", ("'x'", "UTF-8"), model="str"),
    "string_tensors_on_webgpu": Case(string_tensors_on_webgpu, "ok", model="str"),
    # -- models
    "corrupt_model_bytes": Case(corrupt_model_bytes, "InvalidGraph", ("create session",)),
    "truncated_model": Case(truncated_model, "InvalidGraph", ("create session",)),
    "not_an_onnx_file": Case(not_an_onnx_file, "InvalidGraph", ("create session",)),
    "missing_model_path": Case(missing_model_path, "NoSuchFile", ("no/such/model.onnx",)),
    "model_url_404": Case(model_url_404, "NoSuchFile", ("404", "missing.onnx")),
    "op_the_webgpu_ep_lacks": Case(op_the_webgpu_ep_lacks, "ok", eps=GPU),
    "float16_without_shader_f16": Case(float16_without_shader_f16, "ok", eps=GPU),
    # -- GPU bindings
    "prealloc_output_wrong_dims": Case(prealloc_output_wrong_dims, "InvalidArgument",
                                       ("'double'", "dimension 0 must be 2"),
                                       model="two", eps=GPU),
    "prealloc_output_wrong_dtype": Case(prealloc_output_wrong_dtype, "InvalidArgument",
                                        ("'double'", "tensor(int32)"), model="two", eps=GPU),
    "prealloc_buffer_too_small": Case(prealloc_buffer_too_small, "InvalidArgument",
                                      ("holds 8 bytes", "needs 16"), model="two", eps=GPU),
    "gpu_buffer_without_storage_usage": Case(gpu_buffer_without_storage_usage,
                                             "InvalidArgument", ("STORAGE",),
                                             model="two", eps=GPU),
    "gpu_buffer_from_another_device": Case(gpu_buffer_from_another_device, "InvalidArgument",
                                           ("'x'", "another GPUDevice"), model="two", eps=GPU),
    "gpu_buffer_destroyed": Case(gpu_buffer_destroyed, "InvalidArgument",
                                 ("'x'", "destroyed"), model="two", eps=GPU),
    "use_after_dispose": Case(use_after_dispose, "InvalidArgument", ("disposed",), model="two"),
    "double_dispose": Case(double_dispose, "ok", model="two"),
    "session_used_after_close": Case(session_used_after_close, "SessionClosed", ("closed",),
                                     model="two"),
    # -- concurrency and control flow
    "two_concurrent_runs": Case(two_concurrent_runs, "ok", model="two"),
    "run_cancelled_from_asyncio": Case(run_cancelled_from_asyncio, "CancelledError",
                                       model="two"),
    "run_with_gpu_outputs_cancelled": Case(run_with_gpu_outputs_cancelled, "ok", model="two",
                                           eps=GPU),
    "exception_inside_user_callback": Case(exception_inside_user_callback, "ok", model="two"),
}
