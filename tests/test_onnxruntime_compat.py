"""``import onnxruntime`` in the page: native onnxruntime code, unchanged, on ortweb.

Outputs are compared with native onnxruntime on the host; every name of the
compatibility table is checked against the drop-in as the page has it.
"""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

from ortweb.host.native import run_native
from ortweb.testing import run_in_browser, samples

pytestmark = pytest.mark.browser


def _named_nodes_model() -> bytes:
    """x → Relu ('relu_node') → Neg ('neg_node'): nodes with names, to force one on the CPU."""
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["r"], name="relu_node"),
         helper.make_node("Neg", ["r"], ["y"], name="neg_node")],
        "named",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              producer_name="ortweb-tests")
    model.ir_version = 8
    return model.SerializeToString()


@pytest.fixture(scope="module")
def models(ortweb_module_page):
    put_file = ortweb_module_page.put_file
    return {
        "mlp": put_file("mlp.onnx", samples.mlp_model()),
        "two": put_file("two.onnx", samples.two_outputs_model()),
        "named": put_file("named.onnx", _named_nodes_model()),
        "junk": put_file("junk.onnx", b"this is not an onnx model at all"),
    }


@pytest.fixture(scope="module")
def batch() -> np.ndarray:
    return np.random.default_rng(3).standard_normal((5, 64)).astype(np.float32)


@pytest.fixture(scope="module")
def mlp_want(batch) -> np.ndarray:
    return run_native(samples.mlp_model(), {"x": batch})["probabilities"]


@pytest.fixture(scope="module")
def two_want() -> dict[str, np.ndarray]:
    x = np.arange(4, dtype=np.float32).reshape(2, 2)
    return run_native(samples.two_outputs_model(), {"x": x})


@run_in_browser
async def test_native_code_runs_unchanged(ortweb_page, models, batch, mlp_want, two_want):
    import warnings

    import numpy as np
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.log_severity_level = 3
    so.add_session_config_entry("session.disable_prepacking", "1")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sess = ort.InferenceSession(
            models["mlp"], sess_options=so,
            providers=[("CPUExecutionProvider", {}), "CUDAExecutionProvider"],
        )
    messages = [str(w.message) for w in caught]
    assert any("'CUDAExecutionProvider'" in m and "browser" in m for m in messages), messages
    assert sess.get_providers() == ["CPUExecutionProvider"]
    assert sess.get_provider_options() == {"CPUExecutionProvider": {}}
    assert sess.get_session_options() is so
    assert so.get_session_config_entry("session.disable_prepacking") == "1"
    # The skipped provider keeps its reason, beside ortweb's own.
    assert "browser" in sess.ortweb_session.skipped_providers["CUDAExecutionProvider"]
    inp = sess.get_inputs()[0]
    assert (inp.name, inp.type, inp.shape) == ("x", "tensor(float)", ["batch", 64])
    assert sess.get_outputs()[0].name == "probabilities"
    (probs,) = sess.run(None, {inp.name: batch})
    np.testing.assert_allclose(probs, mlp_want, rtol=1e-5, atol=1e-6)
    (again,) = sess.run(["probabilities"], {"x": ort.OrtValue.ortvalue_from_numpy(batch)})
    np.testing.assert_allclose(again, mlp_want, rtol=1e-5, atol=1e-6)
    (value,) = sess.run_with_ort_values(None, {"x": ort.OrtValue.ortvalue_from_numpy(batch)})
    assert isinstance(value, ort.OrtValue) and value.shape() == [5, 10]
    np.testing.assert_allclose(value.numpy(), mlp_want, rtol=1e-5, atol=1e-6)
    assert sess.end_profiling() == ""
    assert isinstance(sess.get_modelmeta(), ort.ModelMetadata)

    # No providers: CPU here (providers=None takes ortweb's rule, which may pick WebGPU).
    two = ort.InferenceSession(models["two"], providers=["CPUExecutionProvider"])
    x = np.arange(4, dtype=np.float32).reshape(2, 2)
    negated, double = two.run(["negated", "double"], {"x": x})
    np.testing.assert_array_equal(negated, two_want["negated"])
    np.testing.assert_array_equal(double, two_want["double"])
    binding = two.io_binding()
    binding.bind_cpu_input("x", x)
    binding.bind_output("double")
    two.run_with_iobinding(binding)
    np.testing.assert_array_equal(binding.copy_outputs_to_cpu()[0], two_want["double"])
    assert isinstance(ort.IOBinding(two), ort.IOBinding)

    # run_async: the callback comes from the event loop once the run settles.
    import asyncio

    done = asyncio.get_running_loop().create_future()
    two.run_async(None, {"x": x}, lambda res, data, err: done.set_result((res, data, err)), "ud")
    res, data, err = await asyncio.wait_for(done, 60)
    assert (data, err) == ("ud", "")
    np.testing.assert_array_equal(res[0], two_want["double"])

    # set_providers re-creates the session; RunOptions as native's.
    two.set_providers(["CPUExecutionProvider"])
    ro = ort.RunOptions()
    ro.logid = "tagged"
    ro.log_severity_level = 3
    ro.add_run_config_entry("ortweb.test.entry", "1")
    assert ro.get_run_config_entry("ortweb.test.entry") == "1"
    np.testing.assert_array_equal(two.run(["double"], {"x": x}, ro)[0], two_want["double"])


@run_in_browser
async def test_exceptions_are_caught_by_native_names(ortweb_page, models, two_want):
    import numpy as np
    import onnxruntime as ort
    from onnxruntime.capi import _pybind_state as C
    from onnxruntime.capi.onnxruntime_pybind11_state import (
        EPFail,
        Fail,
        InvalidArgument,
        InvalidGraph,
        InvalidProtobuf,
        NoSuchFile,
        NotImplemented,
    )

    import ortweb

    assert C.Fail is Fail and C.InvalidArgument is InvalidArgument
    sess = ort.InferenceSession(models["two"], providers=["CPUExecutionProvider"])
    x = np.ones((2, 2), np.float32)
    caught = []
    try:
        sess.run(None, {"nope": x})
    except InvalidArgument as exc:
        caught.append(("feed", str(exc)))
    try:
        sess.run(None, {"x": np.ones((3, 2), np.float32)})
    except InvalidArgument as exc:
        caught.append(("shape", str(exc)))
    try:
        ort.InferenceSession("/no/such/model.onnx")
    except NoSuchFile as exc:
        caught.append(("file", str(exc)))
    for cls in (InvalidProtobuf, InvalidGraph):
        try:
            ort.InferenceSession(models["junk"], providers=["CPUExecutionProvider"])
        except cls as exc:
            caught.append(("junk", type(exc).__name__))
    ro = ort.RunOptions()
    ro.terminate = True
    try:
        sess.run(None, {"x": x}, ro)
    except Fail as exc:
        caught.append(("terminate", str(exc)))
    so = ort.SessionOptions()
    try:
        so.register_custom_ops_library("libcustom_ops.so")
    except NotImplemented as exc:
        caught.append(("custom ops", str(exc)))
        assert isinstance(exc, NotImplementedError)
    try:
        so.get_session_config_entry("missing")
    except RuntimeError as exc:
        caught.append(("config", str(exc)))
    # No fallback to CPU: a provider the browser lacks leaves nothing to run on.
    sess.disable_fallback()
    try:
        sess.set_providers(["CUDAExecutionProvider"])
    except EPFail as exc:
        caught.append(("epfail", str(exc)))
    sess.enable_fallback()
    kinds = [k for k, _ in caught]
    assert kinds == ["feed", "shape", "file", "junk", "junk", "terminate", "custom ops",
                     "config", "epfail"], caught
    text = dict(caught)
    assert "'nope'" in text["feed"] and "'/no/such/model.onnx'" in text["file"]
    assert "terminate" in text["terminate"]
    assert "shared libraries" in text["custom ops"]
    assert "missing" in text["config"]
    # The native names are ortweb's classes, so ortweb's own handlers agree.
    assert InvalidArgument is ortweb.InvalidArgument and EPFail is ortweb.ProviderUnavailable
    # After every refusal the session still runs, with the options that were refused on.
    np.testing.assert_array_equal(sess.run(["double"], {"x": x})[0], 2 * x)
    again = ort.InferenceSession(models["two"], so, providers=["CPUExecutionProvider"])
    assert again.run(None, {"x": x})[1].tolist() == (-x).tolist()


@run_in_browser
async def test_provider_options(ortweb_page, models):
    import warnings

    import onnxruntime as ort
    from onnxruntime.capi.onnxruntime_pybind11_state import InvalidArgument

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sess = ort.InferenceSession(
            models["two"], providers=["CPUExecutionProvider"],
            provider_options=[{"arena_extend_strategy": "kSameAsRequested"}],
        )
    messages = [str(w.message) for w in caught]
    assert any("arena_extend_strategy" in m and "CPUExecutionProvider" in m
               for m in messages), messages
    assert sess.get_provider_options() == {"CPUExecutionProvider": {}}
    for bad in ({"preferredLayout": "NWHC"}, {"validationMode": 3}):
        try:
            ort.InferenceSession(models["two"], providers=[("WebGpuExecutionProvider", bad)])
            message = "no error"
        except InvalidArgument as exc:
            message = str(exc)
        assert repr(next(iter(bad))) in message and repr(next(iter(bad.values()))) in message
    for providers, options in ((["CPUExecutionProvider"], [{}, {}]),
                               ([("CPUExecutionProvider", {})], [{}])):
        try:
            ort.InferenceSession(models["two"], providers=providers, provider_options=options)
            message = "no error"
        except ValueError as exc:  # native raises ValueError; ortweb's InvalidArgument is one
            message = str(exc)
        assert "provider" in message, message


@pytest.mark.webgpu
@run_in_browser
async def test_webgpu_by_its_native_name(ortweb_page, models):
    import warnings

    import numpy as np
    import onnxruntime as ort

    assert ort.get_available_providers() == ["WebGpuExecutionProvider", "CPUExecutionProvider"]
    assert ort.get_device() == "CPU"
    options = {"preferredLayout": "NHWC", "validationMode": "full",
               "forceCpuNodeNames": "relu_node", "enableGraphCapture": "1"}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sess = ort.InferenceSession(
            models["named"], providers=[("WebGpuExecutionProvider", options),
                                        "CPUExecutionProvider"])
    messages = [str(w.message) for w in caught]
    assert any("enableGraphCapture" in m for m in messages), messages
    assert sess.get_providers() == ["WebGpuExecutionProvider", "CPUExecutionProvider"]
    assert sess.get_provider_options()["WebGpuExecutionProvider"] == {
        "preferredLayout": "NHWC", "validationMode": "full", "forceCpuNodeNames": "relu_node"}
    # forceCpuNodeNames reached onnxruntime-web: it placed exactly that node on the CPU.
    report = sess.ortweb_session.provider_report
    assert any("relu_node" in n for n in report.cpu_nodes), str(report)
    assert not any("neg_node" in n for n in report.cpu_nodes), str(report)
    x = np.array([[-1, 2, -3], [4, -5, 6]], np.float32)
    (y,) = sess.run(None, {"x": x})
    np.testing.assert_array_equal(y, -np.maximum(x, 0))


@run_in_browser
async def test_package_metadata_and_module_functions(ortweb_page):
    import importlib.metadata

    import onnxruntime as ort

    import ortweb

    assert importlib.metadata.version("onnxruntime") == ortweb.runtime_info()["onnxruntime_web"]
    dist = importlib.metadata.distribution("onnxruntime")
    assert sorted(dist.requires or []) == ["numpy", "ortweb"]
    assert ort.__version__ == ort.version == ort.get_version_string()
    assert ortweb.runtime_info()["onnxruntime_web"] == ort.__version__
    assert ort.package_name == "onnxruntime" and ort.has_collective_ops() is False
    assert "onnxruntime-web" in ort.get_build_info()
    assert ort.get_all_providers()[-1] == "CPUExecutionProvider"
    assert ort.get_available_providers()[-1] == "CPUExecutionProvider"
    for call in (lambda: ort.set_seed(7), ort.preload_dlls, ort.enable_telemetry_events,
                 ort.disable_telemetry_events):
        assert call() is None
    # The default logger severity is what SessionOptions and RunOptions left at -1 get.
    ort.set_default_logger_severity(4)
    try:
        assert ort.SessionOptions().to_ort()["logSeverityLevel"] == 4
        assert ort.RunOptions().to_ort()["logSeverityLevel"] == 4
    finally:
        ort.set_default_logger_severity(2)
    so = ort.SessionOptions()
    so.logid = "mine"
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_LAYOUT
    opts = so.to_ort()
    assert opts["logId"] == "mine" and opts["graphOptimizationLevel"] == "layout"


@run_in_browser
async def test_every_table_entry_holds_in_the_page(ortweb_page, models):
    import numpy as np
    import onnxruntime as ort
    from onnxruntime._compat_table import CLASSES, TABLE, status
    from onnxruntime.capi import onnxruntime_pybind11_state as state

    import ortweb

    sess = ort.InferenceSession(models["two"], providers=["CPUExecutionProvider"])
    instances = {
        "InferenceSession": sess,
        "SessionOptions": ort.SessionOptions(),
        "RunOptions": ort.RunOptions(),
        "OrtValue": ort.OrtValue.ortvalue_from_numpy(np.ones(2, np.float32)),
        "IOBinding": sess.io_binding(),
        "NodeArg": sess.get_inputs()[0],
        "ModelMetadata": sess.get_modelmeta(),
        "GraphOptimizationLevel": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
        "ExecutionMode": ort.ExecutionMode.ORT_SEQUENTIAL,
        "ExecutionOrder": ort.ExecutionOrder.DEFAULT,
    }
    assert set(instances) == set(CLASSES)
    problems = []
    for name in TABLE:
        state_, note = status(name)
        if name.startswith("capi.onnxruntime_pybind11_state."):
            short = name.rsplit(".", 1)[1]
            target = note.removeprefix("ortweb.errors.")
            if getattr(state, short, None) is not getattr(ortweb.errors, target):
                problems.append(f"{name} is not ortweb.errors.{target}")
            continue
        owner, _, member = name.rpartition(".")
        obj = instances[owner] if owner else ort
        there = hasattr(obj, member)
        if state_ == "absent":
            if there:
                problems.append(f"{name} is there but the table says absent")
            continue
        if not there:
            problems.append(f"{name} is missing ({state_})")
            continue
        if state_ == "refused":
            try:
                getattr(obj, member)()
                problems.append(f"{name} did not raise")
            except ort.capi.onnxruntime_pybind11_state.NotImplemented as exc:
                if note not in str(exc):
                    problems.append(f"{name} raised without the table's reason: {exc}")
    assert not problems, problems
    # The refusals left the session as it was.
    assert sess.run(["double"], {"x": np.ones((2, 2), np.float32)})[0].tolist() == [[2, 2]] * 2
