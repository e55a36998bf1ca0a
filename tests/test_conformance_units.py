"""Host unit tests of the conformance cases, comparisons, classification and report."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest

from ortweb.host.conformance import cases as C
from ortweb.host.conformance import protos
from ortweb.host.conformance.classify import (
    CARRIED_TYPES,
    Outcome,
    Status,
    classify,
    static_unsupported,
)
from ortweb.host.conformance.compare import compare_values
from ortweb.host.conformance.reasons import (
    essence,
    load_webgpu_ops,
    ops_off_webgpu,
    unsupported_from_error,
)
from ortweb.host.conformance.report import (
    KnownFailures,
    default_known_failures_path,
    summary_line,
)
from ortweb.host.conformance.runner import make_batches

# Messages exactly as onnxruntime-web 1.30.0 gave them in the conformance run.
_MSG_IR = ("create session: Can't create a session. ERROR_CODE: 1, ERROR_MESSAGE: "
           "/mnt/azure_nvme_temp/_work/1/s/onnxruntime/core/graph/model.cc:203 "
           "onnxruntime::Model::Model(ModelProto &&, const PathString &, const "
           "IOnnxRuntimeOpSchemaRegistryList *, const logging::Logger &, const ModelOptions &) "
           "Unsupported model IR version: 14, max supported IR version: 13")
_MSG_NO_PROVIDER = (
    "create session: Can't create a session. ERROR_CODE: 1, ERROR_MESSAGE: "
    "/mnt/azure_nvme_temp/_work/1/s/onnxruntime/core/optimizer/transformer_memcpy.cc:254 bool "
    "onnxruntime::TransformerMemcpyImpl::IsNodeCompatibleWithProvider(const onnxruntime::Node &)"
    " const !node_provider_type.empty() was false. Provider type for Add node with name '' is "
    "not set.")
_MSG_REDUCE = (
    "run: failed to call OrtRun(). ERROR_CODE: 1, ERROR_MESSAGE: /mnt/azure_nvme_temp/_work/1/"
    "s/onnxruntime/core/providers/webgpu/reduction/reduction_ops.h:94 Status "
    "onnxruntime::webgpu::ReduceKernel<>::CheckInput(const Tensor *) const [allow_multi_axes = "
    "true] input_tensor != nullptr && (input_tensor->Shape().Size() > 0 || allow_empty_input_) "
    "was false. Input tensor cannot be null or empty")


def _docs() -> Path:
    from ortweb.host.build.assets import find_assets

    return find_assets().ort_package / "docs" / "webgpu-operators.md"


# -- cases --------------------------------------------------------------------------


def test_node_suite_has_every_generated_case():
    names = C.case_names("node")
    # onnx==1.23.2 is pinned in pyproject.toml; its generator makes 1,884 node cases.
    assert len(names) == 1884
    assert names == sorted(names) and "test_abs" in names


def test_node_case_is_data_matching_its_model():
    case = C.load_case("node", "test_abs")
    model = onnx.load_model_from_string(case.model)
    assert [v.name for v in model.graph.input] == case.feed_names == ["x"]
    assert case.inputs[0].type == "tensor(float)" and case.outputs[0].type == "tensor(float)"
    np.testing.assert_array_equal(case.expected[0], np.abs(case.feeds[0]))
    assert (case.rtol, case.atol) == (1e-3, 1e-7)
    assert case.ops == [("ai.onnx", "Abs", model.opset_import[0].version)]
    assert case.id == "node/test_abs"


def test_node_cases_keep_strings_sequences_optionals_and_exotic_types():
    strings = C.load_case("node", "test_string_concat")
    assert strings.feeds[0].dtype == object and isinstance(strings.feeds[0].flat[0], str)
    seq = C.load_case("node", "test_sequence_map_identity_1_sequence")
    assert seq.inputs[0].type == "seq(tensor(float))" and isinstance(seq.feeds[0], list)
    opt = C.load_case("node", "test_optional_has_element_empty_optional_input")
    assert opt.inputs[0].type.startswith("optional(") and opt.feeds[0] is None
    bf16 = C.load_case("node", "test_cast_FLOAT_to_BFLOAT16")
    assert bf16.outputs[0].type == "tensor(bfloat16)"
    assert bf16.expected[0].dtype.name == "bfloat16"


def test_value_files_round_trip_through_protobuf():
    tensor_type = onnx.helper.make_tensor_type_proto(onnx.TensorProto.FLOAT, [2])
    seq_type = onnx.helper.make_sequence_type_proto(tensor_type)
    opt_type = onnx.helper.make_optional_type_proto(tensor_type)
    str_type = onnx.helper.make_tensor_type_proto(onnx.TensorProto.STRING, [2])
    values = [
        (np.array([1.5, -2.0], np.float32), tensor_type),
        ([np.array([1.0, 2.0], np.float32), np.array([3.0, 4.0], np.float32)], seq_type),
        (np.array([7.0, 8.0], np.float32), opt_type),
        (np.array(["héllo", ""], dtype=object), str_type),
    ]
    for value, type_proto in values:
        back = protos.deserialize(protos.serialize(value, type_proto, "v"), type_proto)
        assert compare_values(back, protos.normalize(value), 0.0, 0.0).ok
    assert protos.type_string(seq_type) == "seq(tensor(float))"
    assert protos.type_string(opt_type) == "optional(tensor(float))"


def test_light_case_uses_the_runner_inputs_and_model_tolerances():
    case = C.load_case("light", "test_densenet121")
    x = case.feeds[0]
    assert x.shape == (1, 3, 224, 224) and x.dtype == np.float32
    n = x.size
    np.testing.assert_array_equal(x.reshape(-1)[:3], np.array([0, 1, 2], np.float32) / n)
    assert case.rtol == 2e-3  # onnx.backend.test.case.model gives densenet121 its own rtol
    assert case.expected[0].shape == (1, 1000, 1, 1)
    assert C.light_feed([2, None]).shape == (2, 1)


def test_model_suites_load():
    for suite, name in [("pytorch-converted", "test_AvgPool1d"),
                        ("pytorch-operator", "test_operator_add_broadcast"),
                        ("simple", "test_single_relu_model")]:
        case = C.load_case(suite, name)
        assert case.feeds and case.expected and case.suite == suite
        assert len(case.feed_names) == len(case.feeds)


def test_filter_and_names_select_cases():
    assert [c.name for c in C.load_cases(["node"], r"^test_abs$")] == ["test_abs"]
    assert [c.id for c in C.load_cases(["simple", "node"], names=["test_shrink"])] == [
        "simple/test_shrink"]
    assert C.load_cases(["node"], r"node/test_acosh$")[0].name == "test_acosh"
    with pytest.raises(ValueError, match="unknown suite"):
        C.load_case("nodes", "test_abs")


# -- comparing ------------------------------------------------------------------------


def test_compare_uses_the_backend_test_rule():
    want = np.array([1.0, 100.0, 0.0], np.float32)
    ok = want + np.array([1e-3, 0.1, 1e-7], np.float32) * 0.99
    bad = want + np.array([0.0, 0.0, 3e-7], np.float32)
    assert compare_values(ok, want, 1e-3, 1e-7).ok
    result = compare_values(bad, want, 1e-3, 1e-7)
    assert not result.ok and "1 of 3 elements" in result.problem
    assert result.max_abs == pytest.approx(3e-7, rel=1e-3)


def test_compare_nan_inf_dtype_shape_strings_sequences():
    nan = np.array([np.nan, np.inf, -np.inf], np.float64)
    assert compare_values(nan.copy(), nan, 1e-3, 1e-7).ok
    assert not compare_values(np.array([np.nan, np.inf, np.inf]), nan, 1e-3, 1e-7).ok
    assert not compare_values(np.array([0.0, np.inf, -np.inf]), nan, 1e3, 1e3).ok
    assert "dtype" in compare_values(np.zeros(3, np.float64), np.zeros(3, np.float32),
                                     1, 1).problem
    assert "shape" in compare_values(np.zeros(2), np.zeros(3), 1, 1).problem
    words = np.array(["a", "b"], dtype=object)
    assert compare_values(np.array(["a", "b"], dtype=object), words, 0, 0).ok
    assert not compare_values(np.array(["a", "c"], dtype=object), words, 1, 1).ok
    seq = [np.ones(2, np.float32), np.zeros(1, np.float32)]
    assert compare_values([s.copy() for s in seq], seq, 0, 0).ok
    assert not compare_values(seq[:1], seq, 0, 0).ok
    assert compare_values(None, None, 0, 0).ok and not compare_values(seq[0], None, 0, 0).ok
    big = np.array([2**62 + 1], np.int64)
    assert not compare_values(big - 1, big, 0.0, 0.0).ok


# -- classifying ----------------------------------------------------------------------


def test_static_unsupported_names_the_type():
    assert static_unsupported(C.load_case("node", "test_abs")) is None
    bf16 = static_unsupported(C.load_case("node", "test_cast_FLOAT_to_BFLOAT16"))
    assert bf16 is not None and "bfloat16" in bf16 and "no tensor type" in bf16
    int4 = static_unsupported(C.load_case("node", "test_cast_FLOAT_to_INT4"))
    assert int4 is not None and "int4" in int4 and "packed Uint8Array" in int4
    seq = static_unsupported(C.load_case("node", "test_sequence_map_identity_1_sequence"))
    assert seq is not None and "seq(tensor(float))" in seq
    assert {"tensor(float16)", "tensor(string)", "tensor(uint64)"} <= CARRIED_TYPES


def test_unsupported_from_error_reads_ort_web_messages():
    assert "IR version 14" in (unsupported_from_error("wasm", "OrtRuntimeError", _MSG_IR) or "")
    add16 = C.load_case("node", "test_add_int16")
    reason = unsupported_from_error("webgpu", "OrtRuntimeError", _MSG_NO_PROVIDER, add16,
                                    load_webgpu_ops(_docs()))
    assert reason is not None and "op Add with tensor(int16)" in reason
    assert "in ORT-web's WebGPU operator list, but not for these types" in reason
    no_kernel = ("create session: Can't create a session. ERROR_CODE: 9, ERROR_MESSAGE: Could "
                 "not find an implementation for Where(9) node with name ''")
    assert "op Where (opset 9)" in (unsupported_from_error("wasm", "x", no_kernel) or "")
    f16 = unsupported_from_error("webgpu", "ProviderUnavailable",
                                 "no execution provider available (webgpu: ... 'shader-f16' ...)")
    assert f16 is not None and "shader-f16" in f16
    # A kernel that throws on valid input is a failure, not "unsupported".
    assert unsupported_from_error("webgpu", "OrtRuntimeError", _MSG_REDUCE) is None
    assert essence(_MSG_REDUCE).startswith("input_tensor != nullptr")


def test_classify_precedence():
    case = C.load_case("node", "test_abs")
    good = Outcome(outputs=[case.expected[0].copy()])
    wrong = Outcome(outputs=[case.expected[0] + 1])
    err = Outcome(error="boom", error_type="OrtRuntimeError")
    assert classify(case, "wasm", good, good).status is Status.PASS
    assert classify(case, "wasm", good, wrong).status is Status.FAIL
    failed = classify(case, "wasm", good, err)
    assert failed.status is Status.FAIL and failed.reason == "OrtRuntimeError: boom"
    assert classify(case, "wasm", err, good).status is Status.NATIVE_FAILS
    assert classify(case, "wasm", wrong, good).status is Status.NATIVE_FAILS
    ir = Outcome(error=_MSG_IR, error_type="OrtRuntimeError")
    assert classify(case, "wasm", good, ir).status is Status.UNSUPPORTED
    bf16 = C.load_case("node", "test_cast_FLOAT_to_BFLOAT16")
    # The browser cannot take the type: unsupported, whatever native onnxruntime did.
    assert classify(bf16, "wasm", err, None).status is Status.UNSUPPORTED
    with pytest.raises(ValueError):
        classify(case, "wasm", good, None)


def test_webgpu_operator_list_is_parsed():
    ops = load_webgpu_ops(_docs())
    assert ops[("ai.onnx", "Add")] == 7 and ops[("com.microsoft", "Attention")] == 1
    assert ("ai.onnx", "Min") not in ops
    assert ops_off_webgpu(C.load_case("node", "test_min_example"), ops) == ["Min"]
    assert ops_off_webgpu(C.load_case("node", "test_abs"), ops) == []


# -- report ------------------------------------------------------------------------------


def test_summary_line_format():
    statuses = [Status.PASS] * 3 + [Status.FAIL] + [Status.NATIVE_FAILS] * 2 + [Status.UNSUPPORTED]
    assert summary_line("node", "wasm", statuses) == (
        "conformance node wasm: 3 passed, 1 failed, 2 native-fails, 1 unsupported (of 7)")


def test_known_failures_file(tmp_path):
    path = tmp_path / "known.toml"
    path.write_text('[[fail]]\nsuite = "node"\nep = "webgpu"\ncases = ["test_abs"]\n'
                    'reason = "because"\nupstream = "microsoft/onnxruntime#1"\n'
                    '[[fail]]\npattern = "test_acos.*"\nreason = "ours"\nowner = "ortweb"\n')
    known = KnownFailures.load(path)
    abs_case, acosh = C.load_case("node", "test_abs"), C.load_case("node", "test_acosh")
    assert known.lookup(abs_case, "webgpu") == "upstream: because (microsoft/onnxruntime#1)"
    assert known.lookup(abs_case, "wasm") is None
    assert known.lookup(acosh, "wasm") == "ortweb: ours"
    assert known.stale([abs_case, acosh], ["wasm"], {("node/test_acosh", "wasm")}) == []
    assert known.stale([acosh], ["wasm"], set()) == ["node/test_acosh [wasm]"]
    path.write_text('[[fail]]\ncases = ["x"]\n')
    with pytest.raises(ValueError, match="needs 'reason'"):
        KnownFailures.load(path)


def test_checked_in_known_failures_name_real_cases():
    known = KnownFailures.load(default_known_failures_path())
    assert known.entries
    for entry in known.entries:
        assert entry.reason.strip() and entry.owner in ("upstream", "ortweb")
        suites = C.SUITES if entry.suite == "*" else [entry.suite]
        names = {n for s in suites for n in C.case_names(s)}
        assert set(entry.cases) <= names, entry.cases
        if entry.pattern:
            assert any(__import__("re").fullmatch(entry.pattern, n) for n in names)


def test_batches_respect_count_and_size():
    cases = C.load_cases(["node"], r"^test_a")
    batches = make_batches(cases, max_cases=10, max_bytes=1 << 40)
    assert [c for b in batches for c in b] == cases and max(len(b) for b in batches) == 10
    tiny = make_batches(cases[:5], max_cases=100, max_bytes=1)
    assert [len(b) for b in tiny] == [1] * 5
