"""``ProviderReport``: which execution provider runs a session, and why."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._policy import Plan

__all__ = ["ProviderAttempt", "ProviderReport", "make_report"]


@dataclass(frozen=True)
class ProviderAttempt:
    """One provider considered for a session.

    ``status`` is ``'used'``, ``'skipped'`` (not available here, or cannot run the
    model's types), ``'failed'`` (ORT failed to create the session on it),
    ``'disallowed'``/``'not tried'`` (the policy ruled it out), ``'measured'``
    (``"auto"`` timed it and chose another) or ``'not needed'`` (later in the
    order than the provider that ran).
    """

    provider: str
    status: str
    reason: str = ""


@dataclass
class ProviderReport:
    """What ran, what did not and why; ``print(sess.provider_report)`` reads well.

    Attributes
    ----------
    provider : str
        The provider that runs the session.
    build : str
        The onnxruntime-web build: ``'wasm'``, ``'native'`` (C++ WebGPU EP) or ``'jsep'``.
    policy : str
        How providers were chosen (an order, a policy, ``auto``).
    attempts : list of ProviderAttempt
        Every provider considered, in order.
    cpu_nodes : list of str
        ``'OpType (node name)'`` of the nodes ORT placed on the CPU in a WebGPU
        session (ops the WebGPU EP lacks, shape computations); empty for wasm.
    gpu_nodes : list of str
        The nodes placed on the WebGPU EP, where ORT named them.
    node_counts : dict of str to int
        ORT's execution-provider names → how many nodes each runs (ORT names the
        nodes only when they are split between providers; when all run on the CPU,
        ``cpu_nodes`` lists those the WebGPU EP has no kernel for).
    timings : dict
        For ``"auto"``: per provider, ``median_ms``, ``first_ms`` and ``runs``.
    auto : str or None
        ``'measured'`` or ``'remembered'`` for ``"auto"``; None otherwise.
    verify : str
        What ``ProviderPolicy(verify=...)`` found on the first run (empty before it,
        or without ``verify``).
    """

    provider: str
    build: str
    policy: str
    attempts: list[ProviderAttempt] = field(default_factory=list)
    cpu_nodes: list[str] = field(default_factory=list)
    gpu_nodes: list[str] = field(default_factory=list)
    node_counts: dict[str, int] = field(default_factory=dict)
    timings: dict[str, dict[str, float]] = field(default_factory=dict)
    auto: str | None = None
    verify: str = ""

    def reasons(self) -> dict[str, str]:
        """Provider → why it could not or may not run this session (providers merely
        later in the order than the one that ran are not listed)."""
        return {a.provider: a.reason for a in self.attempts
                if a.status not in ("used", "not needed")}

    def __str__(self) -> str:
        engine = ("engine: " + self.build if self.build == self.provider
                  else "onnxruntime-web build: " + self.build)
        lines = [f"provider: {self.provider} ({engine}; chosen by {self.policy})"]
        for a in self.attempts:
            lines.append(f"  {a.provider:<7} {a.status}" + (f": {a.reason}" if a.reason else ""))
        if self.verify:
            lines.append(f"  verify: {self.verify}")
        if self.timings:
            how = "remembered from an earlier measurement" if self.auto == "remembered" else (
                "measured now")
            lines.append(f"  auto timings ({how}):")
            for p, t in self.timings.items():
                lines.append(f"    {p:<7} median {t['median_ms']:.2f} ms over {int(t['runs'])} "
                             f"runs (first run {t['first_ms']:.1f} ms)")
        if self.provider == "webgpu":
            on_cpu = self.node_counts.get("CPUExecutionProvider", len(self.cpu_nodes))
            on_gpu = sum(n for ep, n in self.node_counts.items() if ep != "CPUExecutionProvider")
            if on_cpu:
                lines.append(f"  {on_cpu} node(s) on the CPU, {on_gpu} on WebGPU; on the CPU:")
                lines.extend(f"    {n}" for n in self.cpu_nodes)
            else:
                lines.append(f"  all {on_gpu} node(s) on WebGPU")
        return "\n".join(lines)


def make_report(
    plan: Plan, info: dict[str, Any], timings: dict[str, dict[str, float]], how: str | None
) -> ProviderReport:
    """Assemble the report from the plan and what the bridge did, in the plan's order.

    Parameters
    ----------
    plan : Plan
        The providers the session was to try, and those the policy ruled out.
    info : dict
        The bridge's answer to ``create_session``: ``provider``, ``build``,
        ``skipped`` (each with ``provider``, ``kind``, ``reason``) and ``placement``.
    timings : dict
        ``"auto"``'s measurements (empty otherwise).
    how : str or None
        ``'measured'`` or ``'remembered'`` for ``"auto"``.
    """
    tried = {str(s["provider"]): s for s in info.get("skipped", [])}
    used = str(info["provider"])
    attempts = []
    seen = []
    for provider in [*plan.candidates, *plan.excluded, *tried]:
        if provider in seen:
            continue
        seen.append(provider)
        if provider == used:
            attempts.append(ProviderAttempt(provider, "used"))
        elif provider in tried:
            entry = tried[provider]
            attempts.append(ProviderAttempt(provider, str(entry.get("kind", "skipped")),
                                            str(entry["reason"])))
        elif provider in plan.excluded:
            reason = plan.excluded[provider]
            status = "disallowed" if reason.startswith("disallowed") else "not tried"
            attempts.append(ProviderAttempt(provider, status, reason))
        else:
            attempts.append(ProviderAttempt(provider, "not needed", f"{used!r} came first"))
    placement = info.get("placement") or {}
    nodes = placement.get("nodes") or {}
    cpu = list(nodes.get("CPUExecutionProvider", []))
    gpu = [n for ep, listed in nodes.items() if ep != "CPUExecutionProvider" for n in listed]
    counts = {str(ep): int(n) for ep, n in (placement.get("counts") or {}).items()}
    return ProviderReport(used, str(info["build"]), plan.description, attempts, cpu, gpu,
                          counts, timings, how)
