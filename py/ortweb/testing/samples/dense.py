"""Dense networks of any width: the MLP classifier and the MatMul+Relu bench model."""

from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper

from ._graph import finish, init, value_info, weights

__all__ = ["matmul_relu_model", "mlp_model"]


def mlp_model(n_in: int = 64, n_hidden: int = 32, n_out: int = 10, seed: int = 0) -> bytes:
    """Build a two-layer perceptron classifier.

    ``probabilities = Softmax(Relu(x @ W1 + b1) @ W2 + b2, axis=-1)`` with
    ``x`` float32 ``["batch", n_in]`` and output float32
    ``["batch", n_out]``.

    Parameters
    ----------
    n_in, n_hidden, n_out : int, optional
        Layer widths.
    seed : int, optional
        Seed for the weights.

    Returns
    -------
    bytes
        The serialized model.
    """
    rng = np.random.default_rng(seed)
    w1 = weights(rng, (n_in, n_hidden), n_in)
    b1 = weights(rng, (n_hidden,), 1) * np.float32(0.1)
    w2 = weights(rng, (n_hidden, n_out), n_hidden)
    b2 = weights(rng, (n_out,), 1) * np.float32(0.1)
    f32 = TensorProto.FLOAT
    graph = helper.make_graph(
        [
            helper.make_node("MatMul", ["x", "W1"], ["h0"]),
            helper.make_node("Add", ["h0", "b1"], ["h1"]),
            helper.make_node("Relu", ["h1"], ["h"]),
            helper.make_node("MatMul", ["h", "W2"], ["o0"]),
            helper.make_node("Add", ["o0", "b2"], ["logits"]),
            helper.make_node("Softmax", ["logits"], ["probabilities"], axis=-1),
        ],
        "mlp",
        [value_info("x", f32, ["batch", n_in])],
        [value_info("probabilities", f32, ["batch", n_out])],
        initializer=[init("W1", w1), init("b1", b1), init("W2", w2), init("b2", b2)],
    )
    return finish(graph, f"MLP {n_in}-{n_hidden}-{n_out} with softmax output")


def matmul_relu_model(n: int = 64, seed: int = 0) -> bytes:
    """Build ``y = Relu(x @ W)`` with ``x`` float32 ``[1, n]`` and ``W`` ``[n, n]``.

    A minimal benchmark model: its run time is dominated by per-call
    overhead rather than arithmetic.

    Parameters
    ----------
    n : int, optional
        Width of ``x``, ``W`` and ``y``.
    seed : int, optional
        Seed for the weights.

    Returns
    -------
    bytes
        The serialized model.
    """
    rng = np.random.default_rng(seed)
    w = weights(rng, (n, n), n)
    f32 = TensorProto.FLOAT
    graph = helper.make_graph(
        [
            helper.make_node("MatMul", ["x", "W"], ["xw"]),
            helper.make_node("Relu", ["xw"], ["y"]),
        ],
        "matmul_relu",
        [value_info("x", f32, [1, n])],
        [value_info("y", f32, [1, n])],
        initializer=[init("W", w)],
    )
    return finish(graph, f"MatMul {n}x{n} + Relu")
