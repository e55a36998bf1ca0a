"""The bridge protocol: one typed Python function per call of ``bridge_js/index.js``.

This is the only module that calls the bridge's methods by name or turns what they
return into Python values; the rest of ortweb calls these functions. Every
asynchronous bridge call resolves to an envelope (``{ok, value}`` /
``{ok: false, error}``), translated here, once, by :func:`ortweb.errors.from_envelope`.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .. import _dtypes
from .._convert import WireTensor
from ..errors import from_envelope
from . import _waiting
from ._ffi import GLOBAL, IN_BROWSER, create_proxy, js_object, to_js
from ._loading import ensure_bridge, get_bridge, last_seen, peek
from ._wire import Feed, GpuOutput, Stage, decode_outputs, encode, fetch_list, flat_feeds, read

__all__ = [
    "JsBuffer",
    "cache_info",
    "call",
    "clear_cache",
    "configure",
    "create_session",
    "cross_origin_isolated",
    "default_providers",
    "dispose_value",
    "encode_feed",
    "fetch_file",
    "get_choice",
    "meters",
    "probe_webgpu",
    "provider_reasons",
    "put_choice",
    "read_fs_file",
    "read_value",
    "release_later",
    "release_session",
    "run_session",
    "runtime_info",
    "set_default_providers",
    "settings",
    "settled_meters",
    "sha256_hex",
    "stats",
    "upload_value",
    "value_from_gpu_buffer",
    "value_gpu_buffer",
    "versions",
    "webgpu_device",
]


async def call(method: str, *args: Any, context: str = "", bridge: Any = None) -> Any:
    """Await ``bridge[method](*args)`` and unwrap its envelope (a JS value or proxy).

    If the awaiting task is cancelled, the JS call still completes (ORT cannot be
    interrupted); the bridge then releases whatever it produced, so a cancelled
    run or create leaks nothing and the session stays usable.
    """
    if bridge is None:
        bridge = await ensure_bridge()
    waiter, job = _waiting.start_call(bridge, method, args)
    try:
        await waiter
    except asyncio.CancelledError:
        _waiting.abandon(bridge, method, job)
        raise
    ok, payload = waiter.outcome()
    if not ok:
        err = payload.to_py()
        exc = from_envelope(err, context)
        if hasattr(exc, "reasons") and err.get("reasons"):
            exc.reasons = dict(err["reasons"])
        raise exc
    return payload


def _sync_call(method: str, *args: Any, context: str) -> Any:
    envelope = getattr(get_bridge(), method)(*args)
    if not envelope.ok:
        raise from_envelope(envelope.error.to_py(), context)
    return envelope.value


def _stage(bridge: Any) -> Stage:
    """Staging arrays from ``bridge`` (looked up only when a feed needs one)."""
    return lambda ort_type, size: (bridge or get_bridge()).allocate(ort_type, size)


def encode_feed(feed: WireTensor) -> Any:
    """One feed's data as the JS value ``run`` takes (see :func:`._wire.encode`)."""
    return encode(feed, _stage(None))


# -- sessions ----------------------------------------------------------------------


class JsBuffer:
    """A file's bytes kept in JavaScript (a ``Uint8Array``): a model or data file
    downloaded or read by the bridge, which Python reads in pieces
    (:meth:`read`) and hands on to onnxruntime-web without ever holding it whole.

    Attributes
    ----------
    nbytes : int
    label : str
        The URL or path it came from, for messages.
    from_cache : bool
        Whether it came from ortweb's file cache rather than the network.
    """

    __slots__ = ("_array", "from_cache", "label", "nbytes")

    def __init__(self, array: Any, label: str, from_cache: bool = False) -> None:
        self._array = array
        self.nbytes = int(array.length)
        self.label = label
        self.from_cache = from_cache

    @property
    def js(self) -> Any:
        """The ``Uint8Array`` itself."""
        if self._array is None:
            raise RuntimeError(f"the bytes of {self.label} were released")
        return self._array

    def read(self, start: int, stop: int) -> bytes:
        """``bytes[start:stop]``: copied into Python, that piece only."""
        return bytes(self.js.subarray(start, stop).to_bytes())

    def release(self) -> None:
        """Let JavaScript free the bytes (safe twice): the last reference Python held
        to the ``Uint8Array`` goes."""
        self._array = None

    def __repr__(self) -> str:
        state = "released" if self._array is None else f"{self.nbytes} bytes"
        return f"<JsBuffer {self.label} {state}>"


async def fetch_file(
    url: str, *, cache: bool, progress: Callable[[int, int], Any] | None = None
) -> tuple[int, str, JsBuffer | None]:
    """Download ``url`` into a JS buffer (``bridge_js/fetching.js``), through
    ortweb's file cache (``bridge_js/file_cache.js``) when ``cache``.

    Returns
    -------
    status, status_text : int, str
        The HTTP status (200 for a file found in the cache).
    buffer : JsBuffer or None
        The whole file; None when the status is not 2xx.
    """
    proxy = None if progress is None else create_proxy(progress)
    try:
        value = await call("fetchFile", url, cache, proxy, context=f"load {url}")
    finally:
        if proxy is not None:
            proxy.destroy()
    status, text = int(value.status), str(value.statusText)
    array = value.bytes
    return status, text, (None if array is None else JsBuffer(array, url, bool(value.fromCache)))


async def sha256_hex(buffer: JsBuffer) -> str:
    """The sha256 of a JS buffer (lowercase hex): computed in JavaScript, or where
    the page cannot (not a secure context) here, 8 MiB at a time."""
    digest = str(await call("sha256", buffer.js, context="sha256"))
    if digest:
        return digest
    h = hashlib.sha256()
    for start in range(0, buffer.nbytes, 8 << 20):
        h.update(buffer.read(start, min(start + (8 << 20), buffer.nbytes)))
    return h.hexdigest()


async def cache_info() -> dict[str, Any]:
    """``{available, files: [{url, size, sha256, stored}]}``: what ortweb keeps in
    its file cache."""
    return (await call("cacheInfo", context="cache_info")).to_py()  # type: ignore[no-any-return]


async def clear_cache(url: str | None) -> int:
    """Remove the cached files of ``url`` (None: all); returns how many went."""
    return int(await call("clearCache", url, context="clear_cache"))


def read_fs_file(path: str) -> JsBuffer:
    """A file of Pyodide's file system as a :class:`JsBuffer`, never copied through
    Python.

    A file in MEMFS (Pyodide's default file system) already lives in a JavaScript
    ``Uint8Array``: the buffer is a view on it, so a model opened by path is not
    copied at all before onnxruntime-web reads it (``FS.readFile`` copied the whole
    file, a gigabyte more at the peak for a 1 GiB model). Other file systems are
    read with ``FS.readFile``.
    """
    import pyodide_js

    fs = pyodide_js.FS
    node = fs.lookupPath(path, js_object({"follow": True})).node
    contents = getattr(node, "contents", None)
    if (
        node.mount.type == fs.filesystems.MEMFS
        and fs.isFile(node.mode)
        and contents is not None
        and hasattr(contents, "byteOffset")
    ):
        # A Uint8Array view: MEMFS keeps a file Python wrote in one go as an
        # Int8Array (a slice of HEAP8), which onnxruntime-web refuses.
        view = GLOBAL.Uint8Array.new(contents.buffer, contents.byteOffset, int(node.usedBytes))
        return JsBuffer(view, path)
    return JsBuffer(fs.readFile(path), path)


def _as_js(data: Any) -> Any:
    if isinstance(data, JsBuffer):
        return data.js
    if isinstance(data, bytes | bytearray | memoryview):
        return to_js(memoryview(data))
    return data


def _external_data(entries: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"path": entry["path"], "data": _as_js(entry["data"])} for entry in entries]


async def create_session(
    model: bytes | JsBuffer, providers: Sequence[str], options: dict[str, Any]
) -> dict[str, Any]:
    """Create an ORT-web session; returns handle, provider, skipped and metadata.

    ``model`` is Python bytes (copied into a ``Uint8Array``) or a :class:`JsBuffer`
    (given as it is). ``options["externalData"]``, when there, is ORT-web's list of
    ``{path, data}``; ``data`` may be bytes, a :class:`JsBuffer` or a URL.
    """
    data = _as_js(model)
    if "externalData" in options:
        options = {**options, "externalData": _external_data(options["externalData"])}
    value = await call(
        "createSession", data, js_object(list(providers)), js_object(options),
        context="create session",
    )
    return value.to_py()  # type: ignore[no-any-return]


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
    bridge = last_seen() or await ensure_bridge()
    options = None if run_options is None else js_object(run_options)
    flat = await call(
        "run", handle, fetch_list(fetches), options, *flat_feeds(feeds, _stage(bridge)),
        context="run", bridge=bridge,
    )
    return decode_outputs(flat.to_py(depth=1))


async def release_session(handle: int) -> None:
    """Release a session (a handle released before is ignored)."""
    await call("release", handle, context="close session")


def release_later(handle: int) -> None:
    """Release a session without waiting (finalizers cannot await); errors are dropped."""
    bridge = peek()
    if bridge is not None:
        bridge.release(handle)


# -- GPU values --------------------------------------------------------------------


async def upload_value(wire: WireTensor) -> int:
    """Copy a wire tensor into a new ortweb-owned GPU buffer; returns its value handle."""
    value = await call(
        "uploadValue", wire.dtype.ort, js_object(list(wire.dims)), encode_feed(wire),
        context="upload to WebGPU",
    )
    return int(value)


async def read_value(handle: int, release: bool) -> np.ndarray:
    """Download a GPU value (and release it when ``release``)."""
    out = await call("readValue", handle, release, context="read GPU tensor")
    return read(_dtypes.by_ort(str(out.type)), [int(d) for d in out.dims], out.data)


def value_from_gpu_buffer(buffer: Any, dtype: _dtypes.DType, dims: Sequence[int]) -> int:
    """Register a user's GPUBuffer as a value (usage and size checked now)."""
    return int(_sync_call(
        "valueFromGpuBuffer", buffer, dtype.ort, js_object(list(dims)),
        context="from_gpu_buffer",
    ))


def value_gpu_buffer(handle: int) -> Any:
    """The GPUBuffer of a value."""
    return _sync_call("valueGpuBuffer", handle, context="gpu_buffer")


def dispose_value(handle: int, by_finalizer: bool = False) -> None:
    """Dispose a GPU value (safe for handles disposed before)."""
    bridge = peek()
    if bridge is not None:
        bridge.disposeValue(handle, by_finalizer)


async def webgpu_device() -> Any:
    """The GPUDevice WebGPU sessions run on."""
    return await call("webgpuDevice", context="webgpu_device")


async def probe_webgpu() -> dict[str, Any]:
    """``{available, reason, features, info}`` for this page's WebGPU adapter."""
    value = await call("probeWebGpu", context="probe WebGPU")
    return value.to_py()  # type: ignore[no-any-return]


async def provider_reasons() -> dict[str, str]:
    """Every provider an engine of the bridge serves → why it cannot be tried in this
    page (``''`` when it can), found without downloading any engine."""
    value = await call("providerReasons", context="providers")
    return value.to_py()  # type: ignore[no-any-return]


# -- the runtime and its settings ----------------------------------------------------


async def runtime_info(context: str = "runtime_info") -> dict[str, Any]:
    """The bridge's ``runtimeInfo()``: webgpuBuild, builds, webgpu, crossOriginIsolated,
    simd, requestedThreads, hardwareConcurrency, inWorker."""
    return (await call("runtimeInfo", context=context)).to_py()  # type: ignore[no-any-return]


async def versions(build: str = "wasm", context: str = "versions") -> dict[str, Any]:
    """``{bridge, ort, common}`` versions, loading ORT-web's ``build`` if need be."""
    return (await call("versions", build, context=context)).to_py()  # type: ignore[no-any-return]


def meters() -> dict[str, Any]:
    """GPU buffers and wasm memories alive now (``bridge_js/meters.js``)."""
    return get_bridge().meters().to_py()  # type: ignore[no-any-return]


async def settled_meters(context: str = "memory_info") -> dict[str, Any]:
    """:func:`meters` read after a JavaScript garbage collection, where the page allows."""
    return (await call("settledMeters", context=context)).to_py()  # type: ignore[no-any-return]


def stats() -> dict[str, Any]:
    """Counts kept by the bridge (live sessions, queued calls, loaded builds)."""
    return get_bridge().stats().to_py()  # type: ignore[no-any-return]


def settings() -> dict[str, Any]:
    """The bridge's settings: ortBaseURL, webgpuBuild, numThreads, defaultProviders."""
    return get_bridge().settings().to_py()  # type: ignore[no-any-return]


def configure(*, num_threads: int | None) -> dict[str, Any]:
    """Set the wasm thread count ORT-web's runtimes read when they start (None: ORT's
    default); returns the settings now in force (see :func:`settings`)."""
    return get_bridge().configure(  # type: ignore[no-any-return]
        js_object({"numThreads": num_threads})
    ).to_py()


def default_providers() -> list[str] | None:
    """Providers the page asks sessions to use when they name none (``ortweb exec --providers``)."""
    bridge = peek()
    value = None if bridge is None else bridge.defaultProviders
    if value is None:
        return None
    return [str(p) for p in value]


def set_default_providers(providers: list[str] | None) -> None:
    """Set (or with None, clear) what :func:`default_providers` returns."""
    bridge = get_bridge()  # first: on the host, its error is the one to see
    bridge.defaultProviders = None if providers is None else js_object(providers)


def cross_origin_isolated() -> bool:
    """Whether the page is cross-origin isolated (which wasm threads need)."""
    return IN_BROWSER and bool(getattr(GLOBAL, "crossOriginIsolated", False))


# -- remembered choices (bridge_js/store.js) ---------------------------------------------


async def get_choice(key: str, context: str = "auto") -> dict[str, Any] | None:
    """The choice stored under ``key``, or None."""
    value = await call("getChoice", key, context=context)
    return None if value is None else value.to_py()  # type: ignore[no-any-return]


async def put_choice(key: str, value: dict[str, Any], context: str = "auto") -> None:
    """Store a JSON-serialisable choice under ``key``."""
    await call("putChoice", key, js_object(value), context=context)
