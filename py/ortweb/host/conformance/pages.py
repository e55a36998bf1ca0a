"""Batches of conformance cases through ortweb in Pyodide pages.

Cases go to a page in batches: one ``.npz`` with the batch's models and inputs
is copied into Pyodide's file system, ``_inpage.py`` runs them one after the other
through ``ortweb.InferenceSession`` and writes one ``.npz`` of outputs, and the
host reads it back. A page load (Pyodide, numpy, ortweb: seconds, the cold start
of the docs' development notes) is paid once per page, not once per case.

The host never waits *inside* a page: each batch is a background run of the
page driver (:mod:`ortweb.host.browser.runs`), the page reports each case it
starts on the console, and the host pumps Playwright's events in between native
runs. A page that makes no progress for the case timeout counts as hung; a hung
or crashed page is closed, the case that was running is marked, and the rest of
its batch continues in a fresh page. A crash is a case's verdict only when it
repeats: a renderer can die of what is not the case's (Chromium's heap profiler
killed about one page in a hundred here until :data:`~ortweb.host.browser.flags.FEATURES`
turned its guard on; a browser elsewhere may lack it), so the case first runs once
more, alone.
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

from ..browser import BrowserError, PageFailure, PageKeeper, PyodidePage, Runtime
from .cases import Case
from .classify import Outcome

__all__ = ["make_batches", "run_browser"]

_FS_DIR = "/tmp/ortweb-conformance"
_BOOT_ATTEMPTS = 3
_SAVING = -2  # the page is writing the batch's outputs


def _inpage_source() -> str:
    return Path(__file__).with_name("_inpage.py").read_text()


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


@dataclass
class _Slot:
    """One page (replaced when it dies) and the batch it is running.

    Slot ``index`` takes its browser from the runtime's pool (round robin over
    the endpoints); ``where`` names that browser and its adapter.
    """

    keeper: PageKeeper
    folder: Path
    prefix: str
    index: int = 0
    where: dict[str, Any] | None = None
    tag: str = ""
    batch: list[Case] = field(default_factory=list)
    run: int = -1
    last_progress: float = 0.0
    running: int = -1
    lost: str = ""

    @property
    def busy(self) -> bool:
        return bool(self.batch)

    @property
    def page(self) -> PyodidePage | None:
        return self.keeper.current

    @property
    def crashed(self) -> bool:
        page = self.page
        return bool(self.lost or (page is not None and page.lost))


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
        #: Cases whose page crashed once and that ran again alone.
        self.crashed_once: set[str] = set()
        self.stack = ExitStack()
        self.slots = [self._slot(i) for i in range(max(1, jobs))]

    @property
    def pages(self) -> int:
        """Pages opened so far (the first of each slot and every replacement)."""
        return sum(slot.keeper.boots for slot in self.slots)

    # -- pages --------------------------------------------------------------------

    def _slot(self, index: int) -> _Slot:
        folder, prefix = self.stack.enter_context(self.runtime.shared_folder())
        slot = _Slot(PageKeeper(lambda: self._boot(slot), attempts=_BOOT_ATTEMPTS,
                                log=lambda line: self.log(f"  {line}")), folder, prefix,
                     index=index)
        return slot

    def _boot(self, slot: _Slot) -> PyodidePage:
        slot.tag = f"\u0002{uuid.uuid4().hex[:8]}:"
        slot.lost = ""

        def on_output(stream: str, line: str) -> None:
            if stream != "stdout" or not line.startswith(slot.tag):
                return
            what = line[len(slot.tag):]
            slot.running = _SAVING if what == "saving" else int(what[len("start "):])
            slot.last_progress = time.monotonic()

        from playwright.sync_api import Error as PlaywrightError

        try:
            # A browser elsewhere that went away is replaced from the pool here.
            slot.where = self.runtime.where(slot.index)
            page = self.runtime.new_page(slot.index, on_output=on_output,
                                         webgpu_build=self.webgpu_build)
        except PlaywrightError as exc:  # the browser went away meanwhile: tried again
            raise BrowserError(f"a page failed to open: {exc}") from None
        if self.on_page is not None:
            self.on_page(page)
        return page

    def close(self) -> None:
        for slot in self.slots:
            slot.keeper.close()
        self.stack.close()

    # -- batches --------------------------------------------------------------------

    def _start(self, slot: _Slot, batch: list[Case]) -> None:
        page = slot.keeper.page
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
            # The engine's own answer, not ortweb's table of it (the table is made
            # from these runs): every op of the case is trusted.
            "cases": [{"id": c.id, "feeds": c.feed_names,
                       "ops": sorted({op if dom in ("", "ai.onnx") else f"{dom}.{op}"
                                      for dom, op, _ in c.ops})} for c in batch],
        }
        code = self.source + f"\nawait run_batch({json.dumps(json.dumps(args))})\n"
        slot.batch = batch
        slot.running = -1
        slot.last_progress = time.monotonic()
        try:
            page.write_file(slot.prefix + "batch.npz", f"{_FS_DIR}/batch.npz")
            slot.run = page.runs.start(code, "<conformance>")
        except Exception as exc:
            # The page died between batches; the main loop replaces it.
            slot.lost = str(exc) or "the page is gone"

    def _finish(self, slot: _Slot) -> list[list[Case]]:
        """Collect a finished batch; returns the cases that must run again elsewhere."""
        page = slot.keeper.page
        batch, slot.batch = slot.batch, []
        value = page.runs.take(slot.run)
        if not value.get("ok"):
            # The batch runner itself failed (not a case): blame the running case.
            message = f"the batch failed in the page: {value.get('message')}"
            return self._lost(slot, batch, message)
        records = json.loads(value["value"])
        stored = np.load(BytesIO(page.read_file(f"{_FS_DIR}/outputs.npz")), allow_pickle=False)
        fatal = False
        for record in records:
            case = batch[record["index"]]
            details = {k: record[k] for k in ("provider", "create_ms", "run_ms", "reasons")
                       if k in record}
            details["browser"] = slot.where
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
            slot.keeper.discard(f"a fatal error in {last}")
        return [rest] if rest else []

    def _lost(self, slot: _Slot, batch: list[Case], message: str) -> list[list[Case]]:
        """The page died or hung while running ``batch``: mark the culprit, requeue the rest."""
        slot.keeper.discard(message)
        slot.batch = []
        if slot.running == _SAVING and len(batch) > 1:
            # Lost while writing every output: no single case to blame, so each
            # runs again alone, where a culprit shows itself.
            self.log(f"  a page for {self.ep} was lost saving a batch ({message}); "
                     f"running its {len(batch)} cases one at a time")
            return [[c] for c in batch]
        culprit = slot.running if 0 <= slot.running < len(batch) else 0
        case = batch[culprit]
        rest = batch[:culprit] + batch[culprit + 1:]
        # Only the renderer's own death: a browser elsewhere that went away is
        # reported as such (its endpoint named), not run again.
        if message == "the page crashed" and case.id not in self.crashed_once:
            self.crashed_once.add(case.id)
            self.log(f"  {case.id} [{self.ep}]: {message}; running it again alone in a "
                     "new page (a crash counts when it repeats)")
            return [[case]] + ([rest] if rest else [])
        self.results[case.id] = Outcome(error=message, error_type=PageFailure.__name__,
                                        details={"browser": slot.where})
        self.log(f"  {case.id} [{self.ep}]: {message}; continuing in a new page")
        return [rest] if rest else []

    def _crash_message(self, slot: _Slot) -> str:
        page = slot.page
        if page is not None and page.frozen:
            return f"the page hung: {page.frozen}"
        pool = self.runtime.pool
        where = (slot.where or {}).get("endpoint", "local")
        if where != "local" and pool is not None and not pool.connected(slot.index):
            return f"the page crashed: its browser at {where} went away"
        return "the page crashed"

    def _pump(self, ms: int) -> None:
        # Any live page will do: waiting on one delivers the events of all.
        for slot in self.slots:
            page = slot.page
            if page is not None and not slot.crashed and page.pump(ms):
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
                        again = self._lost(slot, slot.batch, self._crash_message(slot))
                    elif slot.page is not None and slot.page.runs.finished(slot.run):
                        again = self._finish(slot)
                    elif now - slot.last_progress > self.case_timeout:
                        again = self._lost(
                            slot, slot.batch,
                            f"the page hung: no progress for {self.case_timeout:.0f} s",
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
