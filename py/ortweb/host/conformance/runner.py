"""Run conformance cases: native onnxruntime on the host, ortweb in Pyodide pages.

Cases go to the page in batches: one ``.npz`` with the batch's models and inputs
is copied into Pyodide's file system, ``_inpage.py`` runs them one after the other
through ``ortweb.InferenceSession`` and writes one ``.npz`` of outputs, and the
host reads it back. A page load (Pyodide, numpy, ortweb: 5–8 s) is paid once per
page, not once per case.

The host never waits *inside* a page: the batch is started without awaiting it,
the page reports each case it starts and the end of the batch on the console,
and the host pumps Playwright's events with ``wait_for_timeout`` in between
native runs. A page whose main thread is stuck in wasm would block any
``evaluate`` forever (Playwright's own timeouts do not fire then), so this is how
a hung page is noticed; a hung or crashed page is closed, the case that was
running is marked, and the rest of its batch continues in a fresh page.
"""

from __future__ import annotations

import json
import time
import uuid
from collections import deque
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from io import BytesIO
from pathlib import Path
from typing import Any

import numpy as np

from ..browser import BrowserError, PyodidePage, Runtime
from .cases import Case
from .classify import (
    Outcome,
    Status,
    Verdict,
    WebGpuOps,
    classify,
    load_webgpu_ops,
    ops_off_webgpu,
    static_unsupported,
)

__all__ = [
    "CaseResult",
    "PageFailure",
    "make_batches",
    "run_browser",
    "run_conformance",
    "run_native_case",
]

_DONE = "\u0001ortweb-conformance-done"
# Starts the batch and returns at once; the console line says when it is over.
_KICKOFF = (
    "(code) => {\n"
    "  window.__ortwebConformance = null;\n"
    "  window.ortwebRunPython(code, '<conformance>').then((r) => {\n"
    "    window.__ortwebConformance = r;\n"
    "    console.log('\\u0001ortweb-conformance-done');\n"
    "  });\n"
    "}"
)
_FS_DIR = "/tmp/ortweb-conformance"
_BOOT_ATTEMPTS = 3
_SAVING = -2  # the page is writing the batch's outputs


def _inpage_source() -> str:
    return Path(__file__).with_name("_inpage.py").read_text()


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


# -- batches -----------------------------------------------------------------------------


def make_batches(cases: Sequence[Case], max_cases: int = 64,
                 max_bytes: int = 24 << 20) -> list[list[Case]]:
    """Group cases in order, at most ``max_cases`` and about ``max_bytes`` a batch."""
    batches: list[list[Case]] = []
    current: list[Case] = []
    size = 0
    for case in cases:
        n = case.nbytes()
        if current and (len(current) >= max_cases or size + n > max_bytes):
            batches.append(current)
            current, size = [], 0
        current.append(case)
        size += n
    if current:
        batches.append(current)
    return batches


def _storable(value: np.ndarray) -> np.ndarray:
    if value.dtype.kind == "O":
        return np.asarray([str(v) for v in value.reshape(-1).tolist()],
                          dtype=str).reshape(value.shape)
    return value


def _from_storable(value: np.ndarray) -> np.ndarray:
    if value.dtype.kind == "U":
        out = np.empty(value.size, dtype=object)
        out[:] = [str(v) for v in value.reshape(-1).tolist()]
        return out.reshape(value.shape)
    return value


class PageFailure(Exception):
    """A page crashed or stopped making progress."""


@dataclass
class _Slot:
    """One page and the batch it is running."""

    page: PyodidePage | None = None
    folder: Path | None = None
    prefix: str = ""
    tag: str = ""
    batch: list[Case] = field(default_factory=list)
    last_progress: float = 0.0
    running: int = -1
    done: bool = False
    crashed: bool = False

    @property
    def busy(self) -> bool:
        return bool(self.batch)


class _BrowserRun:
    """Batches of one EP over a few pages, with crashed or hung pages replaced."""

    def __init__(self, runtime: Runtime, ep: str, jobs: int, case_timeout: float,
                 webgpu_build: str, on_idle: Callable[[], bool], log: Callable[[str], None],
                 on_page: Callable[[PyodidePage], None] | None = None):
        self.runtime = runtime
        self.on_page = on_page
        self.ep = ep
        self.case_timeout = case_timeout
        self.webgpu_build = webgpu_build
        self.on_idle = on_idle
        self.log = log
        self.source = _inpage_source()
        self.results: dict[str, Outcome] = {}
        self.pages = 0
        self.stack = ExitStack()
        self.slots = [_Slot() for _ in range(max(1, jobs))]

    # -- pages --------------------------------------------------------------------

    def _open(self, slot: _Slot) -> None:
        if slot.folder is None:
            slot.folder, slot.prefix = self.stack.enter_context(self.runtime.shared_folder())
        slot.tag = f"\u0002{uuid.uuid4().hex[:8]}:"
        slot.crashed = False

        def on_output(stream: str, line: str) -> None:
            if stream != "stdout" or not line.startswith(slot.tag):
                return
            what = line[len(slot.tag):]
            slot.running = _SAVING if what == "saving" else int(what[len("start "):])
            slot.last_progress = time.monotonic()

        page = None
        for attempt in range(1, _BOOT_ATTEMPTS + 1):
            try:
                page = self.runtime.new_page(on_output=on_output, webgpu_build=self.webgpu_build)
                break
            except BrowserError as exc:
                # A boot can fail for reasons that pass (the browser wheel being
                # rebuilt while the page fetches it); a run of many minutes should
                # not end on that.
                if attempt == _BOOT_ATTEMPTS:
                    raise
                self.log(f"  a page failed to boot ({str(exc).splitlines()[0]}); retrying")
                time.sleep(2.0 * attempt)
        assert page is not None

        def on_console(msg: Any) -> None:
            if msg.text == _DONE:
                slot.done = True

        def on_crash(_: Any) -> None:
            slot.crashed = True

        page.page.on("console", on_console)
        page.page.on("crash", on_crash)
        slot.page = page
        self.pages += 1
        if self.on_page is not None:
            self.on_page(page)

    def _close(self, slot: _Slot) -> None:
        if slot.page is not None:
            try:
                slot.page.close()
            except Exception:  # a crashed page may refuse a clean close; it is gone anyway
                pass
            slot.page = None

    def close(self) -> None:
        for slot in self.slots:
            self._close(slot)
        self.stack.close()

    # -- batches --------------------------------------------------------------------

    def _start(self, slot: _Slot, batch: list[Case]) -> None:
        if slot.page is None:
            self._open(slot)
        assert slot.page is not None and slot.folder is not None
        arrays: dict[str, np.ndarray] = {}
        for k, case in enumerate(batch):
            arrays[f"m{k}"] = np.frombuffer(case.model, dtype=np.uint8)
            for j, value in enumerate(case.feeds):
                arrays[f"i{k}_{j}"] = _storable(np.asarray(value))
        # numpy's stubs read **arrays as its own keyword arguments.
        np.savez(slot.folder / "batch.npz", **arrays)  # type: ignore[arg-type]
        args = {
            "tag": slot.tag,
            "providers": [self.ep],
            "batch": f"{_FS_DIR}/batch.npz",
            "out": f"{_FS_DIR}/outputs.npz",
            "cases": [{"id": c.id, "feeds": c.feed_names} for c in batch],
        }
        code = self.source + f"\nawait run_batch({json.dumps(json.dumps(args))})\n"
        slot.batch = batch
        slot.done = False
        slot.running = -1
        slot.last_progress = time.monotonic()
        try:
            slot.page.write_file(slot.prefix + "batch.npz", f"{_FS_DIR}/batch.npz")
            slot.page.page.evaluate(_KICKOFF, code)
        except Exception:
            # The page died between batches; the main loop replaces it.
            slot.crashed = True

    def _finish(self, slot: _Slot) -> list[list[Case]]:
        """Collect a finished batch; returns the cases that must run again elsewhere."""
        assert slot.page is not None
        batch, slot.batch = slot.batch, []
        value = slot.page.page.evaluate("() => window.__ortwebConformance")
        if not value or not value.get("ok"):
            # The batch runner itself failed (not a case): blame the running case.
            message = f"the batch failed in the page: {value and value.get('message')}"
            return self._lost(slot, batch, message, reopen=True)
        records = json.loads(value["value"])
        stored = np.load(BytesIO(slot.page.read_file(f"{_FS_DIR}/outputs.npz")),
                         allow_pickle=False)
        fatal = False
        for record in records:
            case = batch[record["index"]]
            details = {k: record[k] for k in ("provider", "create_ms", "run_ms", "reasons")
                       if k in record}
            if "error" in record:
                self.results[case.id] = Outcome(error=record["error"],
                                                error_type=record.get("error_type", ""),
                                                details=details)
                fatal = fatal or bool(record.get("fatal"))
            else:
                outputs = [_from_storable(stored[f"o{record['index']}_{j}"])
                           for j in range(record["outputs"])]
                self.results[case.id] = Outcome(outputs=outputs, details=details)
        rest = batch[len(records):]
        if fatal:
            last = batch[len(records) - 1].id
            self.log(f"  page for {self.ep} replaced after a fatal error in {last}")
            self._close(slot)
        return [rest] if rest else []

    def _lost(self, slot: _Slot, batch: list[Case], message: str,
              reopen: bool) -> list[list[Case]]:
        """The page died or hung while running ``batch``: mark the culprit, requeue the rest."""
        if reopen:
            self._close(slot)
        slot.batch = []
        if slot.running == _SAVING and len(batch) > 1:
            # Lost while writing every output: no single case to blame, so each
            # runs again alone, where a culprit shows itself.
            self.log(f"  a page for {self.ep} was lost saving a batch ({message}); "
                     f"running its {len(batch)} cases one at a time")
            return [[c] for c in batch]
        culprit = slot.running if 0 <= slot.running < len(batch) else 0
        case = batch[culprit]
        self.results[case.id] = Outcome(error=message, error_type="PageFailure")
        self.log(f"  {case.id} [{self.ep}]: {message}; continuing in a new page")
        rest = batch[:culprit] + batch[culprit + 1:]
        return [rest] if rest else []

    def _pump(self, ms: int) -> None:
        for slot in self.slots:
            if slot.page is not None and not slot.crashed:
                try:
                    slot.page.page.wait_for_timeout(ms)
                except Exception:
                    slot.crashed = True
                    continue
                return
        time.sleep(ms / 1000)

    def run(self, batches: list[list[Case]]) -> dict[str, Outcome]:
        queue = deque(batches)
        try:
            while queue or any(s.busy for s in self.slots):
                for slot in self.slots:
                    if not slot.busy and queue:
                        self._start(slot, queue.popleft())
                more_native = self.on_idle()
                self._pump(1 if more_native else 25)
                now = time.monotonic()
                for slot in self.slots:
                    if not slot.busy:
                        continue
                    again: list[list[Case]] = []
                    if slot.crashed:
                        again = self._lost(slot, slot.batch, "the page crashed", reopen=True)
                    elif slot.done:
                        again = self._finish(slot)
                    elif now - slot.last_progress > self.case_timeout:
                        again = self._lost(
                            slot, slot.batch,
                            f"the page hung: no progress for {self.case_timeout:.0f} s",
                            reopen=True,
                        )
                    queue.extendleft(reversed(again))
        finally:
            self.close()
        return self.results


def run_browser(runtime: Runtime, cases: Sequence[Case], ep: str, *, jobs: int = 1,
                case_timeout: float = 120.0, webgpu_build: str = "native",
                batch_size: int = 64, on_idle: Callable[[], bool] | None = None,
                on_page: Callable[[PyodidePage], None] | None = None,
                log: Callable[[str], None] = print) -> tuple[dict[str, Outcome], int]:
    """Run ``cases`` through ortweb in pages of ``runtime`` on ``ep``.

    Parameters
    ----------
    runtime : Runtime
    cases : sequence of Case
        Cases :func:`~.classify.static_unsupported` lets through.
    ep : str
        ``'wasm'`` or ``'webgpu'``: the only provider each session is given.
    jobs : int
        Pages running batches at the same time.
    case_timeout : float
        Seconds without a new case starting before the page counts as hung.
    webgpu_build : str
        ``'native'`` or ``'jsep'``.
    batch_size : int
        Cases sent to a page at once.
    on_idle : callable, optional
        Called between polls of the pages; returns whether it has more to do
        (the host's native runs go here).
    on_page : callable, optional
        Called with every page opened (the first and each replacement).
    log : callable
        Where progress lines go.

    Returns
    -------
    dict of str to Outcome, int
        Each case's outcome by :attr:`Case.id`, and how many pages were opened.
    """
    run = _BrowserRun(runtime, ep, jobs, case_timeout, webgpu_build,
                      on_idle or (lambda: False), log, on_page)
    results = run.run(make_batches(cases, batch_size))
    return results, run.pages


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
    case_timeout: Callable[[str], float] | None = None,
    webgpu_build: str = "native",
    known: Callable[[Case, str], str | None] | None = None,
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
        Pages per EP running batches at the same time.
    case_timeout : callable, optional
        Seconds without progress before a page counts as hung, per EP
        (default 120 on wasm, 600 on webgpu).
    webgpu_build : str
        ``'native'`` or ``'jsep'``.
    known : callable, optional
        ``known(case, ep)`` → the reason a failing case is listed, or None.
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
        browser, pages = run_browser(runtime, sendable, ep, jobs=jobs, case_timeout=timeout,
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
                result.known = known(case, ep)
            results.append(result)
        out[ep] = (results, time.monotonic() - t0)
        log(f"  {ep}: {len(sendable)} cases through the browser in {pages} page(s)")
    return out
