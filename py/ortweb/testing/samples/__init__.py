"""Small ONNX models for ortweb's tests, CLI demo and benchmarks.

Every generator returns the serialized ``ModelProto`` as :class:`bytes`, stamped
with :data:`OPSET` and :data:`IR_VERSION` (see :mod:`._graph` for why those),
its weights drawn from a seeded generator so that every build is byte-identical.
Import them from here: ``from ortweb.testing import samples``.

- :mod:`.typed` — one op over any tensor type (Identity, Cast, Add);
- :mod:`.features` — one session feature each (symbolic dims, dynamic conv,
  int64, state, float16, two outputs, ops the WebGPU EP lacks);
- :mod:`.dense` — the MLP classifier and the MatMul+Relu bench model.
"""

from __future__ import annotations

from pathlib import Path

from ._graph import DTYPES, IR_VERSION, OPSET
from .dense import matmul_relu_model, mlp_model
from .features import (
    dynamic_conv_model,
    float16_model,
    int64_model,
    stateful_model,
    symbolic_dims_model,
    two_outputs_model,
    unsupported_on_webgpu_model,
)
from .typed import add_model, cast_model, identity_model

__all__ = [
    "DTYPES",
    "IR_VERSION",
    "OPSET",
    "add_model",
    "all_samples",
    "cast_model",
    "dynamic_conv_model",
    "float16_model",
    "identity_model",
    "int64_model",
    "matmul_relu_model",
    "mlp_model",
    "save",
    "stateful_model",
    "symbolic_dims_model",
    "two_outputs_model",
    "unsupported_on_webgpu_model",
]


def save(model_bytes: bytes, path: str | Path) -> Path:
    """Write a serialized model to ``path``, creating parent directories.

    Parameters
    ----------
    model_bytes : bytes
        A serialized ``ModelProto``, as returned by the generators here.
    path : str or pathlib.Path
        Destination file.

    Returns
    -------
    pathlib.Path
        The path written.
    """
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(model_bytes)
    return out


def all_samples() -> dict[str, bytes]:
    """Build every sample that needs no arguments.

    The type-parametrised generators (:func:`identity_model`,
    :func:`cast_model`, :func:`add_model`) are left out; :func:`mlp_model`
    and :func:`matmul_relu_model` are included with their default sizes.

    Returns
    -------
    dict of str to bytes
        Serialized models keyed by a short name (the generator's name
        without ``_model``), in a stable order.
    """
    return {
        "symbolic_dims": symbolic_dims_model(),
        "dynamic_conv": dynamic_conv_model(),
        "int64": int64_model(),
        "stateful": stateful_model(),
        "float16": float16_model(),
        "mlp": mlp_model(),
        "matmul_relu": matmul_relu_model(),
        "two_outputs": two_outputs_model(),
        "unsupported_on_webgpu": unsupported_on_webgpu_model(),
    }
