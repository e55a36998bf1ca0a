"""``ProviderPolicy(verify=...)`` on the host: the policy's checks and the report after a
fallback (the browser half is tests/test_verify.py)."""

from __future__ import annotations

import pytest

from ortweb import InvalidArgument, OrtWebError, OutputMismatch, ProviderPolicy
from ortweb._policy import plan_providers
from ortweb._report import ProviderAttempt, ProviderReport
from ortweb._verify import fallen_back


def test_verify_names_a_reference_wasm_by_default():
    plan = plan_providers(ProviderPolicy(order=["webgpu", "wasm"], verify=True))
    assert plan.verify == "wasm" and plan.verify_tolerance == (1e-3, 1e-5)
    assert plan.may_fall_back
    plan = plan_providers(ProviderPolicy(order=["webgpu"], verify="CPUExecutionProvider",
                                         verify_tolerance=(1e-2, 0)))
    assert plan.verify == "wasm" and plan.verify_tolerance == (1e-2, 0.0)
    assert "verify=" in plan.description
    assert plan_providers(ProviderPolicy(order=["webgpu", "wasm"])).verify is None


def test_verify_without_a_fallback_is_a_policy_that_raises():
    assert not plan_providers(ProviderPolicy(require="webgpu", verify=True)).may_fall_back
    assert not plan_providers(ProviderPolicy(order=["webgpu", "wasm"], fallback=False,
                                             verify=True)).may_fall_back
    assert issubclass(OutputMismatch, OrtWebError)


@pytest.mark.parametrize(("policy", "said"), [
    (ProviderPolicy(verify="nosuch"), "nosuch"),
    (ProviderPolicy(verify=3), "ProviderPolicy.verify: expected True, False or a provider"),  # type: ignore[arg-type]
    (ProviderPolicy(disallow=["wasm"], verify=True), "the reference 'wasm' is disallowed"),
    (ProviderPolicy(verify=True, verify_tolerance=(-1, 0)), "verify_tolerance: expected"),
    (ProviderPolicy(verify=True, verify_tolerance=1e-3), "verify_tolerance: expected"),  # type: ignore[arg-type]
])
def test_a_bad_verify_policy_is_named(policy, said):
    with pytest.raises(InvalidArgument, match=said.replace("(", r"\(")):
        plan_providers(policy)


def test_the_report_after_a_fallback_names_the_failed_verification():
    report = ProviderReport("webgpu", "native", "ProviderPolicy(...)", [
        ProviderAttempt("webgpu", "used"), ProviderAttempt("wasm", "not needed", "'webgpu' first")],
        cpu_nodes=["Shape (n)"], node_counts={"CPUExecutionProvider": 1})
    moved = fallen_back(report, {"provider": "wasm", "build": "wasm"}, "stateN differs")
    assert moved.provider == "wasm" and moved.build == "wasm" and moved.cpu_nodes == []
    assert [(a.provider, a.status) for a in moved.attempts] == [
        ("webgpu", "failed verification"), ("wasm", "used")]
    assert moved.reasons() == {"webgpu": "stateN differs"}
    assert "verify: stateN differs" in str(moved)
