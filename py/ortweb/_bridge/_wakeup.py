"""The microtask wake-up of a task awaiting a bridge call (see :class:`Wakeup`).

Only used where :mod:`._waiting` found the Pyodide it was written for: it stands in
for an asyncio Future, and so leans on asyncio's and Pyodide's WebLoop's internals.
"""

from __future__ import annotations

import asyncio
from collections.abc import Generator
from typing import Any

from ._ffi import create_proxy

__all__ = ["Wakeup", "waker"]

_PENDING, _DONE, _CANCELLED = 0, 1, 2


class Wakeup:
    """What a task awaits while a bridge call runs: woken by the bridge itself.

    The task sees an asyncio future (``_asyncio_future_blocking``, ``get_loop``,
    ``add_done_callback``, ``cancel``, ``result``) and hands it its wake-up callback;
    the bridge (``startThen``) calls :meth:`settled` in the microtask after the call
    settles, and that runs the callback at once, as an ``await`` in JavaScript
    resumes: no turn of the event loop in between (a turn costs more than a tiny
    wasm run). A real Future would reach the task through ``call_soon``, i.e.
    that turn. The wake-up is entered with JSPI allowed (see :func:`waker`), as
    Pyodide's own callbacks are, so the woken task may call the synchronous API.

    Cancelling wakes the task through the loop at once (CancelledError); the call
    itself still completes in JS and its result goes to clean-up
    (:func:`._waiting.abandon`).
    """

    __slots__ = (
        "_asyncio_future_blocking", "_callback", "_context", "_loop", "_outcome", "_state",
    )

    def __init__(self, loop: asyncio.AbstractEventLoop):
        self._asyncio_future_blocking = False
        self._loop = loop
        self._state = _PENDING
        self._callback: Any = None
        self._context: Any = None
        self._outcome: tuple[bool, Any] = (False, None)

    def get_loop(self) -> asyncio.AbstractEventLoop:
        return self._loop

    def add_done_callback(self, fn: Any, *, context: Any = None) -> None:
        if self._state != _PENDING:
            self._loop.call_soon(fn, self, context=context)
            return
        self._callback, self._context = fn, context

    def remove_done_callback(self, fn: Any) -> int:
        if self._callback is None or self._callback != fn:
            return 0
        self._callback = self._context = None
        return 1

    def cancel(self, msg: Any = None) -> bool:
        if self._state != _PENDING:
            return False
        self._state = _CANCELLED
        callback, self._callback = self._callback, None
        if callback is not None:
            self._loop.call_soon(callback, self, context=self._context)
        return True

    def cancelled(self) -> bool:
        return self._state == _CANCELLED

    def done(self) -> bool:
        return self._state != _PENDING

    def result(self) -> None:
        if self._state == _CANCELLED:
            raise asyncio.CancelledError
        if self._state == _PENDING:
            raise asyncio.InvalidStateError("the bridge call has not settled")

    def exception(self) -> BaseException | None:
        self.result()
        return None

    def __await__(self) -> Generator[Any, None, None]:
        if self._state == _PENDING:
            self._asyncio_future_blocking = True
            yield self
        self.result()

    def outcome(self) -> tuple[bool, Any]:
        """``(ok, value or error)`` of the settled call."""
        return self._outcome

    def register(self) -> int:
        """File this waiter for :func:`_wake_waiter`; returns the id the bridge passes back."""
        global _next_waiter
        _next_waiter += 1
        _waiters[_next_waiter] = self
        return _next_waiter

    def settled(self, ok: bool, payload: Any) -> None:
        """Called by the bridge once the call has settled: wake the task now."""
        if self._state != _PENDING:
            return  # cancelled meanwhile: the task was woken then
        self._state = _DONE
        self._outcome = (ok, payload)
        callback, self._callback = self._callback, None
        if callback is None:
            return  # nobody waits (yet): __await__ sees it done
        # What asyncio.Handle._run does, without building a Handle on this hot path.
        try:
            if self._context is None:
                callback(self)
            else:
                self._context.run(callback, self)
        except SystemExit as exc:  # as Pyodide's WebLoop does for its own callbacks
            on_exit = getattr(self._loop, "_system_exit_handler", None)
            if on_exit is None:
                raise
            on_exit(exc.code)
        except KeyboardInterrupt:
            on_interrupt = getattr(self._loop, "_keyboard_interrupt_handler", None)
            if on_interrupt is None:
                raise
            on_interrupt()
        except BaseException as exc:  # as asyncio.Handle reports a callback's error
            self._loop.call_exception_handler({
                "message": f"Exception in callback {callback!r}", "exception": exc,
            })


#: Waiters whose bridge call has not settled yet, by id (see :func:`_wake_waiter`).
_waiters: dict[int, Wakeup] = {}
_next_waiter = 0
_wake_proxy: Any = None


def _wake_waiter(waiter_id: int, ok: bool, payload: Any) -> None:
    waiter = _waiters.pop(waiter_id, None)
    if waiter is not None:
        waiter.settled(ok, payload)


def waker() -> Any:
    """The one JS proxy of :func:`_wake_waiter`, which the bridge calls with JSPI
    allowed (``callPromising``), as Pyodide calls its own event-loop callbacks, so that
    the woken task may use the synchronous API. One proxy and an id per call: a
    ``create_once_callable`` per call cost more than the rest of the wake-up."""
    global _wake_proxy
    if _wake_proxy is None:
        _wake_proxy = create_proxy(_wake_waiter)
    return _wake_proxy
