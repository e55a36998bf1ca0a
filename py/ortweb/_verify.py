"""``ProviderPolicy(verify=...)``: the first run checked against a reference provider.

A provider can give wrong values where the reference gives right ones (Silero VAD's
recurrent state on onnxruntime-web's WebGPU EP, an engine whose operator table
passed): the policy's ``verify`` runs the session's first run also on the reference
(``'wasm'`` by default), compares each output as ``ortweb run --compare-native``
does (:func:`._compare.compare`), and on a difference falls back to the reference
where the policy allows it, or raises :class:`~ortweb.errors.OutputMismatch`. The
verdict is remembered per model, provider and reference in the browser's Cache
Storage (as ``"auto"``'s choice is), so a provider that failed is skipped before it
loads the next time, and one that passed is not checked again.
"""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from . import _bridge
from ._compare import Comparison, compare
from ._policy import Plan
from ._report import ProviderAttempt, ProviderReport
from .errors import OrtWebError, OutputMismatch

if TYPE_CHECKING:
    from ._session import InferenceSession

__all__ = ["Verifier", "fallen_back", "plan_verify", "verify_first_run"]

#: Creates a session of the same model and options on one provider: the bridge's record.
CreateOn = Callable[[str], Awaitable[dict[str, Any]]]


async def _digest(model: bytes | _bridge.JsBuffer) -> str:
    if isinstance(model, bytes):
        return hashlib.sha256(model).hexdigest()
    return str(await _bridge.sha256_hex(model))


def _key(digest: str, provider: str, reference: str) -> str:
    return f"verify|{digest}|{provider}|against {reference}|{_bridge.settings()['webgpuBuild']}"


async def plan_verify(plan: Plan, model: bytes | _bridge.JsBuffer) -> tuple[Plan, Verifier | None]:
    """``plan`` without the providers remembered to differ from the reference on
    ``model``, and the :class:`Verifier` of the session (None without ``verify``)."""
    if plan.verify is None:
        return plan, None
    digest = await _digest(model)
    verdicts = {p: await _bridge.get_choice(_key(digest, p, plan.verify))
                for p in plan.candidates if p != plan.verify}
    failed = {p: v["problem"] for p, v in verdicts.items() if v and not v.get("ok")}
    if failed and plan.may_fall_back and len(failed) < len(plan.candidates):
        excluded = dict(plan.excluded)
        for p, problem in failed.items():
            excluded[p] = (f"not tried: its outputs differed from {plan.verify}'s on this "
                           f"model when verified earlier ({problem})")
        plan = replace(plan, candidates=[p for p in plan.candidates if p not in failed],
                       excluded=excluded)
    passed = {p for p, v in verdicts.items() if v and v.get("ok")}
    return plan, Verifier(plan, digest, passed)


class Verifier:
    """The pending check of one session's first run (see the module docstring)."""

    def __init__(self, plan: Plan, digest: str, passed: set[str]) -> None:
        assert plan.verify is not None
        self.reference = plan.verify
        self.rtol, self.atol = plan.verify_tolerance
        self.may_fall_back = plan.may_fall_back
        self._digest, self._passed = digest, passed

    def for_session(self, session: InferenceSession) -> Verifier | None:
        """This verifier, if ``session``'s first run is still to check; else None, with
        why in its report (it runs on the reference, or passed before)."""
        if session.provider == self.reference:
            return None
        if session.provider in self._passed:
            session._report = replace(session._report, verify=(
                f"{session.provider}'s outputs equal {self.reference}'s on this model "
                "when verified earlier (remembered)"))
            return None
        return self

    async def check(
        self,
        provider: str,
        feeds: Sequence[_bridge.Feed],
        fetches: Sequence[tuple[str, int | None]],
        outputs: list[Any],
        create_on: CreateOn,
    ) -> tuple[list[Any], dict[str, Any] | None, str]:
        """Run ``feeds`` on the reference too and compare with ``outputs``.

        Returns
        -------
        outputs : list
            ``outputs`` when they agree, else the reference's (after a fallback).
        reference : dict or None
            The reference session's record when the session falls back to it (the
            caller adopts it), else None (the reference session is released).
        verdict : str
            What the check found, for :attr:`ProviderReport.verify`.

        Raises
        ------
        OutputMismatch
            When the outputs differ and the policy allows no fallback.
        """
        info = await create_on(self.reference)
        keep = False
        try:
            try:
                want = await _bridge.run_session(int(info["handle"]), feeds, fetches)
            except OrtWebError as exc:
                raise type(exc)(f"verify: the reference provider {self.reference!r} failed "
                                f"the first run: {exc.message}", code=exc.code,
                                js_name=exc.js_name) from exc
            differ = [c for c in self._compare(fetches, outputs, want) if not c.ok]
            key = _key(self._digest, provider, self.reference)
            if not differ:
                await _bridge.put_choice(key, {"ok": True})
                return outputs, None, f"first run equal to {self.reference}'s"
            problem = "; ".join(f"{c.name}: {c.problem}" for c in differ)
            await _bridge.put_choice(key, {"ok": False, "problem": problem})
            said = (f"{provider}'s outputs differ from {self.reference}'s on the first run "
                    f"(rtol {self.rtol:g}, atol {self.atol:g}): {problem}")
            if not self.may_fall_back:
                raise OutputMismatch(f"{said}; the provider policy allows no fallback "
                                     "(require= or fallback=False), so none is returned")
            keep = True
            return want, info, f"{said}; fell back to {self.reference}"
        finally:
            if not keep:
                await _bridge.release_session(int(info["handle"]))

    def _compare(self, fetches: Sequence[tuple[str, int | None]], got: list[Any],
                 want: list[Any]) -> list[Comparison]:
        return [compare(name, g, w, self.rtol, self.atol, reference=self.reference)
                for (name, _), g, w in zip(fetches, got, want, strict=True)]


def fallen_back(report: ProviderReport, info: dict[str, Any], verdict: str) -> ProviderReport:
    """``report`` after the session moved to the reference provider of ``info``."""
    moved = str(info["provider"])
    attempts = [ProviderAttempt(a.provider, "failed verification", verdict)
                if a.status == "used" else ProviderAttempt(moved, "used")
                if a.provider == moved else a for a in report.attempts]
    if all(a.provider != moved for a in attempts):
        attempts.append(ProviderAttempt(moved, "used"))
    return replace(report, provider=moved, build=str(info["build"]), attempts=attempts,
                   cpu_nodes=[], gpu_nodes=[], node_counts={}, verify=verdict)


async def verify_first_run(
    session: InferenceSession,
    feeds: Sequence[_bridge.Feed],
    fetches: Sequence[tuple[str, int | None]],
    outputs: list[Any],
) -> list[Any]:
    """The step of :meth:`InferenceSession.execute_async` that checks a first run:
    the outputs to return, the session moved to the reference where it fell back.
    A run that raised :class:`OutputMismatch` leaves the check pending for the next."""
    verifier, session._verifier = session._verifier, None
    assert verifier is not None
    try:
        outputs, moved, verdict = await verifier.check(
            session.provider, feeds, fetches, outputs, session._create_on)
    except BaseException:
        session._verifier = verifier
        raise
    if moved is None:
        session._report = replace(session._report, verify=verdict)
    else:
        session._move_to(moved)
        session._report = fallen_back(session._report, moved, verdict)
    return outputs
