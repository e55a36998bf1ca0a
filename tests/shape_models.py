"""Models whose inputs declare their shapes every way ONNX allows, for browser tests.

Native onnxruntime shows ``dim_value: -1`` and an unset dim as None and an input
without a shape as ``[]``; onnxruntime-web's own metadata says 4294967295 and rank 0.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper

#: name → declared dims (None: no shape field; "unset": a dim with neither field).
DECLARED: dict[str, Any] = {
    "a": [-1, 3],
    "b": ["unset", 2],
    "c": None,
    "s": [],
    "n1": ["n", 2],
    "n2": ["n"],
}


def _value(name: str, dims: Any) -> onnx.ValueInfoProto:
    v = helper.make_tensor_value_info(name, TensorProto.FLOAT, None)
    if dims is not None:
        shape = v.type.tensor_type.shape
        shape.SetInParent()  # present even with no dims: a scalar
        for d in dims:
            dim = shape.dim.add()
            if isinstance(d, int):
                dim.dim_value = d
            elif d != "unset":
                dim.dim_param = d
    return v


def open_shapes_model() -> bytes:
    """``y_<x> = x * x`` for every input in :data:`DECLARED`, outputs declared alike,
    with every metadata field set."""
    inputs = [_value(name, dims) for name, dims in DECLARED.items()]
    outputs = [_value(f"y_{name}", dims) for name, dims in DECLARED.items()]
    nodes = [helper.make_node("Mul", [n, n], [f"y_{n}"]) for n in DECLARED]
    graph = helper.make_graph(nodes, "open_shapes", inputs, outputs,
                              doc_string="every way to leave a shape open")
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="ortweb-tests",
        producer_version="0.1", domain="ai.ortweb.tests", model_version=3,
        doc_string="squares its inputs",
    )
    helper.set_model_props(model, {"author": "ortweb", "note": "é"})
    model.ir_version = 8
    return model.SerializeToString()


def _feed(rng: np.random.Generator, *shape: int) -> np.ndarray:
    return rng.standard_normal(shape).astype(np.float32)


def feed_sets() -> list[dict[str, np.ndarray]]:
    """Feeds native onnxruntime accepts: sizes for -1, unset and symbolic dims that
    vary (also 0), any rank where no shape is declared or a scalar is, and ``n``
    disagreeing between ``n1`` and ``n2``."""
    rng = np.random.default_rng(7)
    return [
        {"a": _feed(rng, 1, 3), "b": _feed(rng, 4, 2), "c": _feed(rng, 2, 3, 4),
         "s": _feed(rng), "n1": _feed(rng, 3, 2), "n2": _feed(rng, 5)},
        {"a": _feed(rng, 5, 3), "b": _feed(rng, 0, 2), "c": _feed(rng),
         "s": _feed(rng, 2, 2), "n1": _feed(rng, 1, 2), "n2": _feed(rng, 1)},
        {"a": _feed(rng, 0, 3), "b": _feed(rng, 1, 2), "c": _feed(rng, 7),
         "s": _feed(rng), "n1": _feed(rng, 2, 2), "n2": _feed(rng, 2)},
    ]
