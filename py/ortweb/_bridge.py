"""The one module that talks to JavaScript: ``globalThis.ortwebBridge``.

Everything else in ortweb is plain Python and imports on the host too; this
module's JS imports are guarded so that unit tests and type checks run outside
Pyodide, and any call that needs the browser there raises a clear error.

Every bridge call resolves to an envelope (``{ok, value}`` / ``{ok: false, error}``),
translated here, once, by :func:`ortweb.errors.from_envelope`.

Where no page installed the bridge (a JupyterLite kernel runs Python in a Web Worker
that ortweb's page code never touches), this module imports it itself from the URL
given by ``globalThis.ortwebConfig.bridgeURL`` or the ``ORTWEB_BRIDGE_URL``
environment variable: see :func:`ensure_bridge`.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from collections.abc import Awaitable, Coroutine, Generator, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from . import _dtypes
from ._convert import WireTensor, from_wire, wire_buffer
from .errors import OrtWebError, SyncUnavailable, from_envelope

__all__ = [
    "IN_BROWSER",
    "block_on",
    "bridge_url",
    "call",
    "create_session",
    "ensure_bridge",
    "fetch_bytes",
    "get_bridge",
    "release_session",
    "run_session",
]

T = TypeVar("T")

IN_BROWSER = sys.platform == "emscripten"

if IN_BROWSER:  # pragma: no cover - exercised by the browser tests
    import js
    from pyodide.code import run_js
    from pyodide.ffi import create_once_callable, create_proxy, to_js

    try:
        from pyodide.ffi import can_run_sync, run_sync
    except ImportError:  # older Pyodide: no JSPI support in the API
        can_run_sync = None
        run_sync = None
    _GLOBAL = js.globalThis  # one proxy, looked up per call otherwise
else:
    js = None
    _GLOBAL = None
    run_js = None
    create_once_callable = None
    create_proxy = None
    to_js = None
    can_run_sync = None
    run_sync = None

_SYNC_HINT = (
    "the synchronous ortweb API needs JSPI and Python entered through "
    "pyodide.runPythonAsync() (or an async function called from JavaScript); "
    "here Python was entered synchronously (pyodide.runPython()). Use the async API "
    "instead, e.g. `sess = await ortweb.InferenceSession.create(...)` and "
    "`await sess.run_async(...)`, or run your code with runPythonAsync"
)


#: Environment variable naming the URL of ``bridge_js/index.js`` for Pythons that no
#: page set up (``ortweb lite`` sets it through Pyodide's ``env`` option).
BRIDGE_URL_ENV = "ORTWEB_BRIDGE_URL"

# `import()` is syntax, not a function, so Python can only reach it through a tiny JS
# function. The bridge is installed in JS as soon as the module arrives, so it is ready
# even if Python never awaits this; the no-op catch keeps an unused failure from being
# reported as an unhandled rejection (awaiting the promise still raises it).
_LOADER_JS = """(url) => {
  const p = import(url).then((m) => { globalThis.ortwebBridge ?? m.installBridge(); return m; });
  p.catch(() => {});
  return p;
}"""
_loading: Any = None  # the JS promise of the bridge's module, shared by all callers


def bridge_url() -> str | None:
    """The absolute URL to import the bridge from when none is installed, or None.

    ``globalThis.ortwebConfig.bridgeURL`` wins over ``$ORTWEB_BRIDGE_URL``; a relative
    URL is resolved against ``location.href``, which in a Web Worker is the URL of the
    worker's script, not of the page.
    """
    if not IN_BROWSER:
        return None
    config = getattr(js.globalThis, "ortwebConfig", None)
    url = getattr(config, "bridgeURL", None) if config is not None else None
    url = url or os.environ.get(BRIDGE_URL_ENV)
    if not url:
        return None
    return str(js.URL.new(str(url), js.location.href).href)


def _start_loading() -> Any:
    global _loading
    url = bridge_url()
    if _loading is None and url is not None:
        _loading = run_js(_LOADER_JS)(url)
    return _loading


async def ensure_bridge() -> Any:
    """The bridge, imported from :func:`bridge_url` and installed first if needed.

    Raises
    ------
    OrtWebError
        Outside a browser, when no bridge is installed and no URL is configured, or
        when the import fails (the next call tries again).
    """
    global _loading
    if not IN_BROWSER:
        return get_bridge()
    bridge = _installed()
    if bridge is not None:
        return bridge
    loading = _start_loading()
    if loading is None:
        return get_bridge()  # nothing configured: says how to install the bridge
    try:
        module = await loading
    except Exception as exc:
        _loading = None
        raise OrtWebError(f"cannot import the ortweb bridge from {bridge_url()}: {exc}") from None
    if _installed() is None:  # the loader installed it, unless something removed it since
        module.installBridge()
    return _installed()


def get_bridge() -> Any:
    """The page's ``ortwebBridge`` object, or a clear error when there is none.

    When the bridge is not installed but a URL is configured (see :func:`bridge_url`),
    it is imported first, waiting synchronously through JSPI.
    """
    if not IN_BROWSER:
        raise OrtWebError(
            "ortweb's runtime runs inside Pyodide in a browser; on the host use "
            "`ortweb run` / `ortweb exec`, or onnxruntime itself"
        )
    bridge = _installed()
    if bridge is None and bridge_url() is not None:
        if run_sync is None or (can_run_sync is not None and not can_run_sync()):
            raise OrtWebError(
                f"the ortweb bridge is still loading from {bridge_url()} and Python cannot "
                "wait for it here: run `await ortweb._bridge.ensure_bridge()` first"
            )
        return block_on(ensure_bridge())
    if bridge is None:
        raise OrtWebError(
            "the ortweb bridge is not loaded in this page: import "
            "bridge_js/index.js and call installBridge() before importing ortweb, or set "
            f"globalThis.ortwebConfig.bridgeURL or ${BRIDGE_URL_ENV} to its URL"
        )
    return bridge


#: The bridge :func:`_installed` saw last, for :func:`run_session`: reading a property
#: of ``globalThis`` makes a new proxy each time (10-20 µs on a tiny run's path).
_last_seen: Any = None


def _installed() -> Any:
    """``globalThis.ortwebBridge`` or None; the first time one is there, the event loop
    is sped up (:func:`_speed_up_event_loop`)."""
    global _last_seen
    bridge = _last_seen = getattr(_GLOBAL, "ortwebBridge", None)
    if bridge is not None and _event_loop is None:
        _speed_up_event_loop(bridge)
    return bridge


#: How Pyodide's asyncio loop runs zero-delay callbacks here: ``"ortweb"`` (the
#: bridge's MessageChannel scheduler), ``"pyodide"``, or None before the bridge is seen.
_event_loop: str | None = None

#: Whether a task awaiting a bridge call is woken in the microtask after the call
#: settles (the bridge's ``startThen``) rather than after a turn of the event loop.
_wake_in_microtask = False


def _speed_up_event_loop(bridge: Any) -> None:
    """Wake tasks sooner: in a microtask after their bridge call, and through a
    ``MessageChannel`` rather than ``window.postMessage`` otherwise.

    A turn of Pyodide's event loop costs more than a tiny wasm run, and every
    ``await`` of a bridge call used to wait for one. Now the bridge wakes the
    awaiting task in the microtask after the call settles, as an ``await`` in
    JavaScript resumes (:class:`_Wakeup`; ``bridge_js/scheduler.js`` keeps such
    chains short enough for the page to stay responsive). And on a page's main
    thread, where Pyodide 0.27 runs each asyncio callback from a
    ``window.postMessage`` task, the loop uses a ``MessageChannel`` as Pyodide itself
    does in a worker: 0.13-0.20 ms a turn against 0.25-0.29 ms (measured here). Only
    the transport changes: one callback per task, in order.

    A page keeps Pyodide's own behaviour for both with
    ``globalThis.ortwebConfig = {fastEventLoop: false}`` set before ortweb is imported.
    """
    global _event_loop, _wake_in_microtask
    _event_loop = "pyodide"
    _wake_in_microtask = False
    config = getattr(_GLOBAL, "ortwebConfig", None)
    if config is not None and getattr(config, "fastEventLoop", None) is False:
        return
    _wake_in_microtask = getattr(bridge, "startThen", None) is not None
    scheduler = getattr(bridge, "scheduleCallback", None)
    if scheduler is None or getattr(_GLOBAL, "document", None) is None:
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


def block_on(awaitable: Awaitable[T]) -> T:
    """Run ``awaitable`` to completion synchronously (JSPI ``run_sync``).

    A coroutine is stepped here rather than handed to ``run_sync`` whole: ``run_sync``
    wraps it in an asyncio Task, and starting that Task, waking it and reporting its
    end each cost a turn of the event loop (2.0-2.7 ms per tiny ``run`` measured
    here). Stepped here, each bridge call suspends once, on its own promise (0.5 ms);
    anything else the coroutine awaits is waited for with ``run_sync`` as usual.

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
            get_bridge()
        raise SyncUnavailable(_SYNC_HINT)
    if not isinstance(awaitable, Coroutine):
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


class _JobWait:
    """``await _JobWait(job)``: until a job from ``bridge.start`` has settled.

    Under :func:`_drive` the job goes to the driver, which suspends on its promise.
    In a task (when the bridge cannot wake it, see :class:`_Wakeup`), one turn of
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
        yield  # one turn of the event loop, as asyncio.sleep(0) does
        if not self.job.done:
            yield from self.job.wait().__await__()

    def outcome(self) -> tuple[bool, Any]:
        """``(ok, value or error)`` of the settled job."""
        envelope = self.job.envelope
        ok = bool(envelope.ok)
        return ok, envelope.value if ok else envelope.error


_PENDING, _DONE, _CANCELLED = 0, 1, 2


class _Wakeup:
    """What a task awaits while a bridge call runs: woken by the bridge itself.

    The task sees an asyncio future (``_asyncio_future_blocking``, ``get_loop``,
    ``add_done_callback``, ``cancel``, ``result``) and hands it its wake-up callback;
    the bridge (``startThen``) calls :meth:`settled` in the microtask after the call
    settles, and that runs the callback at once, as an ``await`` in JavaScript
    resumes: no turn of the event loop in between (0.13-0.20 ms each here, more than
    a tiny wasm run). A real Future would reach the task through ``call_soon``, i.e.
    that turn. The wake-up is entered with JSPI allowed (see :func:`_waker`), as
    Pyodide's own callbacks are, so the woken task may call the synchronous API.

    Cancelling wakes the task through the loop at once (CancelledError); the call
    itself still completes in JS and :func:`call` hands its result to clean-up.
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
_waiters: dict[int, _Wakeup] = {}
_next_waiter = 0
_wake_proxy: Any = None


def _wake_waiter(waiter_id: int, ok: bool, payload: Any) -> None:
    waiter = _waiters.pop(waiter_id, None)
    if waiter is not None:
        waiter.settled(ok, payload)


def _waker() -> Any:
    """The one JS proxy of :func:`_wake_waiter`, which the bridge calls with JSPI
    allowed (``callPromising``), as Pyodide calls its own event-loop callbacks, so that
    the woken task may use the synchronous API. One proxy and an id per call: a
    ``create_once_callable`` per call cost 15-20 µs here."""
    global _wake_proxy
    if _wake_proxy is None:
        _wake_proxy = create_proxy(_wake_waiter)
    return _wake_proxy


def _js(value: Any) -> Any:
    """Python lists/dicts → JS Arrays/Objects, so nothing borrowed dies mid-call."""
    return to_js(value, dict_converter=js.Object.fromEntries)


async def call(method: str, *args: Any, context: str = "", bridge: Any = None) -> Any:
    """Await ``bridge[method](*args)`` and unwrap its envelope.

    If the awaiting task is cancelled, the JS call still completes (ORT cannot be
    interrupted); the bridge then releases whatever it produced, so a cancelled
    run or create leaks nothing and the session stays usable.
    """
    if bridge is None:
        bridge = await ensure_bridge()
    loop = None if _driving or not _wake_in_microtask else asyncio._get_running_loop()
    waiter: _JobWait | _Wakeup
    if loop is None:
        job = bridge.start(method, *args)
        waiter = _JobWait(job)
    else:
        waiter = _Wakeup(loop)
        job = bridge.startThen(_waker(), waiter.register(), method, *args)
    try:
        await waiter
    except asyncio.CancelledError:
        # The JS call still completes (ORT cannot be interrupted): what it produced
        # goes to the bridge's clean-up, as nobody else will take it.
        job.promise.then(create_once_callable(lambda env: bridge.discard(method, env)))
        raise
    ok, payload = waiter.outcome()
    if not ok:
        err = payload.to_py()
        exc = from_envelope(err, context)
        if hasattr(exc, "reasons") and err.get("reasons"):
            exc.reasons = dict(err["reasons"])
        raise exc
    return payload


async def fetch_bytes(url: str) -> bytes:
    """Download ``url`` with the browser's ``fetch`` (HTTP errors → NoSuchFile)."""
    value = await call("fetchBytes", url, context=f"load {url}")
    return bytes(value.to_bytes())


async def create_session(
    model: bytes, providers: Sequence[str], options: dict[str, Any]
) -> dict[str, Any]:
    """Create an ORT-web session; returns handle, provider, skipped and metadata."""
    data = to_js(memoryview(model))
    value = await call(
        "createSession", data, _js(list(providers)), _js(options), context="create session"
    )
    return value.to_py()  # type: ignore[no-any-return]


#: Below this many bytes a feed is copied by ``to_js`` into a new typed array (one
#: crossing); above, into a staging array the bridge reuses (``bridge_js/tensors.js``
#: keeps none smaller than this).
SMALL_FEED_BYTES = 64 * 1024


def _encode(feed: WireTensor, bridge: Any = None) -> Any:
    if isinstance(feed.data, list):
        return _js(feed.data)
    if feed.data.nbytes < SMALL_FEED_BYTES:
        # The wire dtype picks the typed array ORT-web expects (int64 → BigInt64Array,
        # float16 bits → Uint16Array, bool → Uint8Array): pinned by the dtype tests.
        return to_js(feed.data)
    buffer = (bridge or get_bridge()).allocate(feed.dtype.ort, feed.data.size)
    if feed.data.size:
        buffer.assign(feed.data)
    return buffer


@dataclass(frozen=True)
class GpuOutput:
    """An output left on the GPU: a bridge value handle with its type and shape."""

    handle: int
    dtype: _dtypes.DType
    dims: tuple[int, ...]


#: A feed is wire data (CPU) or the handle of a GPU value.
Feed = tuple[str, WireTensor | int]


def _flat_feeds(feeds: Sequence[Feed], bridge: Any) -> list[Any]:
    """Feeds in the flat form of ``bridge_js/wire.js``, passed as the call's arguments:
    numbers and strings convert on the way without a JS array being built."""
    flat: list[Any] = []
    for name, feed in feeds:
        if isinstance(feed, int):
            flat += (name, None, feed)
        else:
            flat += (name, feed.dtype.ort, len(feed.dims), *feed.dims, _encode(feed, bridge))
    return flat


async def run_session(
    handle: int,
    feeds: Sequence[Feed],
    fetches: Sequence[tuple[str, int | None]],
    run_options: dict[str, Any] | None = None,
) -> list[np.ndarray | GpuOutput]:
    """Run a session; outputs in ``fetches`` order, numpy arrays or :class:`GpuOutput`.

    ``fetches`` pairs each output name with the handle of a pre-allocated GPU
    value to write into, or None.
    """
    # Every other call looks the bridge up afresh, so the one seen last is current.
    bridge = _last_seen or await ensure_bridge()
    options = None if run_options is None else _js(run_options)
    flat = await call(
        "run", handle, _fetch_list(fetches), options, *_flat_feeds(feeds, bridge),
        context="run", bridge=bridge,
    )
    return _decode_outputs(flat.to_py(depth=1))


#: JS fetch lists without pre-allocated values, by ``((name, None), ...)``: the
#: common fetch list, built once (the bridge only reads it).
_plain_fetches: dict[tuple[tuple[str, int | None], ...], Any] = {}


def _fetch_list(fetches: Sequence[tuple[str, int | None]]) -> Any:
    key = fetches if isinstance(fetches, tuple) else tuple(fetches)
    cached = _plain_fetches.get(key)
    if cached is not None:
        return cached
    if any(value is not None for _, value in fetches):
        return to_js([[name, value] for name, value in fetches])
    if len(_plain_fetches) >= 256:
        _plain_fetches.clear()
    cached = _plain_fetches[key] = to_js([[name, None] for name, _ in fetches])
    return cached


def _decode_outputs(flat: list[Any]) -> list[np.ndarray | GpuOutput]:
    """Outputs from the flat form of ``bridge_js/wire.js``:
    ``type, value handle, data, fresh, ndim, *dims`` each."""
    outputs: list[np.ndarray | GpuOutput] = []
    i = 0
    while i < len(flat):
        ort_type, handle, data, _fresh, ndim = flat[i:i + 5]
        shape = tuple(flat[i + 5:i + 5 + ndim])
        i += 5 + ndim
        dtype = _dtypes.by_ort(ort_type)
        if handle is not None:
            outputs.append(GpuOutput(int(handle), dtype, shape))
        else:
            outputs.append(_read(dtype, shape, data))
    return outputs


def _read(dtype: _dtypes.DType, dims: Sequence[int], data: Any) -> np.ndarray:
    if dtype.is_string:
        return from_wire(dtype, dims, list(data.to_py()))
    buffer = wire_buffer(dtype, dims)
    if buffer.size:
        data.assign_to(buffer)
    return from_wire(dtype, dims, buffer)


async def upload_value(wire: WireTensor) -> int:
    """Copy a wire tensor into a new ortweb-owned GPU buffer; returns its value handle."""
    value = await call(
        "uploadValue", wire.dtype.ort, _js(list(wire.dims)), _encode(wire),
        context="upload to WebGPU",
    )
    return int(value)


async def read_value(handle: int, release: bool) -> np.ndarray:
    """Download a GPU value (and release it when ``release``)."""
    out = await call("readValue", handle, release, context="read GPU tensor")
    return _read(_dtypes.by_ort(str(out.type)), [int(d) for d in out.dims], out.data)


def _sync_call(method: str, *args: Any, context: str) -> Any:
    envelope = getattr(get_bridge(), method)(*args)
    if not envelope.ok:
        raise from_envelope(envelope.error.to_py(), context)
    return envelope.value


def value_from_gpu_buffer(buffer: Any, dtype: _dtypes.DType, dims: Sequence[int]) -> int:
    """Register a user's GPUBuffer as a value (usage and size checked now)."""
    return int(_sync_call(
        "valueFromGpuBuffer", buffer, dtype.ort, _js(list(dims)), context="from_gpu_buffer"
    ))


def value_gpu_buffer(handle: int) -> Any:
    """The GPUBuffer of a value."""
    return _sync_call("valueGpuBuffer", handle, context="gpu_buffer")


def dispose_value(handle: int, by_finalizer: bool = False) -> None:
    """Dispose a GPU value (safe for handles disposed before)."""
    if IN_BROWSER:
        bridge = getattr(js.globalThis, "ortwebBridge", None)
        if bridge is not None:
            bridge.disposeValue(handle, by_finalizer)


async def webgpu_device() -> Any:
    """The GPUDevice WebGPU sessions run on."""
    return await call("webgpuDevice", context="webgpu_device")


async def release_session(handle: int) -> None:
    """Release a session (a handle released before is ignored)."""
    await call("release", handle, context="close session")


def release_later(handle: int) -> None:
    """Release a session without waiting (finalizers cannot await); errors are dropped."""
    if IN_BROWSER:
        bridge = getattr(js.globalThis, "ortwebBridge", None)
        if bridge is not None:
            bridge.release(handle)


async def probe_webgpu() -> dict[str, Any]:
    """``{available, reason, features, info}`` for this page's WebGPU adapter."""
    value = await call("probeWebGpu", context="probe WebGPU")
    return value.to_py()  # type: ignore[no-any-return]


def default_providers() -> list[str] | None:
    """Providers the page asks sessions to use when they name none (``ortweb exec --providers``)."""
    if not IN_BROWSER:
        return None
    bridge = getattr(js.globalThis, "ortwebBridge", None)
    value = None if bridge is None else bridge.defaultProviders
    if value is None:
        return None
    return [str(p) for p in value]


def stats() -> dict[str, Any]:
    """Counts kept by the bridge (live sessions, queued calls, loaded builds)."""
    return get_bridge().stats().to_py()  # type: ignore[no-any-return]


if IN_BROWSER and getattr(js.globalThis, "ortwebBridge", None) is None:  # pragma: no cover
    # Start importing the bridge at `import ortweb`, so that in a notebook it is
    # installed by the time the next cell runs and nothing has to block on it.
    _start_loading()
