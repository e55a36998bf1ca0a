"""The bad-input matrix, as data: what a user can get wrong, and what must still work.

Each case is Python run inside the page with ``sess`` (a session of ``model`` on
the case's provider), ``X``/``Z``/``GOOD`` (good feeds) and helpers from
``PRELUDE`` in scope. ``expect`` is the exception class name, or ``"ok"`` when the
case must succeed (its code asserts the result). After every case, the runner
checks that the next good run on the same session gives the right answer.
"""

from __future__ import annotations

from dataclasses import dataclass

BOTH = ("wasm", "webgpu")
GPU = ("webgpu",)


@dataclass(frozen=True)
class Case:
    code: str
    expect: str
    words: tuple[str, ...] = ()
    model: str = "sym"
    eps: tuple[str, ...] = BOTH


CASES: dict[str, Case] = {
    # -- feeds ------------------------------------------------------------------------
    "unknown_input_name": Case('await sess.run_async(None, {"q": X, "x": X, "z": Z})',
                               "InvalidArgument", ("'q'", "'x'", "'z'")),
    "missing_input": Case('await sess.run_async(None, {"x": X})', "InvalidArgument",
                          ("missing", "'z'", "tensor(float)")),
    "extra_input": Case('await sess.run_async(None, {**GOOD, "extra": X})', "InvalidArgument",
                        ("'extra'", "inputs are")),
    "none_value": Case('await sess.run_async(None, {"x": None, "z": Z})', "InvalidArgument",
                       ("'x'", "None", "float32")),
    # A list is converted as native onnxruntime converts it; a tuple is refused, as
    # native refuses it.
    "python_list": Case(
        '(y,) = await sess.run_async(None, {"x": X.tolist(), "z": Z.tolist()})\n'
        '(want,) = await sess.run_async(None, GOOD)\n'
        'assert y.tolist() == want.tolist(), (y, want)', "ok"),
    "python_tuple": Case('await sess.run_async(None, {"x": tuple(X.tolist()), "z": Z})',
                         "InvalidArgument", ("'x'", "tuple", "numpy.asarray")),
    "ragged_list": Case('await sess.run_async(None, {"x": [[1.0], [1.0, 2.0]], "z": Z})',
                        "InvalidArgument", ("'x'", "Could not create tensor")),
    "feed_not_a_dict": Case("await sess.run_async(None, [X, Z])", "InvalidArgument",
                            ("dict", "list")),
    "wrong_dtype": Case('await sess.run_async(None, {"x": X.astype(np.float64), "z": Z})',
                        "InvalidArgument", ("'x'", "float32", "float64")),
    "wrong_rank": Case('await sess.run_async(None, {"x": X[None], "z": Z})', "InvalidArgument",
                       ("'x'", "rank 2", "rank 3")),
    "wrong_fixed_dim": Case('await sess.run_async(None, {"x": np.ones((2, 5), np.float32), '
                            '"z": Z})', "InvalidArgument", ("'x'", "dimension 1 must be 4", "5")),
    # Native accepts feeds whose symbolic dims disagree, so ortweb passes them on:
    # the model's Add fails inside the runtime, which leaves the session usable.
    "inconsistent_symbolic_dim": Case(
        'await sess.run_async(None, {"x": X, "z": np.ones((3, 3), np.float32)})',
        "OrtRuntimeError", ()),
    "unknown_output_name": Case('await sess.run_async(["nope"], GOOD)', "InvalidArgument",
                                ("'nope'", "'y'")),
    "output_names_a_string": Case('await sess.run_async("y", GOOD)', "InvalidArgument",
                                  ("output_names", "str")),
    "tensor_larger_than_wasm_heap": Case(
        # A broadcast view: 1 GiB + 16 B of float32 that costs nothing until copied.
        'big = np.broadcast_to(np.float32(1), (2**26 + 1, 4))\n'
        'await sess.run_async(None, {"x": big, "z": np.broadcast_to(np.float32(1), '
        '(2**26 + 1, 3))})',
        "InvalidArgument", ("'x'", "GiB", "wasm heap")),
    "zero_size_tensors": Case(
        'out = await sess.run_async(None, {"x": np.ones((0, 4), np.float32), '
        '"z": np.ones((0, 3), np.float32)})\nassert out[0].shape == (0, 3), out[0].shape',
        "ok"),
    "nan_and_inf_pass_through": Case(
        'v = np.array([np.nan, np.inf, -np.inf, -0.0, 1.0, 5e-45], np.float32).reshape(2, 3)\n'
        '(y,) = await sess.run_async(None, {"x": v})\n'
        'assert y.tobytes() == v.tobytes(), (y, v)', "ok", model="identity"),
    "string_with_nul": Case(
        'await sess.run_async(None, {"x": np.array(["a\\x00b", "c"], dtype=object)})',
        "InvalidArgument", ("'x'", "NUL"), model="str"),
    "string_not_utf8": Case(
        'await sess.run_async(None, {"x": np.array([b"\\xff\\xfe", b"ok"], dtype=object)})',
        "InvalidArgument", ("'x'", "UTF-8"), model="str"),
    "string_tensors_on_webgpu": Case(
        '(y,) = await sess.run_async(None, {"x": np.array(["é", "日本"], dtype=object)})\n'
        'assert y.tolist() == ["é", "日本"], y', "ok", model="str"),
    # -- models -----------------------------------------------------------------------
    "corrupt_model_bytes": Case(
        "bad = bytearray(MODEL_BYTES['mlp']); bad[40:120] = b'\\xff' * 80\n"
        "await ortweb.InferenceSession.create(bytes(bad), providers=[EP])",
        "InvalidGraph", ("create session",)),
    "truncated_model": Case(
        "await ortweb.InferenceSession.create(MODEL_BYTES['mlp'][:300], providers=[EP])",
        "InvalidGraph", ("create session",)),
    "not_an_onnx_file": Case(
        "await ortweb.InferenceSession.create(b'\\x89PNG\\r\\n\\x1a\\n' + bytes(64), "
        "providers=[EP])", "InvalidGraph", ("create session",)),
    "missing_model_path": Case(
        "await ortweb.InferenceSession.create('no/such/model.onnx', providers=[EP])",
        "NoSuchFile", ("no/such/model.onnx",)),
    "model_url_404": Case(
        "await ortweb.InferenceSession.create(js.location.origin + '/missing.onnx', "
        "providers=[EP])", "NoSuchFile", ("404", "missing.onnx")),
    "op_the_webgpu_ep_lacks": Case(
        "s = await ortweb.InferenceSession.create(MODELS['unsupported'], providers=['webgpu'])\n"
        "xs = np.array([[0.5, 2.5, -1.5, 3.7, 0.2], [9.0, -2.2, 4.4, 1.1, 0.0]], np.float32)\n"
        "values, indices, rounded = await s.run_async(None, {'x': xs})\n"
        "assert rounded.tolist() == np.round(xs).tolist(), rounded\n"
        "assert indices.tolist() == [[3, 1], [0, 2]], indices\n"
        "assert s.provider_report.cpu_nodes, str(s.provider_report)\n"
        "await s.close_async()", "ok", eps=GPU),
    "float16_without_shader_f16": Case(
        "s = await ortweb.InferenceSession.create(MODELS['f16'], providers=['webgpu', 'wasm'])\n"
        "(y, y32) = await s.run_async(None, {'x': np.ones((2, 3), np.float16)})\n"
        "assert y.tolist() == [[2.5] * 3] * 2, y\n"
        "assert s.provider == 'webgpu' or 'shader-f16' in s.skipped_providers['webgpu']\n"
        "await s.close_async()", "ok", eps=GPU),
    # -- GPU bindings --------------------------------------------------------------------
    "prealloc_output_wrong_dims": Case(
        "t = await OrtValue.ortvalue_from_shape_and_type_async([3, 2], np.float32, 'webgpu')\n"
        "try:\n    sess.io_binding().bind_ortvalue_output('double', t)\nfinally:\n"
        "    t.dispose()", "InvalidArgument", ("'double'", "dimension 0 must be 2"),
        model="two", eps=GPU),
    "prealloc_output_wrong_dtype": Case(
        "t = await OrtValue.ortvalue_from_shape_and_type_async([2, 2], np.int32, 'webgpu')\n"
        "try:\n    sess.io_binding().bind_ortvalue_output('double', t)\nfinally:\n"
        "    t.dispose()", "InvalidArgument", ("'double'", "tensor(int32)"),
        model="two", eps=GPU),
    "prealloc_buffer_too_small": Case(
        "sess.io_binding().bind_output('double', 'webgpu', element_type=np.float32, "
        "shape=[2, 2], buffer_ptr=gpu_buffer(np.zeros(2, np.float32)))",
        "InvalidArgument", ("holds 8 bytes", "needs 16"), model="two", eps=GPU),
    "gpu_buffer_without_storage_usage": Case(
        "OrtValue.from_gpu_buffer(gpu_buffer(X2, usage=Usage.COPY_DST | Usage.COPY_SRC), "
        "np.float32, [2, 2])", "InvalidArgument", ("STORAGE",), model="two", eps=GPU),
    "gpu_buffer_from_another_device": Case(
        "other = await (await js.navigator.gpu.requestAdapter()).requestDevice()\n"
        "v = OrtValue.from_gpu_buffer(gpu_buffer(X2, dev=other), np.float32, [2, 2])\n"
        "try:\n    await sess.run_async(None, {'x': v})\nfinally:\n"
        "    v.dispose(); other.destroy()", "InvalidArgument", ("'x'", "another GPUDevice"),
        model="two", eps=GPU),
    "gpu_buffer_destroyed": Case(
        "b = gpu_buffer(X2); v = OrtValue.from_gpu_buffer(b, np.float32, [2, 2]); b.destroy()\n"
        "try:\n    await sess.run_async(None, {'x': v})\nfinally:\n    v.dispose()",
        "InvalidArgument", ("'x'", "destroyed"), model="two", eps=GPU),
    "use_after_dispose": Case(
        "v = await OrtValue.ortvalue_from_numpy_async(X2, EP if EP == 'webgpu' else 'cpu')\n"
        "v.dispose()\nv.numpy()", "InvalidArgument", ("disposed",), model="two"),
    "double_dispose": Case(
        "v = await OrtValue.ortvalue_from_numpy_async(X2, EP if EP == 'webgpu' else 'cpu')\n"
        "v.dispose(); v.dispose()\nassert v.is_disposed", "ok", model="two"),
    "session_used_after_close": Case(
        "s = await ortweb.InferenceSession.create(MODELS['two'], providers=[EP])\n"
        "await s.close_async(); await s.close_async()\nawait s.run_async(None, {'x': X2})",
        "SessionClosed", ("closed",), model="two"),
    # -- concurrency and control flow ---------------------------------------------------------
    "two_concurrent_runs": Case(
        "a, b = await asyncio.gather(sess.run_async(None, {'x': X2}), "
        "sess.run_async(None, {'x': -X2}))\n"
        "assert a[0].tolist() == (X2 * 2).tolist() and b[0].tolist() == (-X2 * 2).tolist()",
        "ok", model="two"),
    "run_cancelled_from_asyncio": Case(
        # A wasm run settles within the microtasks of the step that starts it, and
        # wakes its task at once: hold the page's ORT queue so that the run is still
        # waiting when the task is cancelled.
        "before = ortweb.live_handles()\n"
        "queue = (await run_js(\"import('/bridge/queue.js')\")).pageQueue\n"
        "run_js('(q) => { q.run(() => new Promise((ok) => setTimeout(ok, 50))); }')(queue)\n"
        "task = asyncio.ensure_future(sess.run_async(None, {'x': X2}))\n"
        "await asyncio.sleep(0)\nassert not task.done()\ntask.cancel()\n"
        "try:\n    await task\nexcept asyncio.CancelledError:\n    cancelled = True\n"
        "assert cancelled\n"
        "for _ in range(100):\n    await asyncio.sleep(0.01)\n"
        "    if ortweb.live_handles() == before:\n        break\n"
        "assert ortweb.live_handles() == before, (before, ortweb.live_handles())\n"
        "raise asyncio.CancelledError('checked')", "CancelledError", model="two"),
    "run_with_gpu_outputs_cancelled": Case(
        # What ORT made on the GPU for a cancelled run has no owner: the bridge
        # disposes of it when the run settles.
        "g = await ortweb.InferenceSession.create(MODELS['two'], providers=['webgpu'], "
        "preferred_output_location='gpu-buffer')\n"
        "before = ortweb.live_handles()['gpu_tensors']\n"
        "queue = (await run_js(\"import('/bridge/queue.js')\")).pageQueue\n"
        "run_js('(q) => { q.run(() => new Promise((ok) => setTimeout(ok, 50))); }')(queue)\n"
        "task = asyncio.ensure_future(g.run_async(None, {'x': X2}))\n"
        "await asyncio.sleep(0)\nassert not task.done()\ntask.cancel()\n"
        "try:\n    await task\nexcept asyncio.CancelledError:\n    pass\n"
        "else:\n    raise AssertionError('the run was not cancelled')\n"
        "for _ in range(300):  # until the cancelled run has run and settled\n"
        "    await asyncio.sleep(0.01)\n"
        "    if ortweb._bridge.stats()['queued'] == 0:\n        break\n"
        "await asyncio.sleep(0.05)\n"
        "assert ortweb._bridge.stats()['queued'] == 0\n"
        "after = ortweb.live_handles()['gpu_tensors']\n"
        "(d, *rest) = await g.run_async(None, {'x': X2})\n"
        "assert d.numpy().tolist() == (X2 * 2).tolist()\n"
        "for v in (d, *rest):\n    v.dispose()\n"
        "await g.close_async()\n"
        "assert after == before, (before, after)", "ok", model="two", eps=GPU),
    "exception_inside_user_callback": Case(
        # JS calls back into Python (as a page's event handler would); the callback's
        # error reaches the JS caller with its traceback and ortweb is unaffected.
        "def callback(v):\n    raise ValueError(f'user callback failed on {v}')\n"
        "proxy = create_proxy(callback)\n"
        "try:\n    outcome = await run_js('async (f) => { try { f(7); return \"no error\"; } '\n"
        "        'catch (e) { return String(e.message); } }')(proxy)\nfinally:\n"
        "    proxy.destroy()\n"
        "assert 'user callback failed on 7' in outcome and 'ValueError' in outcome, outcome",
        "ok", model="two"),
}
