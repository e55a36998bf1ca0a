"""Creating a session in onnxruntime-web: the provider plan carried out, and its options."""

from __future__ import annotations

from typing import Any

from . import _bridge
from ._auto import choose_provider
from ._options import SessionOptions
from ._policy import Plan
from .errors import ProviderUnavailable

__all__ = ["create_from_plan", "ort_session_options"]


def ort_session_options(
    options: SessionOptions,
    locations: str | dict[str, str] | None,
    ep_options: dict[str, dict[str, Any]],
) -> dict[str, Any]:
    """The options object the bridge gives ``InferenceSession.create`` in onnxruntime-web.

    Parameters
    ----------
    options : SessionOptions
    locations : str, dict or None
        ``preferred_output_location`` in onnxruntime-web's names.
    ep_options : dict
        Provider → its onnxruntime-web EP options.
    """
    ort = options.to_ort()
    if locations is not None:
        ort["preferredOutputLocation"] = locations
    if ep_options:
        # Not an ORT-web session option: the bridge moves each provider's
        # options into its executionProviders entry.
        ort["ortwebProviderOptions"] = ep_options
    return ort


async def _create_planned(
    model: bytes | _bridge.JsBuffer, plan: Plan, ort_options: dict[str, Any]
) -> dict[str, Any]:
    try:
        return await _bridge.create_session(model, plan.candidates, ort_options)
    except ProviderUnavailable as exc:
        reasons = {**plan.excluded, **exc.reasons}
        if plan.require is not None:
            why = reasons.get(plan.require, exc.message)
            raise ProviderUnavailable(
                f"the provider policy requires {plan.require!r}, which cannot run here: "
                f"{why}", reasons=reasons,
            ) from exc
        exc.reasons = reasons
        raise


async def create_from_plan(
    model: bytes | _bridge.JsBuffer, plan: Plan, ort_options: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, dict[str, float]], str | None]:
    """Create the session on the first provider of ``plan`` that can run it, or on
    the fastest for ``"auto"``.

    Returns
    -------
    info : dict
        The bridge's answer (``handle``, ``provider``, ``build``, ``skipped``, ...).
    timings : dict
        ``"auto"``'s measurements; empty otherwise.
    how : str or None
        ``'measured'`` or ``'remembered'`` for ``"auto"``; None otherwise.

    Raises
    ------
    ProviderUnavailable
        When no provider of the plan can run the model; ``reasons`` holds every
        provider's, those the policy ruled out included.
    """
    if plan.auto:
        return await choose_provider(model, plan.candidates, ort_options)
    return await _create_planned(model, plan, ort_options), {}, None
