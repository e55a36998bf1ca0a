"""Why ORT-web refused a case: the op, type or feature its error names.

ORT-web's messages come wrapped in layers of boilerplate; :func:`essence` peels
them, :func:`unsupported_from_error` turns what is left into a reason, and
ORT-web's WebGPU operator list (:func:`load_webgpu_ops`) says whether an op the
WebGPU EP could not take is listed there at all.
"""

from __future__ import annotations

import re
from pathlib import Path

from .cases import Case

__all__ = [
    "WebGpuOps",
    "essence",
    "first_line",
    "load_webgpu_ops",
    "ops_off_webgpu",
    "unsupported_from_error",
]

#: ORT-web's WebGPU operator list: ``(domain, op)`` → the first opset it covers.
WebGpuOps = dict[tuple[str, str], int]

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


def first_line(text: str, limit: int = 300) -> str:
    """The first line of ``text``, cut to ``limit`` characters with an ellipsis."""
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
    text = first_line(essence(message))
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
