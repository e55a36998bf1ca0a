"""ortweb's feed validation accepts exactly what native onnxruntime accepts.

Hypothesis builds Identity models whose inputs declare their shapes every way ONNX
allows (fixed, ``-1``, unset dims, symbolic dims shared between inputs or not, no
shape at all, scalar) and feeds them arrays of right and wrong ranks, sizes and
dtypes, lists (also ragged or out of range), tuples, strings and scalars. The
NodeArgs come from ortweb's own reader (``_onnxproto``), and for each case ortweb's
``check_feeds`` must refuse exactly when native onnxruntime's ``run`` does: an
Identity graph runs whatever its inputs let through, so native's answer is its
input validation.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import onnxruntime as ort
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper

from ortweb._metadata import node_args_from_model
from ortweb._onnxproto import parse_model
from ortweb._validate import check_feeds
from ortweb.errors import InvalidArgument

pytestmark = pytest.mark.filterwarnings("ignore:overflow encountered in cast:RuntimeWarning")

ELEM_TYPES: dict[int, type] = {
    TensorProto.FLOAT: np.float32, TensorProto.DOUBLE: np.float64,
    TensorProto.FLOAT16: np.float16, TensorProto.INT64: np.int64,
    TensorProto.INT32: np.int32, TensorProto.UINT8: np.uint8, TensorProto.BOOL: np.bool_,
    TensorProto.STRING: object,
}

# One input's shape declaration: None = no shape field; else one entry per dim:
# an int (dim_value, -1 included), a str (dim_param) or None (dim left unset).
_dim = st.one_of(st.integers(0, 3), st.just(-1), st.none(), st.sampled_from(["a", "b"]))
_declaration = st.one_of(st.none(), st.lists(_dim, max_size=3))


@functools.cache
def _model(inputs: tuple[tuple[int, tuple[Any, ...] | None], ...]) -> bytes:
    values, outputs, nodes = [], [], []
    for i, (elem, dims) in enumerate(inputs):
        v = helper.make_tensor_value_info(f"x{i}", elem, None)
        if dims is not None:
            shape = v.type.tensor_type.shape
            shape.SetInParent()  # a shape field even with no dims: a scalar
            for d in dims:
                dim = shape.dim.add()
                if isinstance(d, int):
                    dim.dim_value = d
                elif isinstance(d, str):
                    dim.dim_param = d
        values.append(v)
        outputs.append(helper.make_tensor_value_info(f"y{i}", elem, None))
        nodes.append(helper.make_node("Identity", [f"x{i}"], [f"y{i}"]))
    graph = helper.make_graph(nodes, "identity", values, outputs)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model.SerializeToString()


@functools.cache
def _native(model: bytes) -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.log_severity_level = 4  # outputs "do not match" the declared shape: fine here
    return ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])


def _shape_for(dims: tuple[Any, ...] | None, draw: Any) -> tuple[int, ...]:
    """Often a shape the declaration allows (so acceptances are common), else any."""
    if dims is None or draw(st.booleans()):
        return tuple(draw(st.lists(st.integers(0, 3), max_size=3)))
    return tuple(d if isinstance(d, int) and d >= 0 else draw(st.integers(0, 3)) for d in dims)


_LIST_ITEMS = st.sampled_from([0, 1, -1, 2.5, 300, 2**40, True, "7", "a"])


def _feed(elem: int, dims: tuple[Any, ...] | None, draw: Any) -> Any:
    dtype = ELEM_TYPES[elem]
    kind = draw(st.sampled_from(
        ["array", "array", "array", "wrong_dtype", "list", "list", "ragged", "tuple",
         "py_scalar", "np_scalar", "str"]
    ))
    shape = _shape_for(dims, draw)
    if kind == "array":
        return np.zeros(shape, dtype) if dtype is not object else np.full(shape, "s", object)
    if kind == "wrong_dtype":
        other = draw(st.sampled_from([t for t in ELEM_TYPES.values() if t is not dtype]))
        return np.zeros(shape, other) if other is not object else np.full(shape, "s", object)
    if kind in ("list", "tuple"):
        item = draw(_LIST_ITEMS)
        value = np.full(shape, item, dtype=object).tolist()
        return tuple(value) if kind == "tuple" and isinstance(value, list) else value
    if kind == "ragged":
        return [[draw(_LIST_ITEMS)], [draw(_LIST_ITEMS), draw(_LIST_ITEMS)]]
    if kind == "py_scalar":
        return draw(st.sampled_from([3.0, 1, True]))
    if kind == "np_scalar":
        return np.zeros((), dtype if dtype is not object else np.float32)[()]
    return "text"


def _ortweb_accepts(model: bytes, feeds: dict[str, Any]) -> tuple[bool, str]:
    inputs, _, _ = node_args_from_model(parse_model(model))
    try:
        check_feeds(inputs, feeds)
    except InvalidArgument as exc:
        return False, str(exc)
    return True, ""


def _native_accepts(model: bytes, feeds: dict[str, Any]) -> tuple[bool, str]:
    try:
        _native(model).run(None, feeds)
    except Exception as exc:
        return False, f"{type(exc).__name__}: {exc}"
    return True, ""


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_ortweb_refuses_exactly_what_native_refuses(data: st.DataObject) -> None:
    draw = data.draw
    declared = tuple(
        (draw(st.sampled_from(sorted(ELEM_TYPES))),
         None if (d := draw(_declaration)) is None else tuple(d))
        for _ in range(draw(st.integers(1, 3)))
    )
    model = _model(declared)
    feeds = {f"x{i}": _feed(elem, dims, draw) for i, (elem, dims) in enumerate(declared)}
    native_feeds = dict(feeds)
    for name, value in feeds.items():
        if isinstance(value, np.generic):
            # The one known difference: native refuses numpy scalars ("Unable to handle
            # object of type numpy.float32"); ortweb takes them as 0-d arrays (a
            # behaviour its tests pin). Compare as native would treat that array.
            native_feeds[name] = np.asarray(value)
    ours, why_ours = _ortweb_accepts(model, feeds)
    theirs, why_theirs = _native_accepts(model, native_feeds)
    assert ours == theirs, (
        f"declared {declared}\nfeeds {feeds!r}\n"
        f"ortweb {'accepts' if ours else 'refuses: ' + why_ours}\n"
        f"native {'accepts' if theirs else 'refuses: ' + why_theirs}"
    )
