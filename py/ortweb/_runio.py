"""A run's inputs and outputs, between the values Python users hold and the bridge's."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from . import _bridge
from ._convert import to_wire
from ._metadata import NodeArg
from ._ortvalue import OrtValue
from ._validate import FeedMemo, check_feeds

__all__ = ["bridge_feeds", "deliver_outputs"]


def bridge_feeds(
    inputs: Sequence[NodeArg], input_feed: Any, memo: FeedMemo,
    overridable: Sequence[NodeArg] = (),
) -> tuple[list[_bridge.Feed], bool]:
    """Check ``input_feed`` against the model's inputs and convert it for the bridge.

    Returns
    -------
    feeds : list of (str, WireTensor or int)
        In the model's input order: a wire array, or the bridge handle of a GPU value
        (fed without a copy through the CPU).
    on_gpu : bool
        Whether any feed is a GPU value.

    Raises
    ------
    InvalidArgument
        As :func:`._validate.check_feeds`.
    """
    feeds: list[_bridge.Feed] = []
    on_gpu = False
    for arg, dtype, value in check_feeds(inputs, input_feed, memo, overridable):
        if isinstance(value, OrtValue) and value.handle is not None:
            feeds.append((arg.name, value.handle))
            on_gpu = True
        else:
            array = value.numpy() if isinstance(value, OrtValue) else value
            feeds.append((arg.name, to_wire(array, dtype)))
    return feeds, on_gpu


def deliver_outputs(
    names: Sequence[str], outputs: Sequence[np.ndarray | _bridge.GpuOutput],
    wants_gpu: Callable[[str], bool],
) -> list[np.ndarray | OrtValue]:
    """Outputs as ``run`` returns them when the session has a ``preferred_output_location``.

    Parameters
    ----------
    names : sequence of str
        The outputs fetched.
    outputs : sequence of numpy.ndarray or _bridge.GpuOutput
        What the bridge returned, one per name.
    wants_gpu : callable
        Whether ``preferred_output_location`` asks for an output on the GPU.

    Returns
    -------
    list of numpy.ndarray or OrtValue
        An OrtValue for each output asked for on the GPU (on the CPU when the session
        runs on wasm, so the same code runs), a numpy array for the others.
    """
    results: list[np.ndarray | OrtValue] = []
    for name, out in zip(names, outputs, strict=True):
        if isinstance(out, _bridge.GpuOutput):
            results.append(OrtValue._from_output(out))
        elif wants_gpu(name):
            # Asked for the GPU but ran on wasm: same type back, on the CPU.
            results.append(OrtValue.ortvalue_from_numpy(out))
        else:
            results.append(out)
    return results
