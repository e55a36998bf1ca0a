"""Small ONNX models for ortweb's tests, CLI demo and benchmarks.

Every generator returns the serialized ``ModelProto`` as :class:`bytes`.
The models are stamped with opset 17 (default domain) and IR version 8:
onnxruntime-web 1.30 and native onnxruntime both load that combination, and
newer stamps buy nothing for ops this simple. Weights come from
``numpy.random.default_rng(seed)`` so that two runs (or the browser and the
host) see byte-identical models.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from types import MappingProxyType

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

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

OPSET = 17
IR_VERSION = 8

Shape = Sequence[int | str | None]

# Read-only so that a test cannot mutate the table every other module relies on.
DTYPES: Mapping[str, np.dtype] = MappingProxyType(
    {
        "tensor(float)": np.dtype(np.float32),
        "tensor(double)": np.dtype(np.float64),
        "tensor(float16)": np.dtype(np.float16),
        "tensor(int8)": np.dtype(np.int8),
        "tensor(int16)": np.dtype(np.int16),
        "tensor(int32)": np.dtype(np.int32),
        "tensor(int64)": np.dtype(np.int64),
        "tensor(uint8)": np.dtype(np.uint8),
        "tensor(uint16)": np.dtype(np.uint16),
        "tensor(uint32)": np.dtype(np.uint32),
        "tensor(uint64)": np.dtype(np.uint64),
        "tensor(bool)": np.dtype(np.bool_),
        # onnxruntime hands strings back as object arrays; it accepts both
        # object and numpy unicode (``<U``) arrays as input.
        "tensor(string)": np.dtype(object),
    }
)

_ELEM_TYPES: Mapping[str, int] = MappingProxyType(
    {
        "tensor(float)": TensorProto.FLOAT,
        "tensor(double)": TensorProto.DOUBLE,
        "tensor(float16)": TensorProto.FLOAT16,
        "tensor(int8)": TensorProto.INT8,
        "tensor(int16)": TensorProto.INT16,
        "tensor(int32)": TensorProto.INT32,
        "tensor(int64)": TensorProto.INT64,
        "tensor(uint8)": TensorProto.UINT8,
        "tensor(uint16)": TensorProto.UINT16,
        "tensor(uint32)": TensorProto.UINT32,
        "tensor(uint64)": TensorProto.UINT64,
        "tensor(bool)": TensorProto.BOOL,
        "tensor(string)": TensorProto.STRING,
    }
)

# The types onnx's Add-14 schema accepts; bool and string have no arithmetic.
_ADD_TYPES = frozenset(DTYPES) - {"tensor(bool)", "tensor(string)"}


def _elem_type(type_str: str) -> int:
    try:
        return _ELEM_TYPES[type_str]
    except KeyError:
        known = ", ".join(_ELEM_TYPES)
        raise ValueError(f"unknown tensor type {type_str!r}; expected one of: {known}") from None


def _vi(name: str, elem_type: int, shape: Shape) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, elem_type, list(shape))


def _init(name: str, array: np.ndarray) -> onnx.TensorProto:
    return numpy_helper.from_array(np.ascontiguousarray(array), name=name)


def _finish(graph: onnx.GraphProto, doc: str) -> bytes:
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", OPSET)],
        ir_version=IR_VERSION,
        producer_name="ortweb.samples",
        doc_string=doc,
    )
    # full_check runs strict shape inference, which catches a declared output
    # shape that disagrees with what the ops produce: onnxruntime-web would
    # otherwise only complain at run time, and inside the browser.
    onnx.checker.check_model(model, full_check=True)
    return model.SerializeToString()


def _weights(rng: np.random.Generator, shape: tuple[int, ...], fan_in: int) -> np.ndarray:
    # Scaled by 1/sqrt(fan_in) so activations stay O(1) whatever the size,
    # which keeps float32 comparisons against a numpy reference tight.
    return (rng.standard_normal(shape) / np.sqrt(fan_in)).astype(np.float32)


def identity_model(type_str: str, shape: Shape) -> bytes:
    """Build ``y = Identity(x)``.

    Parameters
    ----------
    type_str : str
        An onnxruntime type string, any key of :data:`DTYPES`.
    shape : sequence of int, str or None
        Shape of ``x`` and ``y``: ints are fixed, strings are symbolic dims,
        ``None`` is an unnamed dynamic dim.

    Returns
    -------
    bytes
        The serialized model.
    """
    elem = _elem_type(type_str)
    graph = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["y"])],
        "identity",
        [_vi("x", elem, shape)],
        [_vi("y", elem, shape)],
    )
    return _finish(graph, f"Identity on {type_str}")


def cast_model(from_type: str, to_type: str, shape: Shape) -> bytes:
    """Build ``y = Cast(x, to=to_type)``.

    Parameters
    ----------
    from_type, to_type : str
        onnxruntime type strings (keys of :data:`DTYPES`).
    shape : sequence of int, str or None
        Shape of ``x`` and ``y``.

    Returns
    -------
    bytes
        The serialized model.
    """
    src = _elem_type(from_type)
    dst = _elem_type(to_type)
    graph = helper.make_graph(
        [helper.make_node("Cast", ["x"], ["y"], to=dst)],
        "cast",
        [_vi("x", src, shape)],
        [_vi("y", dst, shape)],
    )
    return _finish(graph, f"Cast {from_type} -> {to_type}")


def add_model(type_str: str, shape: Shape) -> bytes:
    """Build ``y = Add(a, b)`` with ``a``, ``b`` and ``y`` of one type and shape.

    Parameters
    ----------
    type_str : str
        A numeric onnxruntime type string; ``tensor(bool)`` and
        ``tensor(string)`` are rejected because onnx's Add does not take them.
    shape : sequence of int, str or None
        Shape of all three tensors.

    Returns
    -------
    bytes
        The serialized model.

    Raises
    ------
    ValueError
        If ``type_str`` is unknown or not numeric.
    """
    elem = _elem_type(type_str)
    if type_str not in _ADD_TYPES:
        raise ValueError(f"onnx Add does not support {type_str}")
    graph = helper.make_graph(
        [helper.make_node("Add", ["a", "b"], ["y"])],
        "add",
        [_vi("a", elem, shape), _vi("b", elem, shape)],
        [_vi("y", elem, shape)],
    )
    return _finish(graph, f"Add on {type_str}")


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
    w = _weights(rng, (4, 3), 4)
    b = _weights(rng, (3,), 1)
    f32 = TensorProto.FLOAT
    graph = helper.make_graph(
        [
            helper.make_node("MatMul", ["x", "W"], ["xw"]),
            helper.make_node("Add", ["xw", "b"], ["xwb"]),
            helper.make_node("Add", ["xwb", "z"], ["y"]),
        ],
        "symbolic_dims",
        [_vi("x", f32, ["batch", 4]), _vi("z", f32, ["batch", 3])],
        [_vi("y", f32, ["batch", 3])],
        initializer=[_init("W", w), _init("b", b)],
    )
    return _finish(graph, "MatMul + bias + z over a symbolic batch dim")


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
    w = _weights(rng, (4, 3, 3, 3), 3 * 3 * 3)
    b = _weights(rng, (4,), 1)
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
        [_vi("image", f32, [1, 3, "height", "width"])],
        [_vi("features", f32, [1, 4])],
        initializer=[_init("W", w), _init("B", b)],
    )
    return _finish(graph, "Conv 3x3 over a dynamic height/width, pooled to 4 features")


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
        [_vi("ids", i64, ["n"]), _vi("table", f32, [10, 3])],
        [
            _vi("rows", f32, ["n", 3]),
            _vi("argmax", i64, ["n"]),
            _vi("ids_plus_one", i64, ["n"]),
        ],
        initializer=[_init("one", np.array(1, dtype=np.int64))],
    )
    return _finish(graph, "Gather/ArgMax/Add with int64 tensors")


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
    wx = _weights(rng, (4, 8), 4)
    wh = _weights(rng, (8, 8), 8)
    b = _weights(rng, (8,), 1)
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
        [_vi("x", f32, [1, 4]), _vi("state_in", f32, [1, 8])],
        [_vi("y", f32, [1, 8]), _vi("state_out", f32, [1, 8])],
        initializer=[_init("Wx", wx), _init("Wh", wh), _init("b", b)],
    )
    return _finish(graph, "One recurrent step; feed state_out back as state_in")


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
        [_vi("x", f16, [2, 3])],
        [_vi("y", f16, [2, 3]), _vi("y32", TensorProto.FLOAT, [2, 3])],
        initializer=[
            _init("two", np.array(2.0, dtype=np.float16)),
            _init("half", np.array(0.5, dtype=np.float16)),
        ],
    )
    return _finish(graph, "float16 arithmetic with a float32 copy of the result")


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
    w1 = _weights(rng, (n_in, n_hidden), n_in)
    b1 = _weights(rng, (n_hidden,), 1) * np.float32(0.1)
    w2 = _weights(rng, (n_hidden, n_out), n_hidden)
    b2 = _weights(rng, (n_out,), 1) * np.float32(0.1)
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
        [_vi("x", f32, ["batch", n_in])],
        [_vi("probabilities", f32, ["batch", n_out])],
        initializer=[_init("W1", w1), _init("b1", b1), _init("W2", w2), _init("b2", b2)],
    )
    return _finish(graph, f"MLP {n_in}-{n_hidden}-{n_out} with softmax output")


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
    w = _weights(rng, (n, n), n)
    f32 = TensorProto.FLOAT
    graph = helper.make_graph(
        [
            helper.make_node("MatMul", ["x", "W"], ["xw"]),
            helper.make_node("Relu", ["xw"], ["y"]),
        ],
        "matmul_relu",
        [_vi("x", f32, [1, n])],
        [_vi("y", f32, [1, n])],
        initializer=[_init("W", w)],
    )
    return _finish(graph, f"MatMul {n}x{n} + Relu")


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
        [_vi("x", f32, [2, 2])],
        [_vi("double", f32, [2, 2]), _vi("negated", f32, [2, 2])],
        initializer=[_init("two", np.array(2.0, dtype=np.float32))],
    )
    return _finish(graph, "x*2 and -x")


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
        [_vi("x", f32, [2, 5])],
        [
            _vi("values", f32, [2, 2]),
            _vi("indices", TensorProto.INT64, [2, 2]),
            _vi("rounded", f32, [2, 5]),
        ],
        initializer=[_init("k", np.array([2], dtype=np.int64))],
    )
    return _finish(graph, "TopK and Round: CPU-only ops for the WebGPU EP")


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
