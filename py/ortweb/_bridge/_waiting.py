"""Waiting for JavaScript: the synchronous driver, the wake-ups and the event loop.

Everything in ortweb that leans on Pyodide's or asyncio's internals is here, and
only used after one check of Pyodide's version (:data:`FALLBACK_REASON`): on the
0.27 series it was written and measured for, bridge calls wake their task in a
microtask, :func:`block_on` steps coroutines itself and a page's event loop runs on
the bridge's scheduler. On any other Pyodide these are all off and ortweb waits
through Pyodide's public API alone (``run_sync``, awaiting a JS promise): slower,
never wrong, and said once with a :class:`RuntimeWarning`.
"""

from __future__ import annotations

import asyncio
import contextlib
import warnings
from collections.abc import Awaitable, Coroutine, Generator
from typing import Any, TypeVar

from ..errors import OrtWebError, SyncUnavailable
from ._ffi import (
    GLOBAL,
    IN_BROWSER,
    can_run_sync,
    create_once_callable,
    require_browser,
    run_js,
    run_sync,
)
from ._wakeup import Wakeup, waker

__all__ = [
    "FALLBACK_REASON",
    "PYODIDE_SERIES",
    "abandon",
    "block_on",
    "bridge_wakeup",
    "event_loop",
    "notice_bridge",
    "start_call",
    "unsupported_reason",
]

T = TypeVar("T")

# -- the one version check ------------------------------------------------------------

#: The Pyodide series whose internals the fast paths below were written against:
#: ``pyodide.webloop.scheduleCallback``, ``pyodide_js._api``, WebLoop's private exit
#: handlers, ``PyProxy.callPromising`` and how ``run_sync`` treats what it is given.
PYODIDE_SERIES = (0, 27)


def unsupported_reason(version: str | None) -> str | None:
    """Why the fast paths are off for Pyodide ``version``, or None when they are on.

    Parameters
    ----------
    version : str or None
        ``pyodide.__version__``, or None when it cannot be read.

    Returns
    -------
    str or None
        None for a version of :data:`PYODIDE_SERIES`; otherwise a sentence naming the
        version found and the one expected.
    """
    wanted = ".".join(map(str, PYODIDE_SERIES))
    if version is None:
        return f"Pyodide's version could not be read (ortweb's fast waiting needs {wanted}.x)"
    parts = version.split(".")
    try:
        found = (int(parts[0]), int(parts[1]))
    except (IndexError, ValueError):
        found = None
    if found == PYODIDE_SERIES:
        return None
    return (f"Pyodide {version} is not the {wanted}.x whose internals ortweb's fast waiting "
            "relies on")


def _pyodide_version() -> str | None:
    try:
        import pyodide
    except ImportError:
        return None
    version = getattr(pyodide, "__version__", None)
    return None if version is None else str(version)


#: Why this Pyodide waits through the public API only, or None (on the host too,
#: where nothing waits).
FALLBACK_REASON = unsupported_reason(_pyodide_version()) if IN_BROWSER else None
_fast = FALLBACK_REASON is None

_SYNC_HINT = (
    "the synchronous ortweb API needs JSPI and Python entered through "
    "pyodide.runPythonAsync() (or an async function called from JavaScript); "
    "here Python was entered synchronously (pyodide.runPython()). Use the async API "
    "instead, e.g. `sess = await ortweb.InferenceSession.create(...)` and "
    "`await sess.run_async(...)`, or run your code with runPythonAsync"
)

_NO_JSPI_HINT = (
    "the synchronous ortweb API needs WebAssembly stack switching (JSPI), which this "
    "browser does not have (Chromium-based browsers do; Firefox and Safari do not yet). "
    "Use the async API instead, e.g. `sess = await ortweb.InferenceSession.create(...)` "
    "and `await sess.run_async(...)`"
)


def _engine_has_jspi() -> bool:
    """Whether the JavaScript engine has JSPI (either API Pyodide knows)."""
    wasm = getattr(GLOBAL, "WebAssembly", None)
    return wasm is not None and any(hasattr(wasm, n) for n in ("Suspending", "Suspender"))


# -- the event loop ------------------------------------------------------------------

#: How Pyodide's asyncio loop runs zero-delay callbacks here: ``"ortweb"`` (the
#: bridge's MessageChannel scheduler), ``"pyodide"``, or None before the bridge is seen.
_event_loop: str | None = None

#: Whether a task awaiting a bridge call is woken in the microtask after the call
#: settles (the bridge's ``startThen``) rather than after a turn of the event loop.
_wake_in_microtask = False


def notice_bridge(bridge: Any) -> None:
    """Called with the bridge each time it is looked up: the first time (or after
    :data:`_event_loop` is reset), the event loop is sped up."""
    if _event_loop is None:
        _speed_up_event_loop(bridge)


def _speed_up_event_loop(bridge: Any) -> None:
    """Wake tasks sooner: in a microtask after their bridge call, and through a
    ``MessageChannel`` rather than ``window.postMessage`` otherwise.

    A turn of Pyodide's event loop costs more than a tiny wasm run, and every
    ``await`` of a bridge call used to wait for one. Now the bridge wakes the
    awaiting task in the microtask after the call settles, as an ``await`` in
    JavaScript resumes (:class:`._wakeup.Wakeup`; ``bridge_js/scheduler.js`` keeps such
    chains short enough for the page to stay responsive). And on a page's main
    thread, where Pyodide 0.27 runs each asyncio callback from a
    ``window.postMessage`` task, the loop uses a ``MessageChannel`` as Pyodide itself
    does in a worker, which turns the loop faster (docs: *Python in the browser*,
    Waiting for JavaScript).
    Only the transport changes: one callback per task, in order.

    A page keeps Pyodide's own behaviour for both with
    ``globalThis.ortwebConfig = {fastEventLoop: false}`` set before ortweb is imported;
    another Pyodide than :data:`PYODIDE_SERIES` always does (:data:`FALLBACK_REASON`).
    """
    global _event_loop, _wake_in_microtask
    _event_loop = "pyodide"
    _wake_in_microtask = False
    if not _fast:
        warnings.warn(f"ortweb: {FALLBACK_REASON}; waiting for JavaScript through Pyodide's "
                      "public API instead (slower, same results)", RuntimeWarning, stacklevel=2)
        return
    config = getattr(GLOBAL, "ortwebConfig", None)
    if config is not None and getattr(config, "fastEventLoop", None) is False:
        return
    _wake_in_microtask = getattr(bridge, "startThen", None) is not None
    scheduler = getattr(bridge, "scheduleCallback", None)
    if scheduler is None or getattr(GLOBAL, "document", None) is None:
        return  # in a worker Pyodide uses a MessageChannel already
    try:
        import pyodide_js
        from pyodide import webloop
    except ImportError:  # pragma: no cover - not Pyodide's runtime
        return
    current = getattr(webloop, "scheduleCallback", None)
    if current is None or not _same_js(current, pyodide_js._api.scheduleCallback):
        return  # someone replaced it already: theirs stays
    webloop.scheduleCallback = scheduler
    _event_loop = "ortweb"


def _same_js(a: Any, b: Any) -> bool:
    return bool(run_js("(a, b) => a === b")(a, b))


def event_loop() -> str | None:
    """Who schedules asyncio's callbacks in this page (see :func:`_speed_up_event_loop`)."""
    return _event_loop


def bridge_wakeup() -> str | None:
    """How a task awaiting a bridge call is woken: ``"microtask"`` or ``"event-loop"``."""
    if _event_loop is None:
        return None
    return "microtask" if _wake_in_microtask else "event-loop"


# -- blocking ------------------------------------------------------------------------


def block_on(awaitable: Awaitable[T]) -> T:
    """Run ``awaitable`` to completion synchronously (JSPI ``run_sync``).

    A coroutine is stepped here rather than handed to ``run_sync`` whole: ``run_sync``
    wraps it in an asyncio Task, and starting that Task, waking it and reporting its
    end each cost a turn of the event loop. Stepped here, each bridge call suspends
    once, on its own promise; anything else the coroutine awaits is waited for with
    ``run_sync`` as usual.

    Raises
    ------
    SyncUnavailable
        When Python cannot block here; the message says what to do instead.
    """
    if run_sync is None or not IN_BROWSER or (can_run_sync is not None and not can_run_sync()):
        close = getattr(awaitable, "close", None)
        if close is not None:
            close()  # never leave a "coroutine was never awaited" warning behind
        if not IN_BROWSER:
            require_browser()
        raise SyncUnavailable(_SYNC_HINT if _engine_has_jspi() else _NO_JSPI_HINT)
    if not _fast or not isinstance(awaitable, Coroutine):
        return run_sync(awaitable)  # type: ignore[no-any-return]
    return _drive(awaitable)


#: True while :func:`_drive` is stepping a coroutine, so that :class:`_JobWait` hands
#: its job to the driver; never True while Python is suspended, when other tasks run.
_driving = False


def _drive(coro: Coroutine[Any, Any, T]) -> T:
    global _driving
    error: BaseException | None = None
    while True:
        outer, _driving = _driving, True
        try:
            yielded = coro.send(None) if error is None else coro.throw(error)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]
        finally:
            _driving = outer
        error = None
        _driving = False
        try:
            if isinstance(yielded, _JobWait):
                if not yielded.job.done:
                    run_sync(yielded.job.wait())
            elif yielded is None:  # a bare yield (asyncio.sleep(0)): one turn of the loop
                run_sync(asyncio.sleep(0))
            elif isinstance(yielded, asyncio.Future):
                # The coroutine reads the outcome itself when resumed (Future.__await__).
                with contextlib.suppress(BaseException):
                    run_sync(yielded)
                if not yielded.done():
                    error = OrtWebError("internal: a future was not done after run_sync")
            else:
                error = RuntimeError(f"ortweb.block_on: cannot wait for {yielded!r}")
        except BaseException as exc:  # the wait itself failed: raise it where it waited
            error = exc
        finally:
            _driving = outer


# -- awaiting one bridge call ------------------------------------------------------------


def start_call(bridge: Any, method: str, args: tuple[Any, ...]) -> tuple[Any, Any]:
    """Start ``bridge[method](*args)`` as a job (``bridge_js/index.js`` ``start``).

    Returns
    -------
    waiter : awaitable
        Await it until the call has settled, then read ``waiter.outcome()``:
        ``(ok, value or error)``.
    job : JsProxy
        The bridge's job, for :func:`abandon`.
    """
    loop = None if _driving or not _wake_in_microtask else asyncio._get_running_loop()
    if loop is None:
        job = bridge.start(method, *args)
        return _JobWait(job), job
    waiter = Wakeup(loop)
    job = bridge.startThen(waker(), waiter.register(), method, *args)
    return waiter, job


def abandon(bridge: Any, method: str, job: Any) -> None:
    """The task awaiting ``job`` was cancelled. The JS call still completes (ORT cannot
    be interrupted): what it produces goes to the bridge's clean-up (``discard``), as
    nobody else will take it."""
    job.promise.then(create_once_callable(lambda env: bridge.discard(method, env)))


class _JobWait:
    """``await _JobWait(job)``: until a job from ``bridge.start`` has settled.

    Under :func:`_drive` the job goes to the driver, which suspends on its promise.
    In a task (when the bridge cannot wake it, see :class:`._wakeup.Wakeup`), one turn of
    the event loop runs every microtask the call queued, so a call that waits on
    nothing outside JS (a wasm run, most bridge calls) has settled by then and its
    envelope is read straight from the job; awaiting the promise instead costs two
    turns (Pyodide resolves an asyncio Future from the promise, and that Future then
    wakes the task).
    """

    __slots__ = ("job",)

    def __init__(self, job: Any):
        self.job = job

    def __await__(self) -> Generator[Any, None, None]:
        if _driving:
            yield self
            return
        if _fast:
            yield  # one turn of the event loop, as asyncio.sleep(0) does
        if not self.job.done:
            yield from self.job.wait().__await__()

    def outcome(self) -> tuple[bool, Any]:
        """``(ok, value or error)`` of the settled job."""
        envelope = self.job.envelope
        ok = bool(envelope.ok)
        return ok, envelope.value if ok else envelope.error
