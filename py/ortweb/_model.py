"""The model a session runs: reading its bytes, and describing its inputs and outputs."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlparse

from . import _bridge, _dtypes
from ._external import URL_SCHEMES
from ._fetch import fetch_url
from ._metadata import (
    ModelMetadata,
    NodeArg,
    model_metadata,
    node_args_from_bridge,
    node_args_from_model,
)
from ._onnxproto import ModelInfo, PagedBytes, parse_model
from ._progress import Progress
from .errors import InvalidArgument, InvalidGraph, NoSuchFile

__all__ = [
    "ModelData", "ModelDescription", "ModelSource", "describe_model", "model_name",
    "open_model", "read_model", "release",
]

ModelSource = str | bytes | bytearray | memoryview | os.PathLike[str]


#: A model's bytes for one creation: the caller's bytes, or a file kept in
#: JavaScript (a URL downloaded, a path read) that Python never holds whole.
ModelData = bytes | _bridge.JsBuffer


async def open_model(
    source: ModelSource, *, cache: bool = True, progress: Progress | None = None
) -> ModelData:
    """A model's bytes: the caller's, or read into JavaScript once from a path in
    Pyodide's file system or a URL (docs: *Loading models*).

    Parameters
    ----------
    source : str, os.PathLike or bytes-like
    cache : bool
        For a URL: read it from, and keep it in, ortweb's file cache.
    progress : Progress, optional

    Raises
    ------
    InvalidArgument
        For empty bytes, or a source of another type.
    NoSuchFile
        For a path that is missing or a directory, or a URL that cannot be fetched.
    """
    if isinstance(source, bytes | bytearray | memoryview):
        data = bytes(source)
        if not data:
            raise InvalidArgument("path_or_bytes: the model bytes are empty")
        if progress is not None:
            progress.whole("model bytes", len(data))
        return data
    if isinstance(source, os.PathLike):
        source = os.fspath(source)
    if not isinstance(source, str):
        raise InvalidArgument(
            "path_or_bytes: expected a file path, a URL or the model's bytes, "
            f"got {type(source).__name__}"
        )
    if urlparse(source).scheme in URL_SCHEMES:
        status, text, buffer = await fetch_url(source, cache=cache, progress=progress)
        if buffer is None:
            raise NoSuchFile(f"cannot fetch model {source}: HTTP {status} {text}".rstrip())
        return buffer
    if not os.path.exists(source):
        raise NoSuchFile(
            f"model file {source!r} not found (working directory {os.getcwd()!r}); "
            "pass a path in Pyodide's file system, an http(s) URL or the model's bytes"
        )
    if os.path.isdir(source):
        raise NoSuchFile(f"model path {source!r} is a directory, not an .onnx file")
    buffer = _bridge.read_fs_file(source)
    if progress is not None:
        progress.whole(source, buffer.nbytes)
    return buffer


def release(data: ModelData | None) -> None:
    """Let JavaScript free a model's bytes once its sessions are created."""
    if isinstance(data, _bridge.JsBuffer):
        data.release()


@dataclass(frozen=True)
class ModelDescription:
    """A model's inputs, outputs and metadata, as native onnxruntime shows them.

    Attributes
    ----------
    inputs, outputs : list of NodeArg
    overridable : list of NodeArg
        Graph inputs that have an initializer.
    meta : ModelMetadata or None
        None when only onnxruntime-web could read the model (it reports no metadata).
    """

    inputs: list[NodeArg]
    outputs: list[NodeArg]
    overridable: list[NodeArg]
    meta: ModelMetadata | None


def _onnx_type(ort_type: Any) -> str:
    if ort_type is None:
        return "unknown"
    try:
        return _dtypes.by_ort(str(ort_type)).onnx
    except KeyError:
        return f"unknown({ort_type})"


def model_name(source: object) -> str:
    """How messages name a model: its path or URL, or that it came as bytes (any
    other value is refused by :func:`open_model`, with its type named)."""
    if isinstance(source, bytes | bytearray | memoryview):
        return "the model (given as bytes)"
    if isinstance(source, str | os.PathLike):
        return f"model {os.fspath(source)!r}"
    return f"the model (given as {type(source).__name__})"


def read_model(model: ModelData) -> ModelInfo | None:
    """The model as ortweb's reader sees it, or None when it cannot read the bytes.

    A model kept in JavaScript is read a page at a time (:class:`PagedBytes`): its
    field headers and strings cross into Python, its tensor data never does.
    None is not an error here: onnxruntime-web is the authority on what loads, and
    a model it loads is then described with what it reports.
    """
    data = model if isinstance(model, bytes) else PagedBytes(model.read, model.nbytes)
    try:
        return parse_model(data)
    except InvalidGraph:
        return None


def describe_model(
    model: ModelInfo | None, info: Mapping[str, Any], free_dimension_overrides: Mapping[str, int]
) -> ModelDescription:
    """Describe the model from its own bytes (read by :func:`read_model`); from the
    bridge's ``info`` only when ortweb's reader could not parse them.

    ORT-web's ``inputMetadata`` turns a ``-1`` or unset dim into 4294967295 and a
    missing shape into rank 0, so its own description is the fallback, not the rule.
    """
    if model is None:
        return ModelDescription(
            node_args_from_bridge([{**e, "type": _onnx_type(e["type"])} for e in info["inputs"]]),
            node_args_from_bridge([{**e, "type": _onnx_type(e["type"])} for e in info["outputs"]]),
            [],
            None,
        )
    inputs, outputs, overridable = node_args_from_model(model, free_dimension_overrides)
    return ModelDescription(inputs, outputs, overridable, model_metadata(model))
