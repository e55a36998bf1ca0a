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

from collections.abc import Sequence
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
    """

    order: Sequence[str] | None = None
    disallow: Sequence[str] = ()
    require: str | None = None
    fallback: bool = True


@dataclass
class Plan:
    """The providers to try, and why the others are out."""

    candidates: list[str]
    excluded: dict[str, str] = field(default_factory=dict)
    require: str | None = None
    auto: bool = False
    description: str = ""


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
        return Plan([require], excluded, require=require, description=_describe(policy))
    allowed = [p for p in order if p not in disallow]
    if not allowed:
        raise InvalidArgument(
            f"providers: every provider in {order} is disallowed by the policy; nothing can run"
        )
    if not policy.fallback:
        for p in allowed[1:]:
            excluded[p] = "not tried: fallback=False"
        allowed = allowed[:1]
    return Plan(allowed, excluded, description=_describe(policy))


def _describe(policy: ProviderPolicy) -> str:
    parts = [f"order={list(policy.order) if policy.order else 'default'}"]
    if policy.disallow:
        parts.append(f"disallow={list(policy.disallow)}")
    if policy.require:
        parts.append(f"require={policy.require!r}")
    if not policy.fallback:
        parts.append("fallback=False")
    return "ProviderPolicy(" + ", ".join(parts) + ")"
