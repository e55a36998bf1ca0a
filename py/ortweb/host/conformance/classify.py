"""Comparing outputs the way the ONNX backend tests do, and sorting cases into statuses.

A case is

- ``native-fails`` when native onnxruntime errors or its outputs miss the expected
  ones: out of scope, whatever the browser does;
- ``unsupported`` when a graph input or output has a type ortweb / ORT-web cannot
  carry (sequences, optionals and maps; bfloat16, float8, float4, int2/4,
  complex), when ORT-web says the op or type is not implemented, or when the
  WebGPU adapter lacks a feature the model needs; the reason says which;
- ``pass`` when the browser's outputs match the expected ones within the case's
  tolerances, ``fail`` otherwise.

Outputs are compared in :mod:`.compare`; ORT-web's errors are read in
:mod:`.reasons`. Nothing here starts a browser or a session, so it is
unit-tested on the host.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from ..._dtypes import DTYPES
from .cases import Case
from .compare import Comparison, compare_outputs
from .reasons import WebGpuOps, essence, first_line, unsupported_from_error

__all__ = [
    "CARRIED_TYPES",
    "ORT_WEB_TYPES",
    "Outcome",
    "Status",
    "Verdict",
    "classify",
    "static_unsupported",
]

#: Tensor types ortweb carries between numpy and ORT-web.
CARRIED_TYPES = frozenset(d.onnx for d in DTYPES)
#: Tensor types ORT-web's ``Tensor`` knows (``tensorDataTypeStringToEnum`` in
#: onnxruntime-web's ``wasm-common.ts``): ortweb's plus packed int4/uint4.
ORT_WEB_TYPES = CARRIED_TYPES | {"tensor(int4)", "tensor(uint4)"}


class Status(StrEnum):
    """What happened to a case on one execution provider."""

    PASS = "pass"
    FAIL = "fail"
    NATIVE_FAILS = "native-fails"
    UNSUPPORTED = "unsupported"

    def __str__(self) -> str:
        return self.value


@dataclass
class Outcome:
    """What one runtime did with a case: its outputs, or the error it raised.

    Attributes
    ----------
    outputs : list or None
        Output values in graph order (None when it failed).
    error : str
        The error's text ('' when it ran).
    error_type : str
        The exception's class name (``NotImplementedByRuntime``, ...).
    details : dict
        Anything else worth keeping (provider, timings).
    """

    outputs: list[Any] | None = None
    error: str = ""
    error_type: str = ""
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.outputs is not None and not self.error


def _type_problem(kind: str, info: Any) -> str | None:
    t = info.type
    if not info.is_tensor:
        return (f"{kind} {info.name!r} is a {t}: ORT-web's JavaScript API passes tensors only "
                f"(no sequences, optionals or maps)")
    if t in CARRIED_TYPES:
        return None
    elem = t[len("tensor("):-1]
    if t in ORT_WEB_TYPES:
        return (f"dtype {elem} ({kind} {info.name!r}): ORT-web takes it as a packed Uint8Array, "
                f"but ortweb does not carry it (no numpy dtype for it)")
    return (f"dtype {elem} ({kind} {info.name!r}): ORT-web has no tensor type for it, "
            f"so ortweb cannot carry it")


def static_unsupported(case: Case) -> str | None:
    """Why the browser cannot even be given this case, from its graph's types alone."""
    for kind, values in (("input", case.inputs), ("output", case.outputs)):
        for info in values:
            problem = _type_problem(kind, info)
            if problem:
                return problem
    return None


@dataclass
class Verdict:
    """A case's status on one EP, why, and the comparisons behind it."""

    status: Status
    reason: str = ""
    browser: Comparison | None = None
    native: Comparison | None = None


def classify(case: Case, ep: str, native: Outcome, browser: Outcome | None,
             webgpu_ops: WebGpuOps | None = None) -> Verdict:
    """Sort a case into a :class:`Status` from what native onnxruntime and the browser did.

    A type the browser cannot carry makes the case ``unsupported`` before anything
    else: native onnxruntime's Python API fails on most of the same types
    (bfloat16, float8, int4 have no numpy dtype it takes), and what a user needs
    to know is that the browser cannot take them. Then native failures, then the
    browser's result.

    Parameters
    ----------
    case : Case
    ep : str
        ``'wasm'`` or ``'webgpu'`` (named in reasons).
    native : Outcome
        Native onnxruntime's outputs or error.
    browser : Outcome or None
        ortweb's outputs or error in the page; None when the case was not sent
        because :func:`static_unsupported` refused it.
    webgpu_ops : dict, optional
        ORT-web's WebGPU operator list, for reasons (:func:`load_webgpu_ops`).
    """
    native_cmp = compare_outputs(case, native.outputs) if native.ok and native.outputs else None
    browser_cmp = None
    if browser is not None and browser.ok and browser.outputs is not None:
        browser_cmp = compare_outputs(case, browser.outputs)
    static = static_unsupported(case)
    if static:
        return Verdict(Status.UNSUPPORTED, static, browser_cmp, native_cmp)
    if not native.ok:
        why = f"native onnxruntime: {first_line(essence(native.error))}"
        if "Failed to construct locale" in native.error:
            why += " (the host lacks that locale; not onnxruntime's fault)"
        return Verdict(Status.NATIVE_FAILS, why, browser_cmp, native_cmp)
    if native_cmp is not None and not native_cmp.ok:
        return Verdict(Status.NATIVE_FAILS,
                       f"native onnxruntime's outputs differ: {native_cmp.problem}",
                       browser_cmp, native_cmp)
    if browser is None:
        raise ValueError(f"{case.id}: a sendable case needs the browser's outcome")
    if not browser.ok:
        reason = unsupported_from_error(ep, browser.error_type, browser.error, case, webgpu_ops)
        if reason:
            return Verdict(Status.UNSUPPORTED, reason, None, native_cmp)
        kind = f"{browser.error_type}: " if browser.error_type else ""
        return Verdict(Status.FAIL, kind + first_line(essence(browser.error), 500), None,
                       native_cmp)
    assert browser_cmp is not None
    if not browser_cmp.ok:
        return Verdict(Status.FAIL, f"outputs differ: {browser_cmp.problem}", browser_cmp,
                       native_cmp)
    return Verdict(Status.PASS, "", browser_cmp, native_cmp)
