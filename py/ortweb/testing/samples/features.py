"""Float and int models that each exercise one feature of a session.

Symbolic dims shared by two inputs, a dynamic height/width, int64 tensors, a
recurrent state, float16, two outputs, ops the WebGPU EP lacks.
"""

from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper

from ._graph import finish, init, value_info, weights

__all__ = [
    "dynamic_conv_model",
    "float16_model",
    "int64_model",
    "stateful_model",
    "symbolic_dims_model",
    "two_outputs_model",
    "unsupported_on_webgpu_model",
]


def symbolic_dims_model(seed: int = 0) -> bytes:
    """Build ``y = MatMul(x, W) + b + z`` with a ``batch`` dim shared by two inputs.

    ``x`` is float32 ``["batch", 4]``, ``z`` is float32 ``["batch", 3]``,
    ``W`` is a ``[4, 3]`` initializer and ``b`` a ``[3]`` initializer; the
    output ``y`` is float32 ``["batch", 3]``.

    Parameters
    ----------
    seed : int, optional
        Seed for the weights.

    Returns
    -------
    bytes
        The serialized model.
    """
    rng = np.random.default_rng(seed)
    w = weights(rng, (4, 3), 4)
    b = weights(rng, (3,), 1)
    f32 = TensorProto.FLOAT
    graph = helper.make_graph(
        [
            helper.make_node("MatMul", ["x", "W"], ["xw"]),
            helper.make_node("Add", ["xw", "b"], ["xwb"]),
            helper.make_node("Add", ["xwb", "z"], ["y"]),
        ],
        "symbolic_dims",
        [value_info("x", f32, ["batch", 4]), value_info("z", f32, ["batch", 3])],
        [value_info("y", f32, ["batch", 3])],
        initializer=[init("W", w), init("b", b)],
    )
    return finish(graph, "MatMul + bias + z over a symbolic batch dim")


def dynamic_conv_model(seed: int = 0) -> bytes:
    """Build a Conv/Relu/GlobalAveragePool/Flatten feature extractor.

    Input ``image`` is float32 ``[1, 3, "height", "width"]``; the 3x3
    convolution (3 -> 4 channels, stride 1, padding 1) keeps the spatial
    size, so any height and width work. Output ``features`` is float32
    ``[1, 4]``.

    Parameters
    ----------
    seed : int, optional
        Seed for the weights.

    Returns
    -------
    bytes
        The serialized model.
    """
    rng = np.random.default_rng(seed)
    w = weights(rng, (4, 3, 3, 3), 3 * 3 * 3)
    b = weights(rng, (4,), 1)
    f32 = TensorProto.FLOAT
    graph = helper.make_graph(
        [
            # Every attribute spelled out rather than defaulted, so that each
            # EP's attribute parsing is exercised, not just its defaults.
            helper.make_node(
                "Conv",
                ["image", "W", "B"],
                ["conv"],
                kernel_shape=[3, 3],
                strides=[1, 1],
                dilations=[1, 1],
                pads=[1, 1, 1, 1],
                group=1,
            ),
            helper.make_node("Relu", ["conv"], ["act"]),
            helper.make_node("GlobalAveragePool", ["act"], ["pooled"]),
            helper.make_node("Flatten", ["pooled"], ["features"], axis=1),
        ],
        "dynamic_conv",
        [value_info("image", f32, [1, 3, "height", "width"])],
        [value_info("features", f32, [1, 4])],
        initializer=[init("W", w), init("B", b)],
    )
    return finish(graph, "Conv 3x3 over a dynamic height/width, pooled to 4 features")


def int64_model() -> bytes:
    """Build a model whose inputs and outputs mix int64 and float32.

    Inputs: ``ids`` int64 ``["n"]`` (values in ``[0, 10)``) and ``table``
    float32 ``[10, 3]``. Outputs: ``rows = Gather(table, ids)`` float32
    ``["n", 3]``, ``argmax = ArgMax(rows, axis=1, keepdims=0)`` int64
    ``["n"]`` and ``ids_plus_one = ids + 1`` int64 ``["n"]``.

    Returns
    -------
    bytes
        The serialized model.
    """
    f32, i64 = TensorProto.FLOAT, TensorProto.INT64
    graph = helper.make_graph(
        [
            helper.make_node("Gather", ["table", "ids"], ["rows"], axis=0),
            helper.make_node("ArgMax", ["rows"], ["argmax"], axis=1, keepdims=0),
            helper.make_node("Add", ["ids", "one"], ["ids_plus_one"]),
        ],
        "int64",
        [value_info("ids", i64, ["n"]), value_info("table", f32, [10, 3])],
        [
            value_info("rows", f32, ["n", 3]),
            value_info("argmax", i64, ["n"]),
            value_info("ids_plus_one", i64, ["n"]),
        ],
        initializer=[init("one", np.array(1, dtype=np.int64))],
    )
    return finish(graph, "Gather/ArgMax/Add with int64 tensors")


def stateful_model(seed: int = 0) -> bytes:
    """Build one step of a recurrent cell.

    ``y = Tanh(x @ Wx + state_in @ Wh + b)`` with ``x`` float32 ``[1, 4]``
    and ``state_in`` float32 ``[1, 8]``; outputs ``y`` and ``state_out``
    (the same values, float32 ``[1, 8]``). A caller feeds ``state_out`` back
    as the next ``state_in``.

    Parameters
    ----------
    seed : int, optional
        Seed for the weights.

    Returns
    -------
    bytes
        The serialized model.
    """
    rng = np.random.default_rng(seed)
    wx = weights(rng, (4, 8), 4)
    wh = weights(rng, (8, 8), 8)
    b = weights(rng, (8,), 1)
    f32 = TensorProto.FLOAT
    graph = helper.make_graph(
        [
            helper.make_node("MatMul", ["x", "Wx"], ["xw"]),
            helper.make_node("MatMul", ["state_in", "Wh"], ["hw"]),
            helper.make_node("Add", ["xw", "hw"], ["pre"]),
            helper.make_node("Add", ["pre", "b"], ["preb"]),
            helper.make_node("Tanh", ["preb"], ["y"]),
            # A separate output name (not y listed twice) so the state has a
            # tensor of its own that callers can bind or keep on the device.
            helper.make_node("Identity", ["y"], ["state_out"]),
        ],
        "stateful",
        [value_info("x", f32, [1, 4]), value_info("state_in", f32, [1, 8])],
        [value_info("y", f32, [1, 8]), value_info("state_out", f32, [1, 8])],
        initializer=[init("Wx", wx), init("Wh", wh), init("b", b)],
    )
    return finish(graph, "One recurrent step; feed state_out back as state_in")


def float16_model() -> bytes:
    """Build ``y = x * 2 + 0.5`` in float16, plus ``y32 = Cast(y, float32)``.

    Input ``x`` is float16 ``[2, 3]``; outputs ``y`` float16 ``[2, 3]`` and
    ``y32`` float32 ``[2, 3]``.

    Returns
    -------
    bytes
        The serialized model.
    """
    f16 = TensorProto.FLOAT16
    graph = helper.make_graph(
        [
            helper.make_node("Mul", ["x", "two"], ["scaled"]),
            helper.make_node("Add", ["scaled", "half"], ["y"]),
            helper.make_node("Cast", ["y"], ["y32"], to=TensorProto.FLOAT),
        ],
        "float16",
        [value_info("x", f16, [2, 3])],
        [value_info("y", f16, [2, 3]), value_info("y32", TensorProto.FLOAT, [2, 3])],
        initializer=[
            init("two", np.array(2.0, dtype=np.float16)),
            init("half", np.array(0.5, dtype=np.float16)),
        ],
    )
    return finish(graph, "float16 arithmetic with a float32 copy of the result")


def two_outputs_model() -> bytes:
    """Build a model with two outputs: ``double = x * 2`` and ``negated = -x``.

    Input ``x`` is float32 ``[2, 2]``; both outputs are float32 ``[2, 2]``.

    Returns
    -------
    bytes
        The serialized model.
    """
    f32 = TensorProto.FLOAT
    graph = helper.make_graph(
        [
            helper.make_node("Mul", ["x", "two"], ["double"]),
            helper.make_node("Neg", ["x"], ["negated"]),
        ],
        "two_outputs",
        [value_info("x", f32, [2, 2])],
        [value_info("double", f32, [2, 2]), value_info("negated", f32, [2, 2])],
        initializer=[init("two", np.array(2.0, dtype=np.float32))],
    )
    return finish(graph, "x*2 and -x")


def unsupported_on_webgpu_model() -> bytes:
    """Build a float32 model that the WebGPU EP cannot run by itself.

    TopK and Round have CPU kernels but, in onnxruntime-web's WebGPU EP,
    none, so a WebGPU session must fall back to the CPU EP for them (or
    fail, depending on session options). Input ``x`` is float32 ``[2, 5]``;
    outputs ``values`` float32 ``[2, 2]`` and ``indices`` int64 ``[2, 2]``
    (the two largest per row, descending) and ``rounded`` float32
    ``[2, 5]`` (round half to even).

    Returns
    -------
    bytes
        The serialized model.
    """
    f32 = TensorProto.FLOAT
    graph = helper.make_graph(
        [
            helper.make_node(
                "TopK", ["x", "k"], ["values", "indices"], axis=-1, largest=1, sorted=1
            ),
            helper.make_node("Round", ["x"], ["rounded"]),
        ],
        "unsupported_on_webgpu",
        [value_info("x", f32, [2, 5])],
        [
            value_info("values", f32, [2, 2]),
            value_info("indices", TensorProto.INT64, [2, 2]),
            value_info("rounded", f32, [2, 5]),
        ],
        initializer=[init("k", np.array([2], dtype=np.int64))],
    )
    return finish(graph, "TopK and Round: CPU-only ops for the WebGPU EP")
