"""Synthetic inputs made from a model's metadata (for ``providers="auto"`` timing)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from . import _dtypes
from ._metadata import NodeArg

__all__ = ["synthetic_feeds"]


def synthetic_feeds(inputs: Sequence[NodeArg], seed: int = 0) -> dict[str, np.ndarray]:
    """Inputs of the right types and shapes: symbolic and unknown dims are 1.

    Floats are small random values; integers are zeros, which are valid indices
    and sizes for the ops that consume them (Gather, Reshape, ...); bools False;
    strings empty.
    """
    rng = np.random.default_rng(seed)
    feeds = {}
    for arg in inputs:
        dtype = _dtypes.by_onnx(arg.type)
        shape = tuple(d if isinstance(d, int) else 1 for d in arg.shape)
        if dtype.is_string:
            feeds[arg.name] = np.full(shape, "", dtype=object)
        elif dtype.numpy.kind == "f":
            feeds[arg.name] = (rng.standard_normal(shape) * 0.1).astype(dtype.numpy)
        else:
            feeds[arg.name] = np.zeros(shape, dtype=dtype.numpy)
    return feeds
