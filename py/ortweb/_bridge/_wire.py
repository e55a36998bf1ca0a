"""The wire form of ``run``: feeds into JS values, the bridge's flat outputs into numpy.

``bridge_js/wire.js`` is the other half. Feeds travel flat, as the call's trailing
arguments; outputs come back as one flat array. Both avoid building a JS object per
tensor on the per-call path.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import _dtypes
from .._convert import WireTensor, from_wire, wire_buffer
from ._ffi import js_object, to_js

__all__ = [
    "SMALL_FEED_BYTES",
    "Feed",
    "GpuOutput",
    "Stage",
    "decode_outputs",
    "encode",
    "fetch_list",
    "flat_feeds",
    "read",
]

#: Below this many bytes a feed is copied by ``to_js`` into a new typed array (one
#: crossing); above, into a staging array the bridge reuses (``bridge_js/tensors.js``
#: keeps none smaller than this).
SMALL_FEED_BYTES = 8 * 1024

#: ``stage(ort_type, size)``: a staging typed array of ``size`` elements from the
#: bridge's pool (``bridge_js/tensors.js``).
Stage = Callable[[str, int], Any]


@dataclass(frozen=True)
class GpuOutput:
    """An output left on the GPU: a bridge value handle with its type and shape."""

    handle: int
    dtype: _dtypes.DType
    dims: tuple[int, ...]


#: A feed is wire data (CPU) or the handle of a GPU value.
Feed = tuple[str, WireTensor | int]


def encode(feed: WireTensor, stage: Stage) -> Any:
    """The JS value of one feed's data: a JS array of strings, or a typed array."""
    if isinstance(feed.data, list):
        return js_object(feed.data)
    if feed.data.nbytes < SMALL_FEED_BYTES:
        # The wire dtype picks the typed array ORT-web expects (int64 → BigInt64Array,
        # float16 bits → Uint16Array, bool → Uint8Array): pinned by the dtype tests.
        return to_js(feed.data)
    buffer = stage(feed.dtype.ort, feed.data.size)
    if feed.data.size:
        buffer.assign(feed.data)
    return buffer


def flat_feeds(feeds: Sequence[Feed], stage: Stage) -> list[Any]:
    """Feeds in the flat form of ``bridge_js/wire.js``, passed as the call's arguments:
    numbers and strings convert on the way without a JS array being built."""
    flat: list[Any] = []
    for name, feed in feeds:
        if isinstance(feed, int):
            flat += (name, None, feed)
        else:
            flat += (name, feed.dtype.ort, len(feed.dims), *feed.dims, encode(feed, stage))
    return flat


#: JS fetch lists without pre-allocated values, by ``((name, None), ...)``: the
#: common fetch list, built once (the bridge only reads it).
_plain_fetches: dict[tuple[tuple[str, int | None], ...], Any] = {}


def fetch_list(fetches: Sequence[tuple[str, int | None]]) -> Any:
    """``fetches`` as the JS array ``[[name, valueHandle or null], ...]``."""
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


def decode_outputs(flat: list[Any]) -> list[np.ndarray | GpuOutput]:
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
            outputs.append(read(dtype, shape, data))
    return outputs


def read(dtype: _dtypes.DType, dims: Sequence[int], data: Any) -> np.ndarray:
    """A numpy array from a tensor's JS data (a typed array, or a JS array of strings)."""
    if dtype.is_string:
        return from_wire(dtype, dims, list(data.to_py()))
    buffer = wire_buffer(dtype, dims)
    if buffer.size:
        data.assign_to(buffer)
    return from_wire(dtype, dims, buffer)
