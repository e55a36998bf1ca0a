"""Execution-provider policy: which providers a session may try, in which order.

``providers=`` on :class:`ortweb.InferenceSession` takes:

- a list, tried in order (as onnxruntime does), falling back on failure;
- a :class:`ProviderPolicy` (order, disallow, require, fallback);
- ``"auto"``: measure every available provider on this model and keep the fastest
  (remembered per model, adapter and ORT-web version);
- None: the page default (``set_default_providers``), else the default rule,
  ``['webgpu', 'wasm']`` — WebGPU when the page has an adapter that can run the
  model's types, else wasm.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ._providers import normalize_provider, normalize_providers
from .errors import InvalidArgument

__all__ = ["Plan", "ProviderPolicy", "plan_providers"]


@dataclass(frozen=True)
class ProviderPolicy:
    """How a session chooses its execution provider.

    Parameters
    ----------
    order : sequence of str, optional
        Providers to try, best first (default: the default rule's order).
    disallow : sequence of str
        Providers that must never run this session.
    require : str, optional
        The session must run on this provider, or fail with ``ProviderUnavailable``
        naming why it cannot.
    fallback : bool
        When False, only the first allowed provider is tried.
    trust : mapping of str to sequence of str
        Provider → operators to try on it although its operator table says it gave
        wrong values in some case of the ONNX node suite, or ran none
        (``{"tract": ["MatMul"]}``): for a model whose use of them you have checked
        (``ortweb run --compare-native``).
    verify : bool or str
        Check the session's first run against a reference provider: True for
        ``'wasm'``, or a provider's name. Each output is compared as ``ortweb run
        --compare-native`` compares (``verify_tolerance``); on a difference the
        session falls back to the reference (and the provider is skipped for this
        model from then on), or, with ``require=`` or ``fallback=False``, the run
        raises :class:`~ortweb.errors.OutputMismatch`. See :mod:`ortweb._verify`.
    verify_tolerance : (float, float)
        ``(rtol, atol)`` of the comparison.
    """

    order: Sequence[str] | None = None
    disallow: Sequence[str] = ()
    require: str | None = None
    fallback: bool = True
    trust: Mapping[str, Sequence[str]] = field(default_factory=dict)
    verify: bool | str = False
    verify_tolerance: tuple[float, float] = (1e-3, 1e-5)


@dataclass
class Plan:
    """The providers to try, and why the others are out."""

    candidates: list[str]
    excluded: dict[str, str] = field(default_factory=dict)
    require: str | None = None
    auto: bool = False
    description: str = ""
    #: Provider → operators trusted on it (``ProviderPolicy.trust``).
    trust: dict[str, frozenset[str]] = field(default_factory=dict)
    #: The reference provider of ``ProviderPolicy.verify``, and its (rtol, atol).
    verify: str | None = None
    verify_tolerance: tuple[float, float] = (1e-3, 1e-5)
    fallback: bool = True

    @property
    def may_fall_back(self) -> bool:
        """Whether the session may move to another provider than its first choice."""
        return self.require is None and self.fallback


def plan_providers(providers: Any, default: Sequence[str] | None = None) -> Plan:
    """Turn a ``providers=`` argument into a :class:`Plan`.

    Raises
    ------
    InvalidArgument
        For unknown names, contradictions (a required provider that is also
        disallowed) or a policy that leaves nothing to try.
    """
    if isinstance(providers, str) and providers.lower() == "auto":
        return Plan(list(normalize_providers(None, default)), auto=True, description="auto")
    if not isinstance(providers, ProviderPolicy):
        order = normalize_providers(providers, default)
        return Plan(order, description=f"order {order}")
    policy = providers
    trust = _trust(policy.trust)
    verify = _verify(policy)
    order = normalize_providers(policy.order, default)
    disallow = [normalize_provider(p) for p in policy.disallow]
    excluded = {p: "disallowed by the provider policy" for p in order if p in disallow}
    require = None if policy.require is None else normalize_provider(policy.require)
    if require is not None:
        if require in disallow:
            raise InvalidArgument(f"providers: {require!r} is both required and disallowed")
        for p in order:
            if p != require and p not in excluded:
                excluded[p] = f"not tried: the policy requires {require!r}"
        return Plan([require], excluded, require=require, description=_describe(policy),
                    trust=trust, **verify)
    allowed = [p for p in order if p not in disallow]
    if not allowed:
        raise InvalidArgument(
            f"providers: every provider in {order} is disallowed by the policy; nothing can run"
        )
    if not policy.fallback:
        for p in allowed[1:]:
            excluded[p] = "not tried: fallback=False"
        allowed = allowed[:1]
    return Plan(allowed, excluded, description=_describe(policy), trust=trust,
                fallback=policy.fallback, **verify)


def _verify(policy: ProviderPolicy) -> dict[str, Any]:
    if policy.verify is False or policy.verify is None:
        return {}
    if policy.verify is not True and not isinstance(policy.verify, str):
        raise InvalidArgument(f"ProviderPolicy.verify: expected True, False or a provider's "
                              f"name, got {policy.verify!r}")
    reference = "wasm" if policy.verify is True else normalize_provider(policy.verify)
    if reference in [normalize_provider(p) for p in policy.disallow]:
        raise InvalidArgument(f"ProviderPolicy.verify: the reference {reference!r} is "
                              "disallowed by the same policy")
    tol = policy.verify_tolerance
    if (not isinstance(tol, tuple) or len(tol) != 2
            or not all(isinstance(t, (int, float)) and t >= 0 for t in tol)):
        raise InvalidArgument(f"ProviderPolicy.verify_tolerance: expected (rtol, atol), two "
                              f"numbers >= 0, got {tol!r}")
    return {"verify": reference, "verify_tolerance": (float(tol[0]), float(tol[1]))}


def _trust(trust: Any) -> dict[str, frozenset[str]]:
    if not isinstance(trust, Mapping):
        raise InvalidArgument(
            f"ProviderPolicy.trust: expected a dict of provider → operator names, got {trust!r}"
        )
    out = {}
    for provider, ops in trust.items():
        if isinstance(ops, str) or not all(isinstance(op, str) for op in ops):
            raise InvalidArgument(
                f"ProviderPolicy.trust[{provider!r}]: expected a list of operator names, "
                f"got {ops!r}"
            )
        out[normalize_provider(provider)] = frozenset(ops)
    return out


def _describe(policy: ProviderPolicy) -> str:
    parts = [f"order={list(policy.order) if policy.order else 'default'}"]
    if policy.disallow:
        parts.append(f"disallow={list(policy.disallow)}")
    if policy.require:
        parts.append(f"require={policy.require!r}")
    if not policy.fallback:
        parts.append("fallback=False")
    if policy.trust:
        parts.append(f"trust={dict(policy.trust)}")
    if policy.verify:
        parts.append(f"verify={policy.verify!r}")
    return "ProviderPolicy(" + ", ".join(parts) + ")"
