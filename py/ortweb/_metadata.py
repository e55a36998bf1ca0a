"""Model input/output descriptions, as onnxruntime's ``NodeArg``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["NodeArg", "format_shape", "node_args_from_bridge"]

Dim = int | str | None


@dataclass(frozen=True)
class NodeArg:
    """One model input or output, named as in onnxruntime.

    Attributes
    ----------
    name : str
    type : str
        ``'tensor(float)'``, ``'tensor(int64)'``, ...; ``'unknown'`` for non-tensor values.
    shape : list of int, str or None
        Fixed sizes as ints, symbolic dimensions by name, unknown ones as None.
    """

    name: str
    type: str
    shape: list[Dim]

    def __repr__(self) -> str:
        return f"NodeArg(name={self.name!r}, type={self.type!r}, shape={self.shape!r})"


def format_shape(shape: Sequence[Dim]) -> str:
    """``[1, 'batch', None]`` → ``[1, batch, ?]`` for messages."""
    return "[" + ", ".join("?" if d is None else str(d) for d in shape) + "]"


def _dim(value: Any) -> Dim:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return int(value) if value >= 0 else None
    if isinstance(value, str) and value:
        return value
    return None


def node_args_from_bridge(entries: Sequence[Mapping[str, Any]]) -> list[NodeArg]:
    """Build NodeArgs from the bridge's ``{name, type, shape}`` records.

    The bridge already spells types the onnxruntime way; symbolic dims arrive as
    strings and unknown ones as null or negative numbers.
    """
    out = []
    for e in entries:
        shape = e.get("shape")
        dims = [] if shape is None else [_dim(d) for d in shape]
        out.append(NodeArg(str(e["name"]), str(e.get("type") or "unknown"), dims))
    return out
