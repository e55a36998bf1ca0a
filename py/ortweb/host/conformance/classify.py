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

Nothing here starts a browser or a session, so it is unit-tested on the host.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

import numpy as np

from ..._dtypes import DTYPES
from .cases import Case

__all__ = [
    "CARRIED_TYPES",
    "ORT_WEB_TYPES",
    "Comparison",
    "Outcome",
    "Status",
    "Verdict",
    "classify",
    "compare_values",
    "essence",
    "load_webgpu_ops",
    "ops_off_webgpu",
    "static_unsupported",
    "unsupported_from_error",
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


@dataclass
class Comparison:
    """Outputs vs the expected ones: the verdict and the largest errors seen."""

    ok: bool
    max_abs: float | None = None
    max_rel: float | None = None
    problem: str = ""

    def merge(self, other: Comparison, where: str) -> None:
        if other.max_abs is not None:
            self.max_abs = max(self.max_abs or 0.0, other.max_abs)
        if other.max_rel is not None:
            self.max_rel = max(self.max_rel or 0.0, other.max_rel)
        if not other.ok and self.ok:
            self.ok = False
            self.problem = f"{where}: {other.problem}"


def _float64(a: np.ndarray) -> np.ndarray:
    return np.asarray(a).astype(np.float64)


def _compare_tensor(got: Any, want: np.ndarray, rtol: float, atol: float) -> Comparison:
    if not isinstance(got, np.ndarray):
        return Comparison(False, problem=f"expected a tensor, got {type(got).__name__}")
    if got.shape != want.shape:
        return Comparison(False, problem=f"shape {list(got.shape)} != expected {list(want.shape)}")
    if want.dtype.kind == "O":
        # Strings compare exactly, as numpy.testing.assert_array_equal does.
        g = np.asarray([v.decode() if isinstance(v, bytes) else str(v)
                        for v in got.reshape(-1).tolist()], dtype=object)
        w = np.asarray([v.decode() if isinstance(v, bytes) else str(v)
                        for v in want.reshape(-1).tolist()], dtype=object)
        bad = int(np.count_nonzero(g != w)) if g.size else 0
        return Comparison(bad == 0, problem=f"{bad} of {want.size} strings differ" if bad else "")
    if got.dtype != want.dtype:
        return Comparison(False, problem=f"dtype {got.dtype} != expected {want.dtype}")
    if want.size == 0:
        return Comparison(True, 0.0, 0.0)
    try:
        g, w = _float64(got), _float64(want)
    except (TypeError, ValueError) as exc:
        return Comparison(False, problem=f"cannot compare dtype {want.dtype}: {exc}")
    integral = want.dtype.kind in "iub"
    if integral:
        # float64 cannot tell 2**62 from 2**62 + 1: integers are equal only when
        # exactly equal, and distinct integers are at least 1 apart.
        same = np.asarray(got == want)
    else:
        same = (np.isnan(g) & np.isnan(w)) | (g == w)
    with np.errstate(invalid="ignore", over="ignore"):
        diff = np.where(same, 0.0, np.abs(g - w))
        if integral:
            diff = np.where(same, 0.0, np.maximum(diff, 1.0))
        # numpy.testing.assert_allclose: |got - want| <= atol + rtol * |want|, NaNs
        # equal; an infinity matches only itself.
        close = same | (np.isfinite(g) & np.isfinite(w) & (diff <= atol + rtol * np.abs(w)))
        rel = np.where(diff == 0, 0.0, diff / np.maximum(np.abs(w), np.finfo(np.float64).tiny))
    diff = np.where(np.isnan(diff), np.inf, diff)
    rel = np.where(np.isnan(rel), np.inf, rel)
    bad = int(np.count_nonzero(~close))
    return Comparison(
        bad == 0, float(diff.max()), float(rel.max()),
        f"{bad} of {want.size} elements differ beyond rtol={rtol:g}, atol={atol:g} "
        f"(max abs {float(diff.max()):.3g}, max rel {float(rel.max()):.3g})" if bad else "",
    )


def compare_values(got: Any, want: Any, rtol: float, atol: float) -> Comparison:
    """Compare outputs with expected ones as onnx's ``Runner.assert_similar_outputs``.

    Lists (sequences) compare element-wise, ``None`` (an empty optional) only
    matches ``None``, string tensors exactly, other tensors by shape, dtype and
    ``numpy.testing.assert_allclose(rtol, atol)``.
    """
    if isinstance(want, list | tuple):
        if not isinstance(got, list | tuple):
            return Comparison(False, problem=f"expected a sequence, got {type(got).__name__}")
        if len(got) != len(want):
            return Comparison(False, problem=f"{len(got)} values, expected {len(want)}")
        result = Comparison(True)
        for i, (g, w) in enumerate(zip(got, want, strict=True)):
            result.merge(compare_values(g, w, rtol, atol), f"[{i}]")
        return result
    if want is None:
        ok = got is None
        return Comparison(ok, problem="" if ok else f"expected None, got {type(got).__name__}")
    if isinstance(want, dict):
        ok = isinstance(got, dict) and set(got) == set(want)
        if not ok:
            return Comparison(False, problem="map keys differ")
        result = Comparison(True)
        for k in want:
            result.merge(compare_values(got[k], want[k], rtol, atol), f"[{k!r}]")
        return result
    return _compare_tensor(got, np.asarray(want), rtol, atol)


def compare_outputs(case: Case, outputs: list[Any]) -> Comparison:
    """All of a run's outputs vs the case's expected ones."""
    if len(outputs) != len(case.expected):
        return Comparison(False, problem=f"{len(outputs)} outputs, expected {len(case.expected)}")
    result = Comparison(True)
    for info, got, want in zip(case.outputs, outputs, case.expected, strict=False):
        result.merge(compare_values(got, want, case.rtol, case.atol), f"output {info.name!r}")
    return result


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


_NO_KERNEL = re.compile(
    r"(?:Could not find an implementation for|Failed to find kernel for) (\w+)\((\d+)\)")
_NOT_REGISTERED = re.compile(r"No Op registered for (\w+) with domain_version of (\d+)")
_NO_PROVIDER = re.compile(r"Provider type for (\w+) node with name '[^']*' is not set")
_IR_VERSION = re.compile(r"Unsupported model IR version: (\d+), max supported IR version: (\d+)")
_OPSET = re.compile(
    r"Opset (\d+) is under development.*?support for domain (\S+) is till opset (\d+)", re.S)
_ATTRIBUTE = re.compile(r"Unrecognized attribute: (\w+) for operator (\w+)")
_NOT_IMPLEMENTED = re.compile(r"NOT_IMPLEMENTED|not implemented|is not supported yet", re.I)
_BAD_TYPE = re.compile(r"[Uu]nsupported (?:data |tensor )?type|type .{0,40}is not supported")
# Boilerplate around ORT-web's own message, dropped from reasons (the JSON keeps
# the whole text).
_NOISE = [
    re.compile(r"^(?:create session|run): "),
    re.compile(r"^Can't create a session\. "),
    re.compile(r"^failed to call OrtRun\(\)\. "),
    re.compile(r"^ERROR_CODE: \d+, ERROR_MESSAGE: "),
    re.compile(r"^Non-zero status code returned while running \w+ node\. Name:'[^']*' "
               r"Status Message: "),
    re.compile(r"^/\S+\.(?:cc|h):\d+ .*?\) (?:const )?(?:\[[^\]]*\] )?"),
]


def essence(message: str) -> str:
    """ORT-web's message without the wrappers: what actually went wrong."""
    text = message.strip()
    changed = True
    while changed:
        changed = False
        for pattern in _NOISE:
            stripped = pattern.sub("", text, count=1)
            if stripped != text:
                text, changed = stripped, True
    return text


def _first_line(text: str, limit: int = 300) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _webgpu_listed(op: str, opset: int, webgpu_ops: WebGpuOps | None) -> bool | None:
    if webgpu_ops is None:
        return None
    first = webgpu_ops.get(("ai.onnx", op))
    return first is not None and opset >= first


def unsupported_from_error(ep: str, error_type: str, message: str, case: Case | None = None,
                           webgpu_ops: WebGpuOps | None = None) -> str | None:
    """The unsupported op / type / feature an ORT-web error names, or None.

    Parameters
    ----------
    ep : str
        ``'wasm'`` or ``'webgpu'``.
    error_type, message : str
        The exception's class name and text.
    case : Case, optional
        The case, to name its types and opset in the reason.
    webgpu_ops : dict, optional
        ORT-web's WebGPU operator list (:func:`load_webgpu_ops`), to say whether
        an op the WebGPU EP could not take is listed there at all.
    """
    text = _first_line(essence(message))
    if error_type == "ProviderUnavailable" and "shader-f16" in message:
        return ("float16 on WebGPU needs the adapter feature 'shader-f16', which this "
                "adapter lacks (ortweb refuses WebGPU rather than get zeros)")
    # ORT-web lags native onnxruntime: models stamped with a newer IR version or
    # opset, or using an attribute its operator schema lacks, do not load at all.
    found = _IR_VERSION.search(message)
    if found:
        return (f"model IR version {found.group(1)}: this ORT-web loads IR versions up to "
                f"{found.group(2)}")
    found = _OPSET.search(message)
    if found:
        return (f"opset {found.group(1)} of {found.group(2)}: this ORT-web supports it up to "
                f"opset {found.group(3)}")
    found = _ATTRIBUTE.search(message)
    if found:
        return (f"op {found.group(2)}: attribute {found.group(1)} is newer than this ORT-web's "
                f"operator schema")
    found = _NO_PROVIDER.search(message)
    if found:
        # The C++ WebGPU build carries a reduced set of CPU kernels, so a node its
        # WebGPU EP does not take has nowhere to go (the JSEP build falls back).
        op = found.group(1)
        types = "" if case is None else " with " + ", ".join(sorted({v.type for v in case.inputs}))
        opset = 0 if case is None else next(
            (v for d, o, v in case.ops if o == op and d == "ai.onnx"), 0)
        listed = _webgpu_listed(op, opset, webgpu_ops)
        where = ("" if listed is None else
                 " (it is in ORT-web's WebGPU operator list, but not for these types)" if listed
                 else " (it is not in ORT-web's WebGPU operator list)")
        return (f"op {op}{types}: no WebGPU kernel{where}, and the C++ WebGPU build has no CPU "
                f"kernel for it to fall back on")
    found = _NOT_REGISTERED.search(message)
    if found:
        return (f"op {found.group(1)} (domain version {found.group(2)}) is not in ORT-web's "
                f"{ep} build: {text}")
    found = _NO_KERNEL.search(message)
    if found:
        return (f"op {found.group(1)} (opset {found.group(2)}): ORT-web's {ep} build has no "
                f"kernel for it with these types: {text}")
    if error_type == "NotImplementedByRuntime" or _NOT_IMPLEMENTED.search(message):
        return f"not implemented in ORT-web ({ep}): {text}"
    if _BAD_TYPE.search(message):
        return f"type not supported by ORT-web ({ep}): {text}"
    return None


WebGpuOps = dict[tuple[str, str], int]


def load_webgpu_ops(path: Path) -> WebGpuOps:
    """ORT-web's WebGPU operator list: ``(domain, op)`` → the first opset it covers.

    Reads the table of ``docs/webgpu-operators.md`` in the onnxruntime-web package
    (rows such as ``| Add | ai.onnx(7-12,13,14+) |  |``).
    """
    table: WebGpuOps = {}
    for line in path.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 2 or not re.fullmatch(r"\w+", cells[0]) or cells[0] == "Operator":
            continue
        for domain, ranges in re.findall(r"([\w.]+)\(([^)]*)\)", cells[1]):
            starts = [int(m) for m in re.findall(r"(\d+)(?:-\d+|\+)?", ranges)]
            if starts:
                table[(domain, cells[0])] = min(starts)
    return table


def ops_off_webgpu(case: Case, webgpu_ops: WebGpuOps) -> list[str]:
    """The case's ops ORT-web's WebGPU operator list does not cover (they run on the CPU)."""
    out = []
    for domain, op, opset in case.ops:
        first = webgpu_ops.get((domain, op))
        if first is None or opset < first:
            out.append(op if domain == "ai.onnx" else f"{domain}:{op}")
    return sorted(set(out))


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
        why = f"native onnxruntime: {_first_line(essence(native.error))}"
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
        return Verdict(Status.FAIL, kind + _first_line(essence(browser.error), 500), None,
                       native_cmp)
    assert browser_cmp is not None
    if not browser_cmp.ok:
        return Verdict(Status.FAIL, f"outputs differ: {browser_cmp.problem}", browser_cmp,
                       native_cmp)
    return Verdict(Status.PASS, "", browser_cmp, native_cmp)
