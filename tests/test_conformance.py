"""A fast subset of the ONNX backend node tests through ortweb in the browser, vs native.

The full suites run with ``ortweb conformance``; here a few dozen node cases cover
every dtype ortweb carries, each kind of status, a listed known failure, and a
page that hangs or crashes in the middle of a batch.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from onnx import TensorProto as T
from onnx import helper as h

from ortweb.host.conformance import cases as C
from ortweb.host.conformance import protos
from ortweb.host.conformance.classify import CARRIED_TYPES, Status
from ortweb.host.conformance.report import KnownFailures, default_known_failures_path
from ortweb.host.conformance.runner import run_browser, run_conformance

P, F, N, U = Status.PASS, Status.FAIL, Status.NATIVE_FAILS, Status.UNSUPPORTED
EITHER = frozenset({P, U})  # float16 on WebGPU: needs shader-f16 (SwiftShader lacks it)

#: node case → (status on wasm, status on webgpu), as measured on onnxruntime-web 1.30.0.
SUBSET: dict[str, tuple[Status, Status | frozenset[Status]]] = {
    # float32
    "test_abs": (P, P),
    "test_conv_with_strides_padding": (P, P),
    "test_softmax_axis_1": (P, P),
    "test_matmul_2d": (P, P),
    "test_argmax_default_axis_example": (P, P),  # + int64
    # float64
    "test_bitcast_float64_to_int64": (P, P),
    "test_castlike_FLOAT_to_DOUBLE": (P, U),  # the C++ WebGPU build has no CPU Cast to double
    "test_cumsum_1d": (P, U),
    # float16
    "test_castlike_FLOAT16_to_FLOAT": (P, EITHER),
    "test_isnan_float16": (P, EITHER),
    # int8, int16, int32
    "test_add_int8": (P, P),
    "test_clip_default_int8_min": (P, P),
    "test_add_int16": (P, U),
    "test_bitcast_uint16_to_int16": (P, P),
    "test_bitwise_and_i32_2d": (P, P),
    "test_blackmanwindow": (P, P),
    # uint8, uint16, uint32, uint64
    "test_add_uint8": (P, P),
    "test_dynamicquantizelinear": (P, P),
    "test_add_uint16": (P, U),
    "test_add_uint32": (P, P),
    "test_max_uint32": (P, P),
    "test_add_uint64": (P, P),
    "test_bitwise_and_ui64_bcast_3v1d": (P, P),
    # bool, string
    "test_and2d": (P, P),
    "test_string_concat": (P, U),
    "test_regex_full_match_basic": (P, U),
    "test_equal_string": (P, U),
    # unsupported: types the browser cannot take, a model newer than ORT-web, a kernel
    # the wasm build lacks
    "test_cast_FLOAT_to_BFLOAT16": (U, U),
    "test_cast_FLOAT_to_INT4": (U, U),
    "test_sequence_map_identity_1_sequence": (U, U),
    "test_bitshift_left_int16": (U, U),
    "test_clip_default_int8_max_expanded": (U, U),
    # native onnxruntime fails too
    "test_convinteger_with_padding": (N, N),
    # listed in tests/conformance/known_failures.toml
    "test_rms_normalization_2d_axis0_expanded": (F, F),
    "test_reduce_max_empty_set": (P, F),
}


def _expected(ep: str, name: str) -> frozenset[Status]:
    want = SUBSET[name][0 if ep == "wasm" else 1]
    return want if isinstance(want, frozenset) else frozenset({want})


def test_subset_covers_every_carried_dtype():
    cases = C.load_cases(["node"], names=SUBSET)
    assert sorted(c.name for c in cases) == sorted(SUBSET)
    passing = {t for c in cases if SUBSET[c.name][0] is P
               for t in [v.type for v in c.inputs + c.outputs]}
    assert passing >= CARRIED_TYPES, sorted(CARRIED_TYPES - passing)


@pytest.fixture(scope="module")
def subset() -> list[C.Case]:
    return C.load_cases(["node"], names=SUBSET)


@pytest.mark.parametrize("ep", ["wasm", pytest.param("webgpu", marks=pytest.mark.webgpu)])
def test_fast_subset(ortweb_runtime, subset, ep):
    known = KnownFailures.load(default_known_failures_path())
    results = run_conformance(ortweb_runtime, subset, [ep], known=known.lookup, log=lambda _: None)
    got = {r.case.name: r for r in results[ep][0]}
    wrong = {n: (str(r.status), r.verdict.reason) for n, r in got.items()
             if r.status not in _expected(ep, n)}
    assert not wrong, wrong
    unexpected = [(n, r.verdict.reason) for n, r in got.items() if r.unexpected]
    assert not unexpected, unexpected
    for name, result in got.items():
        if result.status is Status.PASS:
            # A pass is real outputs within the tolerance, not a skipped comparison.
            assert result.verdict.browser is not None and result.verdict.browser.ok
            assert result.browser is not None and result.browser.details["provider"] == ep
        if result.status is Status.UNSUPPORTED:
            assert result.verdict.reason, name
    rms = got["test_rms_normalization_2d_axis0_expanded"]
    assert rms.known and "lenient merge" in rms.known
    assert "bfloat16" in got["test_cast_FLOAT_to_BFLOAT16"].verdict.reason
    assert "IR version 14" in got["test_bitshift_left_int16"].verdict.reason
    strings = got["test_string_concat"]
    if ep == "wasm":
        assert strings.browser is not None and strings.browser.outputs is not None
        assert strings.browser.outputs[0].dtype == object


def _case(name: str, graph: Any, feeds: list[np.ndarray], expected: list[np.ndarray]) -> C.Case:
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 17)], ir_version=8)
    inputs, outputs = protos.graph_values(model)
    return C.Case("node", name, model.SerializeToString(), inputs, outputs, feeds, expected)


def _endless_loop() -> C.Case:
    """A Loop of 10**15 cheap steps: ORT-web's wasm never yields, the page hangs."""
    body = h.make_graph(
        [h.make_node("Identity", ["c"], ["c_out"]), h.make_node("Add", ["v", "one"], ["v_out"])],
        "body",
        [h.make_tensor_value_info("i", T.INT64, []), h.make_tensor_value_info("c", T.BOOL, []),
         h.make_tensor_value_info("v", T.FLOAT, [])],
        [h.make_tensor_value_info("c_out", T.BOOL, []),
         h.make_tensor_value_info("v_out", T.FLOAT, [])],
        [h.make_tensor("one", T.FLOAT, [], [1.0])],
    )
    graph = h.make_graph(
        [h.make_node("Loop", ["M", "cond", "x"], ["y"], body=body)], "endless",
        [h.make_tensor_value_info("x", T.FLOAT, [])], [h.make_tensor_value_info("y", T.FLOAT, [])],
        [h.make_tensor("M", T.INT64, [], [10**15]), h.make_tensor("cond", T.BOOL, [], [True])],
    )
    return _case("endless_loop", graph, [np.array(0, np.float32)], [np.array(1e15, np.float32)])


def test_a_hung_page_is_replaced_and_the_case_marked(ortweb_runtime):
    cases = [C.load_case("node", "test_abs"), _endless_loop(), C.load_case("node", "test_add"),
             C.load_case("node", "test_acos")]
    logged: list[str] = []
    outcomes, pages = run_browser(ortweb_runtime, cases, "wasm", case_timeout=10, log=logged.append)
    hung = outcomes["node/endless_loop"]
    assert hung.error_type == "PageFailure" and "hung" in hung.error
    # One page more for each case that Chromium's renderer crashed under, run again.
    assert pages == 2 + sum("running it again alone" in line for line in logged), logged
    for name in ("test_abs", "test_add", "test_acos"):
        assert outcomes[f"node/{name}"].ok, outcomes[f"node/{name}"].error
    assert any("endless_loop" in line for line in logged)


@pytest.mark.parametrize("crashes", [1, 2])
def test_a_crashed_page_is_replaced_and_a_repeated_crash_marks_the_case(ortweb_runtime,
                                                                        crashes):
    """A crash runs its case again alone in a new page: once, it is the renderer's
    (the case passes); again, the case's (marked, and the rest of the batch passes)."""
    cases = [C.load_case("node", n) for n in ("test_abs", "test_add", "test_acos")]
    opened: list[Any] = []
    crashed: list[bool] = []

    def crash_pages() -> bool:
        # Crash the renderer while it holds test_abs: chrome://crash, once the page's
        # offline guard (which refuses any URL off the local server) is off.
        if len(crashed) < crashes and len(opened) > len(crashed):
            page = opened[len(crashed)].page
            crashed.append(True)
            page.context.unroute("**/*")
            with pytest.raises(Exception, match=r"ERR_ABORTED|crash"):
                page.goto("chrome://crash", timeout=10_000)
        return False

    logged: list[str] = []
    outcomes, pages = run_browser(ortweb_runtime, cases, "wasm", on_idle=crash_pages,
                                  on_page=opened.append, log=logged.append)
    assert len(crashed) == crashes and pages == crashes + 1
    assert any("node/test_abs [wasm]: the page crashed; running it again alone" in line
               for line in logged), logged
    failed = {k: v for k, v in outcomes.items() if not v.ok}
    if crashes == 1:
        assert failed == {}
    else:
        assert list(failed) == ["node/test_abs"], failed
        assert failed["node/test_abs"].error == "the page crashed"
    assert outcomes["node/test_add"].ok and outcomes["node/test_acos"].ok
