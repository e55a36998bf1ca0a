"""ONNX protobufs: a graph's values, types and ops; values to and from ``.pb`` files.

Values take one form per kind: numpy arrays (strings as object arrays of ``str``),
lists (sequences), ``None`` (an empty optional) and dicts (maps).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = [
    "ValueInfo",
    "deserialize",
    "graph_ops",
    "graph_values",
    "normalize",
    "serialize",
    "type_string",
]


@dataclass(frozen=True)
class ValueInfo:
    """A graph input or output: its name and onnxruntime-style type.

    Attributes
    ----------
    name : str
    type : str
        ``'tensor(float)'``, ``'seq(tensor(int64))'``, ``'optional(tensor(float))'``,
        ``'map(int64,tensor(float))'``, ... (onnxruntime's spelling).
    """

    name: str
    type: str

    @property
    def is_tensor(self) -> bool:
        return self.type.startswith("tensor(")


def type_string(type_proto: Any) -> str:
    """onnxruntime's spelling of an ONNX ``TypeProto``: ``tensor(float)``, ``seq(...)``."""
    kind = type_proto.WhichOneof("value")
    if kind == "tensor_type":
        return f"tensor({_elem_name(type_proto.tensor_type.elem_type)})"
    if kind == "sparse_tensor_type":
        return f"sparse_tensor({_elem_name(type_proto.sparse_tensor_type.elem_type)})"
    if kind == "sequence_type":
        return f"seq({type_string(type_proto.sequence_type.elem_type)})"
    if kind == "optional_type":
        return f"optional({type_string(type_proto.optional_type.elem_type)})"
    if kind == "map_type":
        key = _elem_name(type_proto.map_type.key_type)
        return f"map({key},{type_string(type_proto.map_type.value_type)})"
    return "unknown"


def _elem_name(elem_type: int) -> str:
    import onnx

    # onnxruntime names types after the enum, lower-cased: FLOAT8E4M3FN -> float8e4m3fn.
    return str(onnx.TensorProto.DataType.Name(elem_type)).lower()


def graph_values(model: Any) -> tuple[list[ValueInfo], list[ValueInfo]]:
    """A ``ModelProto``'s graph inputs (initializers left out) and outputs, in order."""
    initializers = {i.name for i in model.graph.initializer}
    inputs = [ValueInfo(v.name, type_string(v.type)) for v in model.graph.input
              if v.name not in initializers]
    outputs = [ValueInfo(v.name, type_string(v.type)) for v in model.graph.output]
    return inputs, outputs


def graph_ops(model: Any) -> list[tuple[str, str, int]]:
    """``(domain, op_type, opset)`` of every node, subgraphs included, sorted."""
    import onnx

    opsets = {(o.domain or "ai.onnx"): int(o.version) for o in model.opset_import}
    found: set[tuple[str, str, int]] = set()

    def walk(graph: Any) -> None:
        for node in graph.node:
            domain = node.domain or "ai.onnx"
            found.add((domain, node.op_type, opsets.get(domain, 0)))
            for attr in node.attribute:
                if attr.type == onnx.AttributeProto.GRAPH:
                    walk(attr.g)
                elif attr.type == onnx.AttributeProto.GRAPHS:
                    for g in attr.graphs:
                        walk(g)

    walk(model.graph)
    return sorted(found)


def normalize(value: Any) -> Any:
    """One form per kind of value: arrays (strings as object arrays of str), lists, dicts."""
    import onnx
    from onnx import numpy_helper

    if isinstance(value, onnx.TensorProto):
        value = numpy_helper.to_array(value)
    if isinstance(value, list | tuple):
        return [normalize(v) for v in value]
    if isinstance(value, dict):
        return {k: normalize(v) for k, v in value.items()}
    if value is None:
        return None
    array = np.asarray(value)
    if array.dtype.kind in "OSU":
        flat = [v.decode("utf-8") if isinstance(v, bytes) else str(v)
                for v in array.reshape(-1).tolist()]
        out = np.empty(len(flat), dtype=object)
        out[:] = flat
        return out.reshape(array.shape)
    return array


def serialize(value: Any, type_proto: Any, name: str) -> bytes:
    """A value as onnx's ``generate-data`` tool writes it for a graph value of this type."""
    import onnx
    from onnx import numpy_helper

    kind = type_proto.WhichOneof("value")
    proto: Any
    if kind == "map_type":
        proto = numpy_helper.from_dict(value, name)
    elif kind == "sequence_type":
        proto = numpy_helper.from_list(value, name)
    elif kind == "optional_type":
        proto = numpy_helper.from_optional(value, name)
    elif isinstance(value, onnx.TensorProto):
        proto = value
    else:
        proto = numpy_helper.from_array(np.asarray(value), name)
    return bytes(proto.SerializeToString())


def deserialize(data: bytes, type_proto: Any) -> Any:
    """A ``.pb`` file's value, for a graph value of this type, in :func:`normalize`'s form."""
    import onnx
    from onnx import numpy_helper

    kind = type_proto.WhichOneof("value")
    if kind == "sequence_type":
        seq = onnx.SequenceProto()
        seq.ParseFromString(data)
        return normalize(numpy_helper.to_list(seq))
    if kind == "optional_type":
        opt = onnx.OptionalProto()
        opt.ParseFromString(data)
        return normalize(numpy_helper.to_optional(opt))
    if kind == "map_type":
        mp = onnx.MapProto()
        mp.ParseFromString(data)
        return normalize(numpy_helper.to_dict(mp))
    tensor = onnx.TensorProto()
    tensor.ParseFromString(data)
    return normalize(numpy_helper.to_array(tensor))
