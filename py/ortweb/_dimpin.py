"""Free dims pinned in a model's own bytes, for engines that read shapes only there.

onnxruntime-web takes a session's free-dimension overrides as an option; wonnx
compiles its shaders for the shapes the model declares and takes no such option.
:func:`pin_dims` rewrites each named dim (``dim_param``) of the main graph's
inputs, outputs and ``value_info`` as a fixed one (``dim_value``), as
``onnx.tools.update_model_dims`` does on the host, without onnx in the page:
every other byte is copied as it was, and only the messages that hold a changed
dim are written again (with their new lengths).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from ._onnxproto import _I32, _I64, _LEN, _VARINT, _Reader

__all__ = ["pin_dims"]

# A rewriter of one message kind: the bytes of ``buf[start:end]`` rewritten, or
# None when nothing in it changed.
_Rewrite = Callable[[_Reader, int, int], "bytes | None"]


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        low = value & 0x7F
        value >>= 7
        if value:
            out.append(low | 0x80)
        else:
            out.append(low)
            return bytes(out)


def _message(children: Mapping[int, _Rewrite], where: str) -> _Rewrite:
    """A rewriter that hands each length-delimited field in ``children`` to its
    rewriter and copies every other field."""

    def rewrite(r: _Reader, start: int, end: int) -> bytes | None:
        parts: list[bytes] = []
        copied = pos = start
        while pos < end:
            begin = pos
            key, pos = r.varint(pos, end, where)
            wire = key & 7
            if wire == _VARINT:
                _, pos = r.varint(pos, end, where)
            elif wire == _LEN:
                length, pos = r.varint(pos, end, where)
                inner, pos = pos, pos + length
                child = children.get(key >> 3)
                new = None if child is None else child(r, inner, pos)
                if new is not None:
                    parts += [bytes(r.buf[copied:begin]), _varint(key), _varint(len(new)), new]
                    copied = pos
            elif wire in (_I64, _I32):
                pos += 8 if wire == _I64 else 4
            else:
                raise r.fail(where, f"unsupported wire type {wire}")
        if not parts:
            return None
        return b"".join([*parts, bytes(r.buf[copied:end])])

    return rewrite


def _dimension(dims: Mapping[str, int], pinned: list[str]) -> _Rewrite:
    """``TensorShapeProto.Dimension``: ``dim_param`` (2) named in ``dims`` becomes
    ``dim_value`` (1); its ``denotation`` (3) stays."""

    def rewrite(r: _Reader, start: int, end: int) -> bytes | None:
        name = None
        kept: list[bytes] = []
        for number, wire, value in r.fields(start, end, "a dim"):
            if number == 2 and wire == _LEN:
                name = r.string(value, "a dim")
            elif number == 3 and wire == _LEN:
                begin, stop = r.span(wire, value, "a dim")
                kept.append(_varint(3 << 3 | _LEN) + _varint(stop - begin)
                            + bytes(r.buf[begin:stop]))
        if name is None or name not in dims:
            return None
        pinned.append(name)
        return b"".join([_varint(1 << 3 | _VARINT), _varint(dims[name]), *kept])

    return rewrite


def pin_dims(model: bytes, dims: Mapping[str, int], what: str = "the model") -> tuple[
        bytes, list[str]]:
    """``model`` with the dims named in ``dims`` fixed to their sizes.

    Parameters
    ----------
    model : bytes
        A serialized ``onnx.ModelProto``.
    dims : mapping of str to int
        ``dim_param`` → size (a session's free-dimension overrides).
    what : str
        The model's name in errors.

    Returns
    -------
    bytes, list of str
        The rewritten model (``model`` itself when no dim was named) and the names
        pinned, once for every dim rewritten.

    Raises
    ------
    InvalidGraph
        When the bytes are not a ModelProto.
    """
    pinned: list[str] = []
    if not dims:
        return model, pinned
    shape = _message({1: _dimension(dims, pinned)}, "a shape")
    tensor = _message({2: shape}, "a tensor type")
    type_ = _message({1: tensor}, "a type")
    value = _message({2: type_}, "a value_info")
    graph = _message({11: value, 12: value, 13: value}, "the graph")
    new = _message({7: graph}, "the model")(_Reader(model, what), 0, len(model))
    return (model if new is None else new), pinned
