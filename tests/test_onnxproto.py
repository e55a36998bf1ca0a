"""ortweb's own ModelProto reader against the onnx package and native onnxruntime.

Real models: every ``.onnx`` file in the onnx wheel's backend test data. Hand-made
ones cover each way a model can declare a shape or a type. What the reader gives
must equal what ``onnx`` parses, and the NodeArgs and metadata built from it what
native onnxruntime's ``InferenceSession`` shows.
"""

from __future__ import annotations

import tracemalloc
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper

from ortweb._metadata import model_metadata, node_args_from_model
from ortweb._onnxproto import ELEM_TYPE_NAMES, ModelInfo, parse_model
from ortweb.errors import InvalidGraph

DATA = Path(onnx.__file__).parent / "backend" / "test" / "data"
REAL_MODELS = sorted(DATA.rglob("*.onnx"))


# -- references ------------------------------------------------------------------------


def _type_name(t: onnx.TypeProto) -> str:
    """onnxruntime's spelling of a TypeProto, from the onnx package's parse."""
    kind = t.WhichOneof("value")
    if kind == "tensor_type":
        return f"tensor({ELEM_TYPE_NAMES[t.tensor_type.elem_type]})"
    if kind == "sparse_tensor_type":
        return f"sparse_tensor({ELEM_TYPE_NAMES[t.sparse_tensor_type.elem_type]})"
    if kind == "sequence_type":
        return f"seq({_type_name(t.sequence_type.elem_type)})"
    if kind == "optional_type":
        return f"optional({_type_name(t.optional_type.elem_type)})"
    if kind == "map_type":
        key = ELEM_TYPE_NAMES[t.map_type.key_type]
        return f"map({key},{_type_name(t.map_type.value_type)})"
    return "opaque" if kind == "opaque_type" else ""


def _shape(t: onnx.TypeProto) -> list[Any] | None:
    kind = t.WhichOneof("value")
    if kind not in ("tensor_type", "sparse_tensor_type"):
        return None
    tensor = getattr(t, kind)
    if not tensor.HasField("shape"):
        return None
    dims: list[Any] = []
    for d in tensor.shape.dim:
        which = d.WhichOneof("value")
        dims.append(d.dim_value if which == "dim_value" else d.dim_param if which else None)
    return dims


def _assert_same_as_onnx(info: ModelInfo, data: bytes) -> None:
    proto = onnx.load_model_from_string(data)
    assert info.ir_version == proto.ir_version
    assert info.producer_name == proto.producer_name
    assert info.producer_version == proto.producer_version
    assert info.domain == proto.domain
    assert info.model_version == (proto.model_version if proto.HasField("model_version") else None)
    assert info.doc_string == proto.doc_string
    assert info.metadata_props == {p.key: p.value for p in proto.metadata_props}
    assert info.opset_import == {o.domain: o.version for o in proto.opset_import}
    g = proto.graph
    assert (info.graph_name, info.graph_doc_string) == (g.name, g.doc_string)
    assert info.initializer_names == {i.name for i in g.initializer} | {
        s.values.name for s in g.sparse_initializer
    }
    for mine, theirs in [(info.inputs, g.input), (info.outputs, g.output)]:
        assert [(v.name, v.type, v.shape, v.doc_string) for v in mine] == [
            (v.name, _type_name(v.type), _shape(v.type), v.doc_string) for v in theirs
        ]


def _native(data: bytes, **overrides: int) -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.log_severity_level = 4
    for name, size in overrides.items():
        options.add_free_dimension_override_by_name(name, size)
    return ort.InferenceSession(data, options, providers=["CPUExecutionProvider"])


def _assert_same_as_native(data: bytes, **overrides: int) -> None:
    sess = _native(data, **overrides)
    info = parse_model(data)
    inputs, outputs, overridable = node_args_from_model(info, overrides)
    for mine, theirs in [
        (inputs, sess.get_inputs()),
        (outputs, sess.get_outputs()),
        (overridable, sess.get_overridable_initializers()),
    ]:
        assert [(a.name, a.type, a.shape) for a in mine] == [
            (a.name, a.type, a.shape) for a in theirs
        ]
    meta, want = model_metadata(info), sess.get_modelmeta()
    for key in ("producer_name", "graph_name", "graph_description", "domain",
                "description", "version", "custom_metadata_map"):
        assert getattr(meta, key) == getattr(want, key), key


# -- real models ---------------------------------------------------------------------------


def test_the_real_models_are_there() -> None:
    assert len(REAL_MODELS) > 100


@pytest.mark.parametrize("path", REAL_MODELS, ids=lambda p: str(p.relative_to(DATA)))
def test_real_model(path: Path) -> None:
    data = path.read_bytes()
    info = parse_model(data)
    _assert_same_as_onnx(info, data)
    try:
        _native(data)
    except Exception as exc:
        pytest.skip(f"native onnxruntime cannot load it: {str(exc)[:100]}")
    _assert_same_as_native(data)


# -- hand-made models ---------------------------------------------------------------------


def _value(name: str, elem: int, dims: list[Any] | None, unset: tuple[int, ...] = ()) -> Any:
    """A tensor ValueInfo; ``dims`` None: no shape field; dims in ``unset``: neither
    dim_value nor dim_param."""
    v = helper.make_tensor_value_info(name, elem, dims)
    for axis in unset:
        v.type.tensor_type.shape.dim[axis].Clear()
    return v


def _identity_model(values: list[Any], ir_version: int = 8, opset: int = 17, **kw: Any) -> bytes:
    outputs = []
    for v in values:
        out = onnx.ValueInfoProto()
        out.CopyFrom(v)
        out.name = v.name + "_out"
        outputs.append(out)
    nodes = [helper.make_node("Identity", [v.name], [v.name + "_out"]) for v in values]
    graph = helper.make_graph(nodes, kw.pop("graph_name", "g"), values, outputs,
                              doc_string=kw.pop("graph_doc", ""))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], **kw)
    model.ir_version = ir_version
    return model.SerializeToString()


def _shapes_model() -> bytes:
    f = TensorProto.FLOAT
    minus = _value("minus_one", f, [0, 3])
    minus.type.tensor_type.shape.dim[0].dim_value = -1
    empty_param = _value("empty_param", f, ["", 2])
    return _identity_model([
        _value("fixed", f, [2, 3]),
        minus,
        _value("unset", TensorProto.INT64, [0, 4], unset=(0,)),
        _value("symbolic", f, ["batch", "seq"]),
        _value("shares", TensorProto.BOOL, ["batch", 7]),
        _value("no_shape", TensorProto.UINT8, None),
        _value("scalar", TensorProto.DOUBLE, []),
        _value("text", TensorProto.STRING, [None]),
        _value("zero", f, [0]),
        empty_param,
    ], doc_string="the model's doc", producer_name="ortweb-tests", producer_version="1.2",
        domain="ai.ortweb", model_version=42, graph_name="shapes", graph_doc="the graph's doc")


def test_every_shape_declaration_matches_onnx_and_native() -> None:
    data = _shapes_model()
    info = parse_model(data)
    _assert_same_as_onnx(info, data)
    _assert_same_as_native(data)
    shapes = {v.name: v.shape for v in info.inputs}
    assert shapes["minus_one"] == [-1, 3] and shapes["unset"] == [None, 4]
    assert shapes["no_shape"] is None and shapes["scalar"] == []
    inputs = {a.name: a for a in node_args_from_model(info)[0]}
    assert inputs["minus_one"].shape == [None, 3]
    assert inputs["empty_param"].shape == [None, 2]
    # Both show as [] (as in native); only the scalar has a known rank.
    assert inputs["no_shape"].shape == inputs["scalar"].shape == []
    assert not inputs["no_shape"].rank_known and inputs["scalar"].rank_known
    assert repr(inputs["minus_one"]) == (
        "NodeArg(name='minus_one', type='tensor(float)', shape=[None, 3])"
    )


def test_free_dimension_overrides_show_as_native_shows_them() -> None:
    _assert_same_as_native(_shapes_model(), batch=3)
    _assert_same_as_native(_shapes_model(), batch=1, seq=5, nowhere=2)


def test_metadata_props_and_a_model_without_version() -> None:
    f = TensorProto.FLOAT
    data = _identity_model([_value("x", f, [1])])
    model = onnx.load_model_from_string(data)
    helper.set_model_props(model, {"author": "me", "é": "ü", "empty": ""})
    data = model.SerializeToString()
    info = parse_model(data)
    assert info.metadata_props == {"author": "me", "é": "ü", "empty": ""}
    assert info.model_version is None
    _assert_same_as_onnx(info, data)
    _assert_same_as_native(data)
    assert model_metadata(info).version == 2**63 - 1


def test_model_version_zero_is_not_unset() -> None:
    data = _identity_model([_value("x", TensorProto.FLOAT, [1])], model_version=0)
    assert parse_model(data).model_version == 0
    _assert_same_as_native(data)


def _typed(name: str, t: onnx.TypeProto) -> Any:
    return helper.make_value_info(name, t)


def test_sequence_optional_and_map_types() -> None:
    f32 = helper.make_tensor_type_proto(TensorProto.FLOAT, ["n"])
    seq = helper.make_sequence_type_proto(f32)
    opt = helper.make_optional_type_proto(helper.make_tensor_type_proto(TensorProto.INT64, None))
    opt_seq = helper.make_optional_type_proto(seq)
    data = _identity_model(
        [_typed("s", seq), _typed("o", opt), _typed("os", opt_seq)], opset=18
    )
    info = parse_model(data)
    assert [v.type for v in info.inputs] == [
        "seq(tensor(float))", "optional(tensor(int64))", "optional(seq(tensor(float)))"
    ]
    _assert_same_as_onnx(info, data)
    _assert_same_as_native(data)
    # A map input: ZipMap's output and DictVectorizer's input (ai.onnx.ml).
    string_map = helper.make_map_type_proto(
        TensorProto.STRING, helper.make_tensor_type_proto(TensorProto.INT64, [])
    )
    graph = helper.make_graph(
        [helper.make_node("DictVectorizer", ["m"], ["v"], domain="ai.onnx.ml",
                          string_vocabulary=["a", "b"])],
        "maps", [_typed("m", string_map)],
        [helper.make_tensor_value_info("v", TensorProto.INT64, [1, 2])],
    )
    model = helper.make_model(graph, opset_imports=[
        helper.make_opsetid("", 17), helper.make_opsetid("ai.onnx.ml", 3)])
    model.ir_version = 8
    data = model.SerializeToString()
    info = parse_model(data)
    assert info.inputs[0].type == "map(string,tensor(int64))"
    _assert_same_as_onnx(info, data)
    _assert_same_as_native(data)


def test_sparse_tensor_type_and_sparse_initializer() -> None:
    sparse = onnx.TypeProto()
    sparse.sparse_tensor_type.elem_type = TensorProto.FLOAT
    sparse.sparse_tensor_type.shape.dim.add().dim_value = 4
    values = helper.make_tensor("w", TensorProto.FLOAT, [1], [2.0])
    indices = helper.make_tensor("w_idx", TensorProto.INT64, [1], [3])
    graph = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["y"])], "g",
        [_typed("x", sparse), helper.make_tensor_value_info("w", TensorProto.FLOAT, [4])],
        [_typed("y", sparse)],
        sparse_initializer=[helper.make_sparse_tensor(values, indices, [4])],
    )
    data = helper.make_model(graph).SerializeToString()
    info = parse_model(data)
    assert info.inputs[0].type == "sparse_tensor(float)" and info.inputs[0].shape == [4]
    assert info.initializer_names == {"w"}
    _assert_same_as_onnx(info, data)


def _with_initializer(ir_version: int) -> bytes:
    w = helper.make_tensor("w", TensorProto.FLOAT, [3], [1.0, 2.0, 3.0])
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "w"], ["y"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 3]),
         helper.make_tensor_value_info("w", TensorProto.FLOAT, [3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 3])],
        initializer=[w],
    )
    opset = 17 if ir_version >= 4 else 7
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = ir_version
    return model.SerializeToString()


@pytest.mark.parametrize("ir_version", [3, 4, 8])
def test_inputs_with_an_initializer_are_left_out(ir_version: int) -> None:
    data = _with_initializer(ir_version)
    inputs, _, overridable = node_args_from_model(parse_model(data))
    assert [a.name for a in inputs] == ["x"]
    assert [a.name for a in overridable] == (["w"] if ir_version >= 4 else [])
    _assert_same_as_native(data)


# -- speed and bad bytes --------------------------------------------------------------------


def test_large_initializers_are_skipped_without_a_copy() -> None:
    big = np.zeros(8 * 1024 * 1024, np.float32)  # 32 MiB of raw_data
    w = onnx.numpy_helper.from_array(big, "w")
    graph = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["y"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])],
        initializer=[w],
    )
    data = helper.make_model(graph).SerializeToString()
    view = memoryview(bytearray(data))
    tracemalloc.start()
    try:
        info = parse_model(view)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert info.initializer_names == {"w"}
    assert peak < 1024 * 1024, f"parsing allocated {peak} bytes: initializer data was copied"


def _small_model() -> bytes:
    return _identity_model(
        [_value("x", TensorProto.FLOAT, ["n", 3]), _value("t", TensorProto.STRING, None)],
        doc_string="doc", model_version=3,
    )


def test_every_truncation_is_refused_or_read_as_protobuf_reads_it() -> None:
    data = _small_model()
    refused = 0
    for length in range(len(data)):
        prefix = data[:length]
        try:
            info = parse_model(prefix)
        except InvalidGraph as exc:
            refused += 1
            assert "not a valid ONNX ModelProto" in str(exc)
            continue
        # A cut on a field boundary after the graph is valid protobuf: the later
        # fields (opset_import, ...) are simply absent.
        _assert_same_as_onnx(info, prefix)
    assert refused > len(data) // 2


@pytest.mark.parametrize(
    ("data", "fragment"),
    [
        (b"", "no graph"),
        (b"this is not an onnx model at all", "not a valid ONNX ModelProto"),
        (b"\x08", "truncated varint"),
        (b"\x3a\x7f", "claims 127 bytes"),
        (b"\x0b", "wire type 3"),
        (b"\x08" + b"\xff" * 11, "longer than 10 bytes"),
        (b"\x32\x02\xff\xfe" + b"\x3a\x00", "not UTF-8"),
    ],
)
def test_garbage_is_refused_with_what_is_wrong(data: bytes, fragment: str) -> None:
    with pytest.raises(InvalidGraph, match=r"expected a serialized onnx\.ModelProto") as info:
        parse_model(data, what="junk.onnx")
    assert fragment in str(info.value) and "junk.onnx" in str(info.value)


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_corrupted_bytes_raise_only_invalid_graph(data: st.DataObject) -> None:
    model = bytearray(_small_model())
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(0, len(model) - 1))
        model[at] = data.draw(st.integers(0, 255))
    try:
        parse_model(bytes(model))
    except InvalidGraph:
        pass
