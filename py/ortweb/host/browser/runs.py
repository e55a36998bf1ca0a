"""Python runs in a page that the host does not wait inside: deadline and interrupt.

A run is started without awaiting it; the page says on the console when it is
over (a :data:`~.capture.CONTROL` message), and the host pumps Playwright's
events with ``wait_for_timeout`` until then. A page whose main thread is stuck
in wasm or in a JavaScript loop would block any ``evaluate`` forever, so this is
how such a page is noticed at all.

With a deadline, a run is stopped in three steps, so that it is reported with
the place it was stuck at whenever possible:

1. a Web Worker sets Pyodide's interrupt flag at the deadline, and Python raises
   ``KeyboardInterrupt`` where it is (the run ends with that error);
2. :data:`GUARD_S` later, the page gives up waiting for a run that is suspended
   in JavaScript (an ``await`` that never resolves): the run ends with
   ``timedOut`` set;
3. :data:`HARD_S` after the deadline, the host stops waiting for a page whose
   main thread never comes back (:class:`~ortweb.host.errors.PageUnresponsive`).

After steps 2 and 3 the page is not fit for more work; replace it
(:class:`~.keeper.PageKeeper`).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from ..errors import PageFailure, PageUnresponsive
from .capture import CONTROL, TAG

if TYPE_CHECKING:
    from .page import PyodidePage

__all__ = ["GUARD_S", "HARD_S", "POLL_MS", "Runs"]

#: Python has this long after the interrupt before the page stops waiting for it.
GUARD_S = 3.0
#: The host waits this long past the deadline before it gives up on the page.
HARD_S = 10.0
#: How often the host looks for the end of a run, at most: it looks after 1 ms, then
#: twice as long each time up to this, since most runs are over in a few milliseconds.
POLL_MS = 20

_JS = r"""
([tag, control]) => {
  const w = /** @type {any} */ (window);
  if (w.__ortwebRuns) return true;
  const py = w.pyodide;
  // Bound now: a run that replaces console.log must not hide its own end.
  const log = console.log.bind(console);
  // Made on the first run with a deadline. flag[0] is Pyodide's interrupt flag
  // (2 = SIGINT). state[0] is the armed generation; the worker claims it
  // (compare-exchange) before it interrupts, and writes state[1] = generation
  // once the flag is set, so that disarming never races with a late interrupt.
  let interrupts = null;
  const interrupter = () => {
    if (interrupts) return interrupts;
    const flag = new Int32Array(new SharedArrayBuffer(4));
    const state = new Int32Array(new SharedArrayBuffer(8));
    py.setInterruptBuffer(flag);
    const src = `onmessage = (e) => {
      const [flag, state, gen, ms] = e.data;
      setTimeout(() => {
        if (Atomics.compareExchange(state, 0, gen, -gen) === gen) {
          Atomics.store(flag, 0, 2);
          Atomics.store(state, 1, gen);
        }
      }, ms);
    };`;
    const worker = new Worker(URL.createObjectURL(new Blob([src], { type: 'text/javascript' })));
    let gen = 0;
    interrupts = {
      arm(ms) {
        gen += 1;
        Atomics.store(flag, 0, 0);
        Atomics.store(state, 0, gen);
        worker.postMessage([flag, state, gen, ms]);
        return gen;
      },
      disarm(g) {
        if (Atomics.compareExchange(state, 0, g, 0) !== g) {
          while (Atomics.load(state, 1) !== g) { /* the worker is between its two stores */ }
        }
        Atomics.store(flag, 0, 0);
      },
    };
    return interrupts;
  };
  let next = 0;
  let scope = null;
  const runs = new Map();
  w.__ortwebRuns = {
    start(code, filename, softMs, guardMs) {
      const id = ++next;
      const run = { done: false, result: null, timedOut: false };
      runs.set(id, run);
      setTimeout(async () => {
        const g = softMs === null ? null : interrupter().arm(softMs);
        let timer = null;
        const guard = new Promise((resolve) => {
          if (guardMs !== null) timer = setTimeout(() => resolve(null), guardMs);
        });
        // The runner page's entry point (web/runner.js), in the run's globals.
        const work = w.ortwebRunPython(code, filename, scope);
        const result = await Promise.race([work, guard]);
        clearTimeout(timer);
        if (g !== null) interrupts.disarm(g);
        if (result === null) {
          run.timedOut = true;
          run.result = { ok: false, type: 'TimeoutError', message: 'still running' };
        } else {
          run.result = result;
        }
        run.done = true;
        log(`${tag}${control}\u0001done ${id}`);
      }, 0);
      return id;
    },
    take(id) {
      const r = runs.get(id);
      runs.delete(id);
      return r ? { ...r.result, timedOut: r.timedOut } : null;
    },
    newScope() {
      if (scope) scope.destroy();
      scope = py.globals.get('dict')();
      scope.set('__name__', '__main__');
    },
    dropScope() { if (scope) scope.destroy(); scope = null; },
  };
  return true;
}
"""


class Runs:
    """The background runs of one :class:`~.page.PyodidePage` (its ``runs``)."""

    def __init__(self, owner: PyodidePage):
        self._owner = owner
        self._installed = False
        self._finished: set[int] = set()

    def on_control(self, text: str) -> None:
        """A control message of the page (see :func:`~.capture.watch`)."""
        what, _, run_id = text.partition(" ")
        if what == "done":
            self._finished.add(int(run_id))

    def _evaluate(self, expression: str, arg: Any = None) -> Any:
        from playwright.sync_api import Error as PlaywrightError

        try:
            return self._owner.page.evaluate(expression, arg)
        except PlaywrightError as exc:
            raise PageFailure(self._owner.frozen or str(exc)) from None

    def start(self, code: str, filename: str, deadline: float | None = None) -> int:
        """Start ``code`` (``runPythonAsync``) and return its id at once.

        Parameters
        ----------
        code, filename : str
        deadline : float, optional
            Seconds after which Python is interrupted, and :data:`GUARD_S` later
            the run ends as ``timedOut`` if it is still waiting on JavaScript.

        Raises
        ------
        PageFailure
            When the page is gone.
        """
        self._install()
        soft = None if deadline is None else max(int(deadline * 1000), 1)
        guard = None if soft is None else soft + int(GUARD_S * 1000)
        return int(self._evaluate("([c, f, s, g]) => window.__ortwebRuns.start(c, f, s, g)",
                                  [code, filename, soft, guard]))

    def finished(self, run_id: int) -> bool:
        """Whether the page said that run ``run_id`` is over (no round trip)."""
        return run_id in self._finished

    def take(self, run_id: int) -> dict[str, Any]:
        """The result of a finished run: ``{ok, value}`` or ``{ok: False, type, message}``,
        with ``timedOut`` (step 2 of the deadline)."""
        self._finished.discard(run_id)
        return dict(self._evaluate("(id) => window.__ortwebRuns.take(id)", run_id) or {})

    def wait(self, run_id: int, timeout: float) -> dict[str, Any]:
        """Pump the page's events until run ``run_id`` is over; returns :meth:`take`.

        Raises
        ------
        PageUnresponsive
            When it is not over after ``timeout`` seconds.
        PageFailure
            When the page crashed or closed.
        """
        end = time.monotonic() + timeout
        step = 1
        while run_id not in self._finished:
            if self._owner.lost:
                raise PageFailure(self._owner.lost)
            if time.monotonic() > end:
                raise PageUnresponsive(f"the page did not answer within {timeout:g} s")
            self._owner.pump(step)
            step = min(step * 2, POLL_MS)
        return self.take(run_id)

    def run(self, code: str, filename: str, deadline: float) -> dict[str, Any]:
        """:meth:`start` with ``deadline``, then :meth:`wait` until :data:`HARD_S` past it."""
        return self.wait(self.start(code, filename, deadline), deadline + HARD_S)

    def scope(self, fresh: bool) -> None:
        """Run later code in fresh globals (``fresh``), or in the page's own again."""
        self._install()
        self._evaluate("(f) => f ? window.__ortwebRuns.newScope() "
                       ": window.__ortwebRuns.dropScope()", fresh)

    def _install(self) -> None:
        if not self._installed:
            self._evaluate(_JS, [TAG, CONTROL])
            self._installed = True
