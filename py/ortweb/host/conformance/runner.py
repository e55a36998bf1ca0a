"""Run conformance cases: native onnxruntime on the host, ortweb in Pyodide pages.

Native runs happen here, in the gaps while pages work (:class:`_NativeQueue`);
the pages' side is :mod:`.pages`. :func:`run_conformance` does both for every EP
and classifies each case.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..._engines import engine_of
from ..browser import Runtime
from ..errors import PageFailure
from .cases import Case, constant_inputs
from .classify import Outcome, Status, Verdict, classify, static_unsupported
from .pages import make_batches, run_browser
from .reasons import WebGpuOps, load_webgpu_ops, ops_off_webgpu

__all__ = [
    "CaseResult",
    "PageFailure",
    "make_batches",
    "run_browser",
    "run_conformance",
    "run_native_case",
]

# -- native ---------------------------------------------------------------------------


def run_native_case(case: Case, threads: int = 1) -> Outcome:
    """Run ``case`` in native onnxruntime (CPU); errors are kept, not raised."""
    import onnxruntime as ort

    # Kernel errors go to onnxruntime's default logger, not the session's.
    ort.set_default_logger_severity(4)
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.log_severity_level = 4
    t0 = time.perf_counter()
    try:
        sess = ort.InferenceSession(case.model, options, providers=["CPUExecutionProvider"])
        feeds = dict(zip(case.feed_names, case.feeds, strict=True))
        outputs = sess.run(None, feeds)
    except Exception as exc:
        return Outcome(error=str(exc), error_type=type(exc).__name__,
                       details={"ms": round((time.perf_counter() - t0) * 1000, 3)})
    return Outcome(outputs=list(outputs),
                   details={"ms": round((time.perf_counter() - t0) * 1000, 3)})


# -- the whole run ------------------------------------------------------------------------


@dataclass
class CaseResult:
    """One case on one EP: the verdict and what each runtime did."""

    case: Case
    ep: str
    verdict: Verdict
    native: Outcome
    browser: Outcome | None
    known: str | None = None
    off_webgpu: list[str] | None = None

    @property
    def status(self) -> Status:
        return self.verdict.status

    @property
    def where(self) -> dict[str, Any] | None:
        """The browser and WebGPU adapter the case ran on (None: not sent to one)."""
        return None if self.browser is None else self.browser.details.get("browser")

    @property
    def unexpected(self) -> bool:
        """A failure the known-failures file does not list."""
        return self.status is Status.FAIL and self.known is None

    def as_dict(self) -> dict[str, Any]:
        b, n = self.verdict.browser, self.verdict.native
        record: dict[str, Any] = {
            "suite": self.case.suite,
            "name": self.case.name,
            "ep": self.ep,
            "status": str(self.status),
            "reason": self.verdict.reason,
            "known_failure": self.known,
            "max_abs": None if b is None else b.max_abs,
            "max_rel": None if b is None else b.max_rel,
            "native_max_abs": None if n is None else n.max_abs,
            "native_max_rel": None if n is None else n.max_rel,
            # Whether the browser's outputs matched, also where the status rests
            # on something else (a case native onnxruntime fails, say).
            "browser_matches": None if b is None else b.ok,
            "rtol": self.case.rtol,
            "atol": self.case.atol,
            "ops": self.case.op_types,
            "inputs": [v.type for v in self.case.inputs],
            "outputs": [v.type for v in self.case.outputs],
            "ops_off_webgpu_list": self.off_webgpu,
            "native_error": self.native.error or None,
            "error_type": None,
            "error": None,
            "browser": None,
        }
        if self.browser is not None:
            record["error_type"] = self.browser.error_type or None
            record["error"] = self.browser.error or None
            record.update(self.browser.details)
        return record


class _NativeQueue:
    """Native runs done between page polls, so the host works while pages do."""

    def __init__(self, cases: Sequence[Case]):
        self.pending = deque(cases)
        self.results: dict[str, Outcome] = {}

    def step(self, budget_s: float = 0.05) -> bool:
        end = time.monotonic() + budget_s
        while self.pending and time.monotonic() < end:
            case = self.pending.popleft()
            self.results[case.id] = run_native_case(case)
        return bool(self.pending)

    def finish(self) -> dict[str, Outcome]:
        while self.step(1.0):
            pass
        return self.results


def run_conformance(
    runtime: Runtime,
    cases: Sequence[Case],
    eps: Sequence[str],
    *,
    jobs: int = 1,
    batch_size: int = 64,
    case_timeout: Callable[[str], float] | None = None,
    webgpu_build: str = "native",
    known: Callable[[Case, str, dict[str, Any] | None], str | None] | None = None,
    log: Callable[[str], None] = print,
) -> dict[str, tuple[list[CaseResult], float]]:
    """Run ``cases`` natively and on every EP of ``eps``; classify each one.

    Parameters
    ----------
    runtime : Runtime
        Server and browser the pages are opened in.
    cases : sequence of Case
    eps : sequence of str
        ``'wasm'`` and/or ``'webgpu'``, run one after the other.
    jobs : int
        Pages per EP running batches at the same time (over the runtime's pool
        of browsers, round robin).
    batch_size : int
        Cases sent to a page at once.
    case_timeout : callable, optional
        Seconds without progress before a page counts as hung, per EP
        (default 120 on wasm, 600 on webgpu).
    webgpu_build : str
        ``'native'`` or ``'jsep'``.
    known : callable, optional
        ``known(case, ep, where)`` → the reason a failing case is listed, or None
        (``where``: the browser and adapter it ran on, or None).
    log : callable
        Where progress lines go.

    Returns
    -------
    dict of str to (list of CaseResult, float)
        Per EP: the results in case order and the seconds the EP took (its
        browser run plus the native runs done meanwhile).
    """
    native = _NativeQueue(cases)
    docs = runtime.assets.ort_package / "docs" / "webgpu-operators.md"
    webgpu_ops: WebGpuOps | None = load_webgpu_ops(docs) if docs.exists() else None
    sendable = [c for c in cases if static_unsupported(c) is None]
    out: dict[str, tuple[list[CaseResult], float]] = {}
    for ep in eps:
        t0 = time.monotonic()
        timeout = case_timeout(ep) if case_timeout else (120.0 if ep == "wasm" else 600.0)
        # The other engines see operators as real models hold them (constant_inputs).
        sent = sendable if engine_of(ep).name == "ort" else [constant_inputs(c) for c in sendable]
        browser, pages = run_browser(runtime, sent, ep, jobs=jobs, batch_size=batch_size,
                                     case_timeout=timeout,
                                     webgpu_build=webgpu_build, on_idle=native.step, log=log)
        natives = native.finish()
        results = []
        for case in cases:
            b = browser.get(case.id)
            verdict = classify(case, ep, natives[case.id], b, webgpu_ops)
            result = CaseResult(case, ep, verdict, natives[case.id], b)
            if ep == "webgpu" and webgpu_ops is not None:
                result.off_webgpu = ops_off_webgpu(case, webgpu_ops)
            if verdict.status is Status.FAIL and known is not None:
                result.known = known(case, ep, result.where)
            results.append(result)
        out[ep] = (results, time.monotonic() - t0)
        log(f"  {ep}: {len(sendable)} cases through the browser in {pages} page(s)")
    return out
