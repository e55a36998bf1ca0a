"""Check feeds against the model's metadata before onnxruntime-web sees them.

An error inside ORT-web's core can leave its wasm memory or the session unusable,
so every mistake a user can make with a feed is caught here, in Python, with a
message that names the input, what was expected and what came.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from . import _dtypes
from ._metadata import NodeArg, format_shape
from ._ortvalue import OrtValue
from .errors import InvalidArgument, NotImplementedByRuntime

__all__ = [
    "MAX_TENSOR_BYTES", "FeedMemo", "check_feeds", "check_output_names", "check_value",
    "describe",
]

#: The largest CPU tensor ortweb hands to onnxruntime-web. Its wasm heap is 32-bit:
#: 4 GiB at most, shared by the model, a copy of every feed, the outputs and every
#: intermediate. Running out there aborts the runtime for the whole page, so a feed
#: over 1 GiB is refused up front. (Pyodide, 32-bit too, cannot make arrays of
#: 2 GiB or more at all.)
MAX_TENSOR_BYTES = 1024**3


def describe(arg: NodeArg) -> str:
    """``'x' (tensor(float) [1, 3])`` for messages."""
    return f"{arg.name!r} ({arg.type} {format_shape(arg.shape)})"


def _numpy_name(arg: NodeArg) -> str:
    try:
        dt = _dtypes.by_onnx(arg.type)
    except KeyError:
        return arg.type
    return "str" if dt.is_string else dt.numpy.name


def _dtype_expr(arg: NodeArg) -> str:
    """A dtype expression users can paste: ``numpy.float32``, ``str``, ``numpy.bool_``."""
    name = _numpy_name(arg)
    if name == "str":
        return "str"
    return "numpy.bool_" if name == "bool" else f"numpy.{name}"


def _from_list(arg: NodeArg, value: list[Any]) -> np.ndarray:
    """Convert a list the way native onnxruntime does: ``numpy.array(value, dtype=...)``
    with the input's declared dtype (floats into ints truncate), or ``str()`` of each
    element for a string input, refusing what numpy cannot convert."""
    try:
        dtype = _dtypes.by_onnx(arg.type)
    except KeyError:
        raise InvalidArgument(
            f"input {arg.name!r}: ortweb cannot feed values of type {arg.type}"
        ) from None
    try:
        with warnings.catch_warnings():
            # numpy warns (not raises) on some lossy casts; native converts them too.
            warnings.simplefilter("ignore")
            if dtype.is_string:
                # Native makes an object array and takes str() of every element,
                # whatever it is (so a ragged list gives the text of its rows).
                items = np.array(value, dtype=object)
                text = np.empty(items.shape, dtype=object)
                text.flat[:] = [str(item) for item in items.flat]
                return text
            return np.array(value, dtype=dtype.numpy)
    except (ValueError, TypeError, OverflowError) as exc:
        raise InvalidArgument(
            f"input {arg.name!r}: expected a list convertible to {_numpy_name(arg)} "
            f"({arg.type}) with shape {format_shape(arg.shape)}, got a list numpy cannot "
            f"convert ({exc}); onnxruntime refuses it too (\"Could not create tensor from "
            "given input list\")"
        ) from None


def _as_array(arg: NodeArg, value: Any) -> np.ndarray:
    if isinstance(value, np.ndarray):
        return value
    if isinstance(value, list):
        return _from_list(arg, value)
    if isinstance(value, np.generic):
        # Native onnxruntime refuses numpy scalars ("Unable to handle object of
        # type numpy.float32"); ortweb has always taken them as 0-d arrays, and
        # tests pin that, so it stays.
        return np.asarray(value)
    expected = (
        f"a numpy.ndarray of {_numpy_name(arg)} with shape {format_shape(arg.shape)} "
        "(or a list)"
    )
    if value is None:
        raise InvalidArgument(f"input {arg.name!r}: expected {expected}, got None")
    kind = type(value).__name__
    hint = ""
    if isinstance(value, tuple | int | float | bool):
        hint = f"; convert it with numpy.asarray(value, dtype={_dtype_expr(arg)})"
    raise InvalidArgument(f"input {arg.name!r}: expected {expected}, got {kind}{hint}")


def _check_dtype(arg: NodeArg, array: np.ndarray) -> _dtypes.DType:
    try:
        expected = _dtypes.by_onnx(arg.type)
    except KeyError:
        raise InvalidArgument(
            f"input {arg.name!r}: ortweb cannot feed values of type {arg.type}"
        ) from None
    actual = _dtypes.by_numpy(array.dtype)
    if actual is None or actual.onnx != expected.onnx:
        want = "str" if expected.is_string else expected.numpy.name
        raise InvalidArgument(
            f"input {arg.name!r}: expected dtype {want} ({expected.onnx}), "
            f"got {array.dtype.name}"
        )
    if expected.is_string:
        _check_strings(arg, array)
    return expected


def _text_elements(array: np.ndarray) -> np.ndarray:
    """An object array whose elements that are not text become ``str()`` of
    themselves, as native onnxruntime feeds them (``1`` → ``'1'``)."""
    items = array.reshape(-1).tolist()
    if all(isinstance(v, str | bytes) for v in items):
        return array
    text = np.empty(array.shape, dtype=object)
    text.flat[:] = [v if isinstance(v, str | bytes) else str(v) for v in items]
    return text


def _check_strings(arg: NodeArg, array: np.ndarray) -> None:
    for index, value in enumerate(array.reshape(-1).tolist()):
        # ORT-web passes strings to its core as C strings: everything after a NUL
        # would be dropped silently, so refuse instead.
        if isinstance(value, bytes):
            try:
                value = value.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise InvalidArgument(
                    f"input {arg.name!r}: the bytes at flat index {index} are not UTF-8 "
                    f"({exc.reason}); tensor(string) holds UTF-8 text"
                ) from None
        if "\x00" in value:
            raise InvalidArgument(
                f"input {arg.name!r}: the string at flat index {index} contains a NUL "
                "character, which onnxruntime-web would silently cut off there"
            )


def _check_shape(arg: NodeArg, got: tuple[int, ...], role: str = "input") -> None:
    """Refuse exactly the shapes native onnxruntime refuses: a wrong rank or a wrong
    fixed dim. It checks nothing when the model declares no shape or a scalar
    (``[]``), and never compares symbolic dims, not even across inputs."""
    want_shape = arg.shape
    if not want_shape:
        return
    if len(got) != len(want_shape):
        raise InvalidArgument(
            f"{role} {arg.name!r}: expected rank {len(want_shape)} "
            f"(shape {format_shape(want_shape)}), got rank {len(got)} (shape {list(got)})"
        )
    for axis, (want, size) in enumerate(zip(want_shape, got, strict=True)):
        if isinstance(want, int) and want != size:
            raise InvalidArgument(
                f"{role} {arg.name!r}: dimension {axis} must be {want}, got {size} "
                f"(expected shape {format_shape(want_shape)}, got {list(got)})"
            )


def _check_size(arg: NodeArg, array: np.ndarray, dtype: _dtypes.DType) -> None:
    # Computed from the shape, not array.nbytes: a broadcast view is small in
    # memory but becomes full size once made contiguous for the runtime.
    size = math.prod(array.shape) * dtype.itemsize  # exact: Python ints
    if size > MAX_TENSOR_BYTES:
        raise InvalidArgument(
            f"input {arg.name!r}: {size / 1024**3:.2f} GiB ({list(array.shape)} of "
            f"{dtype.numpy.name}) is more than the {MAX_TENSOR_BYTES // 1024**3} GiB "
            "onnxruntime-web's 32-bit wasm heap can take for one tensor; split the input, "
            "or keep it on the GPU (OrtValue on 'webgpu')"
        )


def check_value(arg: NodeArg, value: OrtValue, role: str = "input") -> _dtypes.DType:
    """Check an OrtValue fed as input (or bound as output) ``arg``: not disposed,
    the model's element type, rank and fixed dims."""
    if value.is_disposed:
        raise InvalidArgument(f"{role} {arg.name!r}: the OrtValue given was disposed")
    if value.data_type() != arg.type:
        raise InvalidArgument(
            f"{role} {arg.name!r}: expected {arg.type}, got an OrtValue of {value.data_type()}"
        )
    _check_shape(arg, tuple(value.shape()), role)
    return _dtypes.by_onnx(arg.type)


class FeedMemo:
    """What the last feeds that passed :func:`check_feeds` looked like, per session.

    Every check on numeric numpy feeds depends only on their names, dtypes and
    shapes, and a loop of runs usually feeds the same ones each time: those pass
    again on a comparison instead of the whole walk (a tiny run's Python work is
    most of its cost). String tensors are checked element by element, so never
    remembered; nor are OrtValues.
    """

    __slots__ = ("dtypes", "signature")

    def __init__(self) -> None:
        self.signature: list[tuple[np.dtype[Any], tuple[int, ...]]] | None = None
        self.dtypes: list[_dtypes.DType] = []


def _signature(
    inputs: Sequence[NodeArg], feeds: Any
) -> list[tuple[np.dtype[Any], tuple[int, ...]]] | None:
    """``(dtype, shape)`` per input when every feed is a numpy array, else None."""
    if type(feeds) is not dict or len(feeds) != len(inputs):
        return None
    signature = []
    for arg in inputs:
        value = feeds.get(arg.name)
        if type(value) is not np.ndarray:
            return None
        signature.append((value.dtype, value.shape))
    return signature


def check_feeds(
    inputs: Sequence[NodeArg], feeds: Any, memo: FeedMemo | None = None,
    initializers: Sequence[NodeArg] = (),
) -> list[tuple[NodeArg, _dtypes.DType, np.ndarray | OrtValue]]:
    """Validate ``feeds`` and return ``(arg, dtype, value)`` in the model's input order.

    Parameters
    ----------
    inputs : sequence of NodeArg
        The model's inputs.
    feeds : mapping of str to numpy.ndarray or OrtValue
        What the user passed as ``input_feed``.
    memo : FeedMemo, optional
        The session's memo: feeds shaped like the last ones that passed pass at once.
    initializers : sequence of NodeArg, optional
        The model's overridable initializers: native onnxruntime takes them as feeds,
        onnxruntime-web does not.

    Raises
    ------
    InvalidArgument
        For anything ORT-web would reject, misread or crash on.
    NotImplementedByRuntime
        For a feed of an overridable initializer.
    """
    if memo is None:
        return _check_all(inputs, feeds, initializers)
    signature = _signature(inputs, feeds)
    if signature is not None and signature == memo.signature:
        return [
            (arg, dtype, feeds[arg.name])
            for arg, dtype in zip(inputs, memo.dtypes, strict=True)
        ]
    checked = _check_all(inputs, feeds, initializers)
    if signature is not None and not any(dtype.is_string for _, dtype, _ in checked):
        memo.signature, memo.dtypes = signature, [dtype for _, dtype, _ in checked]
    return checked


def _check_all(
    inputs: Sequence[NodeArg], feeds: Any, initializers: Sequence[NodeArg] = ()
) -> list[tuple[NodeArg, _dtypes.DType, np.ndarray | OrtValue]]:
    if not isinstance(feeds, Mapping):
        raise InvalidArgument(
            "input_feed: expected a dict mapping input names to numpy arrays, "
            f"got {type(feeds).__name__}"
        )
    by_name = {a.name: a for a in inputs}
    for key in feeds:
        if not isinstance(key, str):
            raise InvalidArgument(f"input_feed: input names must be str, got {key!r}")
        if key not in by_name:
            if any(a.name == key for a in initializers):
                # ORT-web's run() takes graph inputs only ("invalid input" otherwise).
                raise NotImplementedByRuntime(
                    f"input {key!r} is an initializer of the model: native onnxruntime lets "
                    "a feed override it, onnxruntime-web accepts only the graph's inputs "
                    f"({', '.join(a.name for a in inputs) or 'none'}); leave {key!r} out "
                    "of the feeds, or export the model with it as a graph input"
                )
            known = ", ".join(describe(a) for a in inputs) or "none"
            raise InvalidArgument(f"unknown input name {key!r}; the model's inputs are: {known}")
    missing = [a for a in inputs if a.name not in feeds]
    if missing:
        raise InvalidArgument(
            "missing input(s): " + ", ".join(describe(a) for a in missing)
        )
    checked: list[tuple[NodeArg, _dtypes.DType, np.ndarray | OrtValue]] = []
    for arg in inputs:
        value = feeds[arg.name]
        if isinstance(value, OrtValue):
            checked.append((arg, check_value(arg, value, "input"), value))
            continue
        array = _as_array(arg, value)
        if array.dtype == object and arg.type == "tensor(string)":
            array = _text_elements(array)
        dtype = _check_dtype(arg, array)
        _check_shape(arg, tuple(int(d) for d in array.shape))
        _check_size(arg, array, dtype)
        checked.append((arg, dtype, array))
    return checked


def check_output_names(outputs: Sequence[NodeArg], names: Any) -> list[str]:
    """Resolve ``output_names`` (None or empty = all, as native) to a list, rejecting
    unknown names."""
    known = [a.name for a in outputs]
    if names is None:
        return known
    if isinstance(names, str) or not isinstance(names, Sequence):
        raise InvalidArgument(
            f"output_names: expected a list of output names or None, got {type(names).__name__}"
        )
    if not names:
        return known  # onnxruntime-web throws on an empty fetch list
    for n in names:
        if n not in known:
            raise InvalidArgument(
                f"unknown output name {n!r}; the model's outputs are: "
                + ", ".join(describe(a) for a in outputs)
            )
    return list(names)
