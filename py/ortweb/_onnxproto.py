"""Read what a session needs to know from an ONNX model's bytes, without ``onnx``.

The ``onnx`` package is not available in Pyodide, and onnxruntime-web's
``inputMetadata`` loses information native onnxruntime keeps (a ``dim_value: -1`` or
an unset dim arrives as 4294967295, an input without a shape as rank 0). So ortweb
reads the model's own ``ModelProto`` here: a minimal protobuf reader that walks only
the fields it needs and jumps over everything else by its length, so a model of
hundreds of megabytes is read in about the time it takes to walk its field headers
(initializer data is never copied). It also lists the tensors whose data lives in
external files (``data_location: EXTERNAL``), so a session can hand those files to
onnxruntime-web.

Field numbers are those of onnx's ``onnx.proto``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import overload

from .errors import InvalidGraph

__all__ = [
    "ELEM_TYPE_NAMES", "ExternalTensor", "ModelInfo", "PagedBytes", "ValueInfo", "parse_model",
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

#: Bits per element of each ``TensorProto.DataType`` with a fixed size (strings,
#: 8, have none): the size of an external tensor whose ``length`` is not written.
_ELEM_BITS = {
    1: 32, 2: 8, 3: 8, 4: 16, 5: 16, 6: 32, 7: 64, 9: 8, 10: 16, 11: 64, 12: 32, 13: 64,
    14: 64, 15: 128, 16: 16, 17: 8, 18: 8, 19: 8, 20: 8, 21: 4, 22: 4, 23: 4, 24: 8,
    25: 2, 26: 2, 27: 6, 28: 6,
}

#: ``TensorProto.DataLocation.EXTERNAL``.
_EXTERNAL = 1

#: The key of a tensor's ``external_data`` entry naming its file, as serialized
#: (field 1, length 8, "location"): a model without these bytes has no external
#: tensor, so the walk through its nodes is skipped.
_LOCATION_KEY = b"\n\x08location"

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


@dataclass(frozen=True)
class ExternalTensor:
    """A tensor whose data lives in a file beside the model.

    Attributes
    ----------
    name : str
        The tensor's name (an initializer's, or a node attribute's tensor).
    location : str
        The file, as the model writes it: relative to the model's folder.
    offset : int
        Where the tensor's bytes start in that file.
    length : int or None
        How many bytes it takes; None when the model writes no ``length`` and its
        size cannot be computed from dims and type.
    """

    name: str
    location: str
    offset: int
    length: int | None


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
    #: Tensors stored in external files, in the order the model lists them.
    external: list[ExternalTensor] = field(default_factory=list)
    #: ``(domain, op_type)`` of every node, subgraphs' included, each once, in the
    #: order first met (``''`` is the default ONNX domain).
    ops: list[tuple[str, str]] = field(default_factory=list)
    #: The main graph's node outputs that are neither graph outputs nor declared in
    #: its ``value_info``: values whose shape only a runtime's inference knows.
    undeclared: list[str] = field(default_factory=list)


class PagedBytes:
    """A long byte string that stays elsewhere, read a page at a time through
    ``read(start, stop)``: how the reader walks a model kept in a JavaScript buffer
    while holding only a page or two of it in Python.

    The reader's walk is forward with jumps (over tensor data), so two pages
    suffice: every field header and string comes from one of them, and tensor data
    is never read at all.

    Parameters
    ----------
    read : callable
        ``read(start, stop) -> bytes``.
    size : int
        The length of the whole string.
    page : int, optional
        Bytes read at once.
    """

    __slots__ = ("_base", "_old", "_old_base", "_page", "_read", "_size", "page_size", "reads")

    def __init__(self, read: Callable[[int, int], bytes], size: int, page: int = 1 << 15) -> None:
        self._read = read
        self._size = size
        self.page_size = page
        self._base, self._page = 0, b""
        self._old_base, self._old = 0, b""
        #: How many pieces were read (for tests: the walk must not read it all).
        self.reads = 0

    def __len__(self) -> int:
        return self._size

    def _load(self, pos: int) -> None:
        base = pos - pos % self.page_size
        self._old_base, self._old = self._base, self._page
        self._base, self._page = base, self._read(base, min(base + self.page_size, self._size))
        self.reads += 1

    @overload
    def __getitem__(self, key: int) -> int: ...
    @overload
    def __getitem__(self, key: slice) -> bytes: ...
    def __getitem__(self, key: int | slice) -> int | bytes:
        if isinstance(key, slice):
            start, stop, _ = key.indices(self._size)
            stop = max(start, stop)
            for base, page in ((self._base, self._page), (self._old_base, self._old)):
                if base <= start and stop <= base + len(page):
                    return page[start - base:stop - base]
            self.reads += 1
            return self._read(start, stop)
        if not 0 <= key < self._size:
            raise IndexError(key)
        off = key - self._base
        if 0 <= off < len(self._page):
            return self._page[off]
        off = key - self._old_base
        if 0 <= off < len(self._old):
            return self._old[off]
        self._load(key)
        return self._page[key - self._base]


class _Reader:
    """Walks protobuf fields of ``buf[start:end]``; every index is into the whole buffer."""

    __slots__ = ("buf", "has_location", "what")

    def __init__(self, buf: bytes | memoryview | PagedBytes, what: str) -> None:
        self.buf: bytes | memoryview | PagedBytes = buf
        self.what = what
        # A fast search in C; a memoryview or paged bytes cannot be searched without
        # a copy, so their nodes are always walked.
        self.has_location = not isinstance(buf, bytes) or _LOCATION_KEY in buf

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


def _entry(r: _Reader, wire: int, value: object, where: str, what: str) -> tuple[str, str]:
    """A StringStringEntryProto (``metadata_props``, ``external_data``): key, value."""
    key = text = ""
    for n, _w, v in r.fields(*r.span(wire, value, where), what):
        if n == 1:
            key = r.string(v, what)
        elif n == 2:
            text = r.string(v, what)
    return key, text


def _dims(r: _Reader, wire: int, value: object, where: str) -> list[int]:
    if wire == _VARINT:
        return [r.integer(wire, value, where)]
    s, e = r.span(wire, value, where)  # packed, as protobuf 3 writes repeated ints
    dims = []
    while s < e:
        dim, s = r.varint(s, e, where)
        dims.append(dim - (1 << 64) if dim >= 1 << 63 else dim)
    return dims


def _external(
    r: _Reader, name: str, entries: dict[str, str], dims: list[int], elem: int, where: str
) -> ExternalTensor:
    def number(key: str) -> int | None:
        text = entries.get(key)
        if text is None:
            return None
        try:
            value = int(text)
        except ValueError:
            value = -1
        if value < 0:
            raise r.fail(where, f"tensor {name!r} has external_data {key} {text!r}, "
                                "not a non-negative integer")
        return value

    length = number("length")
    if length is None and elem in _ELEM_BITS and all(d >= 0 for d in dims):
        count = 1
        for d in dims:
            count *= d
        length = (count * _ELEM_BITS[elem] + 7) // 8
    return ExternalTensor(name, entries.get("location", ""), number("offset") or 0, length)


def _tensor(r: _Reader, start: int, end: int, where: str, info: ModelInfo) -> str:
    """A TensorProto's name; an external one is added to ``info.external``."""
    name = ""
    location = 0
    entries: dict[str, str] = {}
    dims: list[int] = []
    elem = 0
    for number, wire, value in r.fields(start, end, where):
        if number == 8:
            name = r.string(value, where)
        elif number == 14:
            location = r.integer(wire, value, where)
        elif number == 13:
            key, text = _entry(r, wire, value, where, "external_data")
            entries[key] = text
        elif number == 1:
            dims.extend(_dims(r, wire, value, where))
        elif number == 2:
            elem = r.integer(wire, value, where)
    if location == _EXTERNAL:
        info.external.append(_external(r, name, entries, dims, elem, where))
    return name


def _sparse(r: _Reader, start: int, end: int, where: str, info: ModelInfo) -> str:
    """A SparseTensorProto's name (its values tensor's); its external parts are noted."""
    name = ""
    for n, w, v in r.fields(start, end, where):
        if n == 1:
            name = _tensor(r, *r.span(w, v, where), where, info)
        elif n == 2:
            _tensor(r, *r.span(w, v, where), where, info)
    return name


#: Ops whose attributes hold subgraphs, read for the ops inside them.
_WITH_SUBGRAPHS = frozenset({"If", "Loop", "Scan", "SequenceMap"})


def _node(r: _Reader, start: int, end: int, info: ModelInfo, outputs: list[str] | None,
          tensors: bool) -> None:
    """A NodeProto's op (into ``info.ops``), its outputs (into ``outputs``), and, when
    ``tensors`` or it holds subgraphs, its attributes' tensors and subgraphs."""
    op, domain = "", ""
    for number, _wire, value in r.fields(start, end, "node"):
        if number == 4:
            op = r.string(value, "node")
        elif number == 7:
            domain = r.string(value, "node")
        elif number == 2 and outputs is not None:
            outputs.append(r.string(value, "node"))
    if (domain, op) not in info.ops:
        info.ops.append((domain, op))
    if tensors or op in _WITH_SUBGRAPHS:
        _nodes_tensors(r, start, end, "node", info)


def _nodes_tensors(r: _Reader, start: int, end: int, where: str, info: ModelInfo) -> None:
    """The tensors in a NodeProto's attributes (``Constant``'s value, subgraphs)."""
    for number, wire, value in r.fields(start, end, where):
        if number != 5:  # attribute
            continue
        for n, w, v in r.fields(*r.span(wire, value, where), "node attribute"):
            if n in (5, 10):  # t, tensors
                _tensor(r, *r.span(w, v, where), "attribute tensor", info)
            elif n in (22, 23):  # sparse_tensor, sparse_tensors
                _sparse(r, *r.span(w, v, where), "attribute sparse tensor", info)
            elif n in (6, 11):  # g, graphs
                _graph(r, *r.span(w, v, where), info, top=False)


def _graph(r: _Reader, start: int, end: int, info: ModelInfo, top: bool = True) -> None:
    """Read the main graph (``top``), or only the external tensors of a subgraph."""
    where = "GraphProto" if top else "subgraph"
    # A node's tensors can be external only when some tensor names a location.
    tensors = r.has_location
    produced: list[str] = []
    declared: set[str] = set()
    for number, wire, value in r.fields(start, end, where):
        if number == 1:
            _node(r, *r.span(wire, value, where), info, produced if top else None, tensors)
        elif number == 13 and top:  # value_info
            declared.add(_value_info(r, *r.span(wire, value, where), "value_info").name)
        elif number == 5:
            name = _tensor(r, *r.span(wire, value, where), "graph initializer", info)
            if top:
                info.initializer_names.add(name)
        elif number == 15:  # sparse_initializer: named by its values tensor
            name = _sparse(r, *r.span(wire, value, where), "sparse initializer", info)
            if top:
                info.initializer_names.add(name)
        elif not top:
            continue
        elif number == 2:
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
    if top:
        declared.update(v.name for v in info.outputs)
        info.undeclared = [name for name in produced if name and name not in declared]


def parse_model(
    data: bytes | bytearray | memoryview | PagedBytes, what: str = "model"
) -> ModelInfo:
    """Read a serialized ``ModelProto``'s metadata, graph inputs/outputs, the
    names of its initializers and its tensors stored in external files.

    Parameters
    ----------
    data : bytes, bytearray, memoryview or PagedBytes
        The whole ``.onnx`` file. Nothing is copied but the strings read (and, for
        :class:`PagedBytes`, the pages holding field headers).
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
    buf = data if isinstance(data, bytes | PagedBytes) else memoryview(data).cast("B")
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
            key, val = _entry(r, wire, value, where, "metadata_props")
            info.metadata_props[key] = val
        elif number == 25 and r.has_location:  # functions: their nodes' tensors
            for n, w, v in r.fields(*r.span(wire, value, where), "FunctionProto"):
                if n == 7:
                    _nodes_tensors(r, *r.span(w, v, "FunctionProto"), "function node", info)
    if not has_graph:
        raise r.fail(where, f"no graph field in {len(buf)} bytes")
    return info
