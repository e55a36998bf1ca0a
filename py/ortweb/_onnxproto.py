"""Read what a session needs to know from an ONNX model's bytes, without ``onnx``.

The ``onnx`` package is not available in Pyodide, and onnxruntime-web's
``inputMetadata`` loses information native onnxruntime keeps (a ``dim_value: -1`` or
an unset dim arrives as 4294967295, an input without a shape as rank 0). So ortweb
reads the model's own ``ModelProto`` here: a minimal protobuf reader that walks only
the fields it needs and jumps over everything else by its length, so a model of
hundreds of megabytes is read in about the time it takes to walk its field headers
(initializer data is never copied).

Field numbers are those of onnx's ``onnx.proto``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from .errors import InvalidGraph

__all__ = [
    "ELEM_TYPE_NAMES", "ModelInfo", "ValueInfo", "parse_model",
]

#: onnxruntime's names of ``TensorProto.DataType`` values, as in ``'tensor(float)'``.
ELEM_TYPE_NAMES = {
    1: "float", 2: "uint8", 3: "int8", 4: "uint16", 5: "int16", 6: "int32", 7: "int64",
    8: "string", 9: "bool", 10: "float16", 11: "double", 12: "uint32", 13: "uint64",
    14: "complex64", 15: "complex128", 16: "bfloat16", 17: "float8e4m3fn",
    18: "float8e4m3fnuz", 19: "float8e5m2", 20: "float8e5m2fnuz", 21: "uint4", 22: "int4",
    23: "float4e2m1", 24: "float8e8m0", 25: "uint2", 26: "int2", 27: "float6e2m3",
    28: "float6e3m2",
}

Dim = int | str | None

_VARINT, _I64, _LEN, _I32 = 0, 1, 2, 5


@dataclass
class ValueInfo:
    """One graph input or output as the model declares it.

    Attributes
    ----------
    name : str
    type : str
        onnxruntime's spelling: ``'tensor(float)'``, ``'seq(tensor(int64))'``,
        ``'map(string,tensor(float))'``, ``'optional(tensor(float))'``,
        ``'sparse_tensor(float)'``; ``''`` when the model gives no type.
    shape : list of int, str or None, or None
        Per dim: its ``dim_value`` (negative values kept as written), its
        ``dim_param``, or None when the dim sets neither. None (not ``[]``) when the
        tensor type has no ``shape`` field at all: the rank is unknown.
    doc_string : str
    """

    name: str = ""
    type: str = ""
    shape: list[Dim] | None = None
    doc_string: str = ""


@dataclass
class ModelInfo:
    """The parts of a ``ModelProto`` a session describes (see :func:`parse_model`)."""

    ir_version: int = 0
    producer_name: str = ""
    producer_version: str = ""
    domain: str = ""
    #: None when the model does not set it (native onnxruntime then reports INT64_MAX).
    model_version: int | None = None
    doc_string: str = ""
    metadata_props: dict[str, str] = field(default_factory=dict)
    opset_import: dict[str, int] = field(default_factory=dict)
    graph_name: str = ""
    graph_doc_string: str = ""
    inputs: list[ValueInfo] = field(default_factory=list)
    outputs: list[ValueInfo] = field(default_factory=list)
    initializer_names: set[str] = field(default_factory=set)


class _Reader:
    """Walks protobuf fields of ``buf[start:end]``; every index is into the whole buffer."""

    __slots__ = ("buf", "what")

    def __init__(self, buf: bytes | memoryview, what: str) -> None:
        self.buf = buf
        self.what = what

    def fail(self, where: str, problem: str) -> InvalidGraph:
        return InvalidGraph(
            f"the model bytes are not a valid ONNX ModelProto: {problem} in {where} "
            f"({self.what}); expected a serialized onnx.ModelProto (.onnx file)"
        )

    def varint(self, pos: int, end: int, where: str) -> tuple[int, int]:
        buf = self.buf
        if pos >= end:
            raise self.fail(where, f"truncated varint at byte {pos}")
        b = buf[pos]
        pos += 1
        if b < 0x80:
            return b, pos
        result = b & 0x7F
        shift = 7
        while True:
            if pos >= end:
                raise self.fail(where, f"truncated varint at byte {pos}")
            b = buf[pos]
            pos += 1
            result |= (b & 0x7F) << shift
            if b < 0x80:
                return result, pos
            shift += 7
            if shift >= 70:
                raise self.fail(where, f"varint longer than 10 bytes at byte {pos}")

    def fields(
        self, start: int, end: int, where: str
    ) -> Iterator[tuple[int, int, int | tuple[int, int] | None]]:
        """Yield ``(number, wire_type, value)``: an int for varints, ``(start, end)``
        for length-delimited fields, None for fixed-width ones (skipped)."""
        pos = start
        while pos < end:
            key, pos = self.varint(pos, end, where)
            number, wire = key >> 3, key & 7
            if number == 0:
                raise self.fail(where, f"field number 0 at byte {pos}")
            if wire == _VARINT:
                value, pos = self.varint(pos, end, where)
                yield number, wire, value
            elif wire == _LEN:
                length, pos = self.varint(pos, end, where)
                stop = pos + length
                if stop > end:
                    raise self.fail(
                        where, f"field {number} claims {length} bytes at byte {pos}, "
                        f"only {end - pos} left"
                    )
                yield number, wire, (pos, stop)
                pos = stop
            elif wire == _I64 or wire == _I32:
                pos += 8 if wire == _I64 else 4
                if pos > end:
                    raise self.fail(where, f"truncated fixed-width field {number}")
                yield number, wire, None
            else:
                # Groups (3, 4) are not used by ONNX; 6 and 7 do not exist.
                raise self.fail(where, f"unsupported wire type {wire} for field {number}")

    def string(self, span: object, where: str) -> str:
        if not isinstance(span, tuple):
            raise self.fail(where, "a string field is not length-delimited")
        start, stop = span
        try:
            return bytes(self.buf[start:stop]).decode("utf-8")
        except UnicodeDecodeError:
            raise self.fail(where, f"a string field at byte {start} is not UTF-8") from None

    def span(self, wire: int, value: object, where: str) -> tuple[int, int]:
        if wire != _LEN or not isinstance(value, tuple):
            raise self.fail(where, "a message field is not length-delimited")
        return value

    def integer(self, wire: int, value: object, where: str, signed: bool = True) -> int:
        if wire != _VARINT or not isinstance(value, int):
            raise self.fail(where, "an integer field is not a varint")
        if signed and value >= 1 << 63:
            value -= 1 << 64
        return value


def _shape(r: _Reader, start: int, end: int, where: str) -> list[Dim]:
    dims: list[Dim] = []
    for number, wire, value in r.fields(start, end, where):
        if number != 1:
            continue
        dim: Dim = None
        s, e = r.span(wire, value, where)
        for n, w, v in r.fields(s, e, where):
            # oneof: the last one written wins, as protobuf reads it.
            if n == 1:
                dim = r.integer(w, v, where)
            elif n == 2:
                dim = r.string(v, where)
        dims.append(dim)
    return dims


def _type(r: _Reader, start: int, end: int, where: str) -> tuple[str, list[Dim] | None]:
    """``(type name, shape)`` of a TypeProto; shape None when unknown (no shape field)."""
    name, shape = "", None
    for number, wire, value in r.fields(start, end, where):
        if number in (1, 8):  # tensor_type, sparse_tensor_type
            s, e = r.span(wire, value, where)
            elem, shape = 0, None
            for n, w, v in r.fields(s, e, where):
                if n == 1:
                    elem = r.integer(w, v, where)
                elif n == 2:
                    ss, se = r.span(w, v, where)
                    shape = _shape(r, ss, se, where)
            kind = "tensor" if number == 1 else "sparse_tensor"
            name = f"{kind}({ELEM_TYPE_NAMES.get(elem, f'unknown {elem}')})"
        elif number in (4, 9):  # sequence_type, optional_type
            s, e = r.span(wire, value, where)
            inner = ""
            for n, w, v in r.fields(s, e, where):
                if n == 1:
                    inner = _type(r, *r.span(w, v, where), where)[0]
            name, shape = f"{'seq' if number == 4 else 'optional'}({inner})", None
        elif number == 5:  # map_type
            s, e = r.span(wire, value, where)
            key, inner = 0, ""
            for n, w, v in r.fields(s, e, where):
                if n == 1:
                    key = r.integer(w, v, where)
                elif n == 2:
                    inner = _type(r, *r.span(w, v, where), where)[0]
            name, shape = f"map({ELEM_TYPE_NAMES.get(key, f'unknown {key}')},{inner})", None
        elif number == 7:  # opaque_type
            name, shape = "opaque", None
    return name, shape


def _value_info(r: _Reader, start: int, end: int, where: str) -> ValueInfo:
    info = ValueInfo()
    for number, wire, value in r.fields(start, end, where):
        if number == 1:
            info.name = r.string(value, where)
        elif number == 2:
            info.type, info.shape = _type(r, *r.span(wire, value, where), f"{where} type")
        elif number == 3:
            info.doc_string = r.string(value, where)
    return info


def _tensor_name(r: _Reader, start: int, end: int, where: str) -> str:
    name = ""
    for number, _wire, value in r.fields(start, end, where):
        if number == 8:
            name = r.string(value, where)
    return name


def _graph(r: _Reader, start: int, end: int, info: ModelInfo) -> None:
    where = "GraphProto"
    for number, wire, value in r.fields(start, end, where):
        if number == 2:
            info.graph_name = r.string(value, where)
        elif number == 10:
            info.graph_doc_string = r.string(value, where)
        elif number == 11:
            info.inputs.append(
                _value_info(r, *r.span(wire, value, where), f"graph input {len(info.inputs)}")
            )
        elif number == 12:
            info.outputs.append(
                _value_info(r, *r.span(wire, value, where), f"graph output {len(info.outputs)}")
            )
        elif number == 5:
            info.initializer_names.add(
                _tensor_name(r, *r.span(wire, value, where), "graph initializer")
            )
        elif number == 15:  # sparse_initializer: named by its values tensor
            s, e = r.span(wire, value, where)
            for n, w, v in r.fields(s, e, "sparse initializer"):
                if n == 1:
                    info.initializer_names.add(
                        _tensor_name(r, *r.span(w, v, "sparse initializer"), "sparse initializer")
                    )


def parse_model(data: bytes | bytearray | memoryview, what: str = "model") -> ModelInfo:
    """Read a serialized ``ModelProto``'s metadata, graph inputs/outputs and the
    names of its initializers.

    Parameters
    ----------
    data : bytes, bytearray or memoryview
        The whole ``.onnx`` file. Nothing is copied but the strings read.
    what : str, optional
        How to name the model in error messages (a path, a URL).

    Returns
    -------
    ModelInfo

    Raises
    ------
    InvalidGraph
        When the bytes are truncated or not protobuf, or have no graph.
    """
    buf = data if isinstance(data, bytes) else memoryview(data).cast("B")
    r = _Reader(buf, what)
    info = ModelInfo()
    where = "ModelProto"
    has_graph = False
    for number, wire, value in r.fields(0, len(buf), where):
        if number == 1:
            info.ir_version = r.integer(wire, value, where)
        elif number == 2:
            info.producer_name = r.string(value, where)
        elif number == 3:
            info.producer_version = r.string(value, where)
        elif number == 4:
            info.domain = r.string(value, where)
        elif number == 5:
            info.model_version = r.integer(wire, value, where)
        elif number == 6:
            info.doc_string = r.string(value, where)
        elif number == 7:
            has_graph = True
            _graph(r, *r.span(wire, value, where), info)
        elif number == 8:
            domain, version = "", 0
            for n, w, v in r.fields(*r.span(wire, value, where), "opset_import"):
                if n == 1:
                    domain = r.string(v, "opset_import")
                elif n == 2:
                    version = r.integer(w, v, "opset_import")
            info.opset_import[domain] = version
        elif number == 14:
            key = val = ""
            for n, _w, v in r.fields(*r.span(wire, value, where), "metadata_props"):
                if n == 1:
                    key = r.string(v, "metadata_props")
                elif n == 2:
                    val = r.string(v, "metadata_props")
            info.metadata_props[key] = val
    if not has_graph:
        raise r.fail(where, f"no graph field in {len(buf)} bytes")
    return info
