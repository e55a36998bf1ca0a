"""Inputs for a model: read from ``.npz`` or made up, seeded, from its metadata."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["InputSpec", "load_npz", "model_inputs", "random_inputs", "save_npz"]

_WORDS = ("onnx", "runtime", "web", "pyodide", "tensor", "graph", "node", "shape")


class InputSpec:
    """One graph input: name, numpy dtype, dims (int, symbolic str or None)."""

    def __init__(self, name: str, dtype: np.dtype, dims: list[int | str | None]):
        self.name = name
        self.dtype = dtype
        self.dims = dims

    def __repr__(self) -> str:
        return f"InputSpec({self.name!r}, {self.dtype}, {self.dims})"


def model_inputs(model: bytes | str | Path) -> list[InputSpec]:
    """The real inputs of an ONNX model (initializers that double as inputs left out)."""
    import onnx
    from onnx import helper

    if isinstance(model, bytes):
        proto = onnx.load_model_from_string(model)
    else:
        proto = onnx.load(str(model))
    initializers = {i.name for i in proto.graph.initializer}
    specs = []
    for value in proto.graph.input:
        if value.name in initializers:
            continue
        tensor = value.type.tensor_type
        if not value.type.HasField("tensor_type"):
            raise ValueError(f"input {value.name!r} is not a tensor; give its value with -i")
        elem = tensor.elem_type
        dtype = np.dtype(object) if elem == onnx.TensorProto.STRING else np.dtype(
            helper.tensor_dtype_to_np_dtype(elem)
        )
        dims: list[int | str | None] = []
        if tensor.HasField("shape"):
            for d in tensor.shape.dim:
                # A negative dim_value (exporters write -1) is an unknown size.
                if d.HasField("dim_value") and d.dim_value >= 0:
                    dims.append(int(d.dim_value))
                elif d.HasField("dim_param") and d.dim_param:
                    dims.append(d.dim_param)
                else:
                    dims.append(None)
        specs.append(InputSpec(value.name, dtype, dims))
    return specs


def _size(axis: int, dim: int | str | None, overrides: Mapping[str, int]) -> int:
    if isinstance(dim, int):
        return dim
    if isinstance(dim, str) and dim in overrides:
        return int(overrides[dim])
    # A batch-like leading axis stays 1; other free axes get a small size that
    # still fits a 3x3 convolution.
    return 1 if axis == 0 else 8


def random_inputs(
    specs: list[InputSpec], seed: int = 0, dims: Mapping[str, int] | None = None
) -> dict[str, np.ndarray]:
    """Seeded inputs for ``specs``: floats ~ N(0, 1), ints in [0, 4), random bools and words.

    Symbolic dims of the same name get the same size (``dims`` overrides them).
    """
    rng = np.random.default_rng(seed)
    overrides = dict(dims or {})
    feeds: dict[str, np.ndarray] = {}
    for spec in specs:
        shape = []
        for axis, d in enumerate(spec.dims):
            size = _size(axis, d, overrides)
            if isinstance(d, str):
                overrides.setdefault(d, size)
            shape.append(size)
        kind = spec.dtype.kind
        if kind == "f":
            feeds[spec.name] = rng.standard_normal(shape).astype(spec.dtype)
        elif kind in "iu":
            feeds[spec.name] = rng.integers(0, 4, size=shape).astype(spec.dtype)
        elif kind == "b":
            feeds[spec.name] = rng.integers(0, 2, size=shape).astype(bool)
        elif kind == "O":
            feeds[spec.name] = np.array(rng.choice(_WORDS, size=shape), dtype=str)
        else:
            raise ValueError(f"input {spec.name!r}: cannot make random values of {spec.dtype}")
    return feeds


def _storable(array: np.ndarray) -> np.ndarray:
    # Object arrays of str need pickle in .npz; fixed-width unicode does not.
    if array.dtype.kind == "O":
        return np.asarray(array.tolist(), dtype=str).reshape(array.shape)
    return array


def save_npz(path: str | Path, arrays: Mapping[str, Any]) -> None:
    """Save arrays (strings as fixed-width unicode, so no pickle is needed to load)."""
    stored: dict[str, Any] = {k: _storable(np.asarray(v)) for k, v in arrays.items()}
    np.savez(str(path), **stored)


def load_npz(path: str | Path) -> dict[str, np.ndarray]:
    """Load an ``.npz`` without pickle (strings come back as fixed-width unicode)."""
    with np.load(str(path), allow_pickle=False) as data:
        return {k: data[k] for k in data.files}
