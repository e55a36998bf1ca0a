"""The one package that talks to JavaScript: ``globalThis.ortwebBridge``.

Everything else in ortweb is plain Python and imports on the host too; the JS
imports here are guarded (:mod:`._ffi`) so that unit tests and type checks run
outside Pyodide, and any call that needs the browser there raises a clear error.

One job a module:

- :mod:`._loading`: finding the bridge, importing and installing it if need be;
- :mod:`._waiting` (with :mod:`._wakeup`): waiting for JavaScript, synchronously
  or in a task, and the event loop's speed-up; all that knows Pyodide's and
  asyncio's internals, behind one check of Pyodide's version;
- :mod:`._protocol`: one typed function per bridge call; nothing else calls the
  bridge's methods by name or converts what they return;
- :mod:`._wire`: the flat form of ``run``'s feeds and outputs.
"""

from ._ffi import IN_BROWSER
from ._loading import BRIDGE_URL_ENV, bridge_url, ensure_bridge, get_bridge
from ._protocol import (
    JsBuffer,
    cache_info,
    call,
    clear_cache,
    configure,
    create_session,
    cross_origin_isolated,
    default_providers,
    dispose_value,
    encode_feed,
    fetch_file,
    get_choice,
    meters,
    probe_webgpu,
    provider_reasons,
    put_choice,
    read_fs_file,
    read_value,
    release_later,
    release_session,
    run_session,
    runtime_info,
    set_default_providers,
    settings,
    settled_meters,
    sha256_hex,
    stats,
    upload_value,
    value_from_gpu_buffer,
    value_gpu_buffer,
    versions,
    webgpu_device,
)
from ._waiting import FALLBACK_REASON, block_on, bridge_wakeup, event_loop
from ._wire import SMALL_FEED_BYTES, Feed, GpuOutput, read

__all__ = [
    "BRIDGE_URL_ENV",
    "FALLBACK_REASON",
    "IN_BROWSER",
    "SMALL_FEED_BYTES",
    "Feed",
    "GpuOutput",
    "JsBuffer",
    "block_on",
    "bridge_url",
    "bridge_wakeup",
    "cache_info",
    "call",
    "clear_cache",
    "configure",
    "create_session",
    "cross_origin_isolated",
    "default_providers",
    "dispose_value",
    "encode_feed",
    "ensure_bridge",
    "event_loop",
    "fetch_file",
    "get_bridge",
    "get_choice",
    "meters",
    "probe_webgpu",
    "provider_reasons",
    "put_choice",
    "read",
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
