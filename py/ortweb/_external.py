"""External data: the files a model keeps its tensors in, found and checked before
onnxruntime-web sees them.

A model saved with ``onnx.save(..., save_as_external_data=True)`` names, for each
large tensor, a file (its ``location``, relative to the model's folder), an offset
and a length. onnxruntime-web cannot open files: it takes them through the
``externalData`` session option, as ``{path: location, data: bytes}``. Each
file is checked here first (there, long enough for every tensor in it), because an
error inside ORT's core can leave its WebAssembly memory unusable for the page.
A file given by URL is downloaded by the bridge into JavaScript (not into Python),
through ortweb's file cache (:mod:`ortweb._cache`), and checked on what arrived, so
a server that sends no Content-Length is checked too.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import quote, urljoin, urlparse

from . import _bridge
from ._fetch import fetch_url
from ._onnxproto import ExternalTensor, ModelInfo
from ._progress import Progress
from .errors import InvalidArgument, InvalidGraph, NoSuchFile

__all__ = [
    "URL_SCHEMES", "DataFile", "ExternalData", "check_location", "ort_entries",
    "resolve_external_data", "tensor_list",
]

#: Schemes that make a string a URL rather than a path in Pyodide's file system.
URL_SCHEMES = {"http", "https", "blob", "data"}

#: What ``external_data={location: ...}`` maps a file to: its bytes, a URL, or a
#: path in Pyodide's file system.
ExternalData = Mapping[str, "bytes | bytearray | memoryview | str | os.PathLike[str]"]


@dataclass
class DataFile:
    """One external data file, as ORT-web will be given it.

    Attributes
    ----------
    location : str
        The name the model's tensors give it (ORT-web's ``path``).
    kind : {'file', 'url', 'bytes'}
        Where its bytes are: a file in Pyodide's file system, a URL, or bytes the
        caller gave.
    source : str or bytes-like
        The file's path, the URL, or the bytes.
    opened : JsBuffer or None
        A URL's bytes, downloaded to check the file and kept for the creation
        that follows (then released).
    """

    location: str
    kind: Literal["file", "url", "bytes"]
    source: Any
    opened: _bridge.JsBuffer | None = field(default=None, repr=False)

    def label(self) -> str:
        """How progress and messages name the file."""
        return f"external_data[{self.location!r}]" if self.kind == "bytes" else str(self.source)

    def release(self) -> None:
        """Let JavaScript free a downloaded file not handed on."""
        opened, self.opened = self.opened, None
        if opened is not None:
            opened.release()


async def ort_entries(
    files: list[DataFile], *, cache: bool, progress: Progress | None
) -> tuple[list[dict[str, Any]], list[_bridge.JsBuffer]]:
    """The ``externalData`` entries for one creation, and the JS buffers to release
    after it: a file read now (once, into JavaScript), a URL's download (fetched
    again through the cache when a session is re-created), or the caller's bytes.

    Raises
    ------
    NoSuchFile
        For a URL that cannot be fetched again.
    """
    entries: list[dict[str, Any]] = []
    buffers: list[_bridge.JsBuffer] = []
    try:
        for f in files:
            data: Any = f.source
            if f.kind == "file":
                data = _bridge.read_fs_file(f.source)
                buffers.append(data)
                if progress is not None:
                    progress.whole(f.source, data.nbytes)
            elif f.kind == "url":
                data, f.opened = f.opened, None
                if data is None:
                    data = await _download(f, cache, progress)
                buffers.append(data)
            elif progress is not None:
                progress.whole(f.label(), memoryview(data).nbytes)
            entries.append({"path": f.location, "data": data})
    except BaseException:
        for b in buffers:
            b.release()
        raise
    return entries, buffers


async def _download(
    file: DataFile, cache: bool, progress: Progress | None, missing: str = ""
) -> _bridge.JsBuffer:
    status, text, buffer = await fetch_url(file.source, cache=cache, progress=progress)
    if buffer is None:
        raise NoSuchFile(
            f"external data file {file.source!r} cannot be fetched (HTTP {status}"
            f"{' ' + text if text else ''}){': ' + missing if missing else ''}"
        )
    return buffer


def _is_url(text: str) -> bool:
    return urlparse(text).scheme in URL_SCHEMES


def check_location(location: str, tensor: str, what: str) -> None:
    """Refuse a location outside the model's folder.

    Raises
    ------
    InvalidGraph
        For an empty or absolute location, or one with a ``..`` part.
    """
    plain = location.replace("\\", "/")
    why = ""
    if not location:
        why = "an empty location"
    elif plain.startswith("/") or re.match(r"^[A-Za-z]:", plain):
        why = "an absolute path"
    elif ".." in plain.split("/"):
        why = "a path with '..'"
    if why:
        raise InvalidGraph(
            f"{what}: tensor {tensor!r} keeps its data in external file {location!r}, "
            f"{why}; external data must be a file in the model's folder or below it "
            "(onnxruntime refuses locations that leave that folder)"
        )


def _needs(tensors: list[ExternalTensor]) -> int:
    """The bytes the file must hold for every tensor in it."""
    return max(t.offset + (t.length or 0) for t in tensors)


def tensor_list(tensors: list[ExternalTensor]) -> str:
    """``"tensors 'a', 'b', 'c' and 2 more"``: how messages name the tensors of a file."""
    names = [repr(t.name) for t in tensors[:3]]
    more = f" and {len(tensors) - 3} more" if len(tensors) > 3 else ""
    return f"tensor{'s' if len(tensors) > 1 else ''} {', '.join(names)}{more}"


async def _size(
    file: DataFile, tensors: list[ExternalTensor], what: str, cache: bool,
    progress: Progress | None,
) -> int:
    """The file's size in bytes (a URL's as downloaded, kept in ``file.opened``);
    NoSuchFile when it is not there."""
    missing = (
        f"{what} keeps {tensor_list(tensors)} in external data file {file.location!r}"
    )
    if file.kind == "bytes":
        return memoryview(file.source).nbytes
    if file.kind == "file":
        try:
            st = os.stat(file.source)
        except FileNotFoundError:
            raise NoSuchFile(
                f"external data file {file.source!r} not found: {missing} (relative to the "
                "model's folder); put the file beside the model, or pass "
                f"external_data={{{file.location!r}: <its bytes or URL>}}"
            ) from None
        if not os.path.isfile(file.source):
            raise NoSuchFile(f"external data file {file.source!r} is not a file: {missing}")
        return st.st_size
    file.release()
    file.opened = await _download(file, cache, progress, missing)
    return file.opened.nbytes


async def resolve_external_data(
    model: ModelInfo | None,
    source: Any,
    given: ExternalData | None,
    what: str,
    *,
    cache: bool = True,
    progress: Progress | None = None,
) -> list[DataFile]:
    """Find and check the external data files of a model.

    Parameters
    ----------
    model : ModelInfo or None
        The model as ortweb read it; None when it could not (then only ``given``
        files are passed on, unchecked).
    source : str, os.PathLike or bytes
        Where the model came from: files are looked for in its folder (a path in
        Pyodide's file system) or beside its URL; bytes have no folder.
    given : mapping or None
        ``external_data=``: location → bytes, URL or path; these win over files
        beside the model.
    what : str
        How to name the model in messages.
    cache : bool
        Whether files downloaded from URLs go through ortweb's file cache.
    progress : Progress, optional

    Returns
    -------
    list of DataFile
        One per file, in the order the model first names them.

    Raises
    ------
    InvalidArgument
        For a malformed ``external_data``, or one naming a file the model does not use.
    InvalidGraph
        For a location outside the model's folder, or a file too short for a tensor.
    NoSuchFile
        For a file that is not there, or not given for a model given as bytes.
    """
    if given is not None and not isinstance(given, Mapping):
        raise InvalidArgument(
            f"external_data: expected a dict of file name → bytes or URL, got "
            f"{type(given).__name__}"
        )
    files: dict[str, DataFile] = {}
    for key, value in (given or {}).items():
        if not isinstance(key, str):
            raise InvalidArgument(
                f"external_data: keys are the file names the model's tensors give "
                f"(their location), got {type(key).__name__} {key!r}"
            )
        if isinstance(value, bytes | bytearray | memoryview):
            files[key] = DataFile(key, "bytes", value)
        elif isinstance(value, str | os.PathLike):
            text = os.fspath(value)
            files[key] = DataFile(key, "url" if _is_url(text) else "file", text)
        else:
            raise InvalidArgument(
                f"external_data[{key!r}]: expected the file's bytes, a URL or a path in "
                f"Pyodide's file system, got {type(value).__name__}"
            )
    if model is None:
        return list(files.values())
    by_location: dict[str, list[ExternalTensor]] = {}
    for t in model.external:
        check_location(t.location, t.name, what)
        by_location.setdefault(t.location, []).append(t)
    unknown = sorted(set(files) - set(by_location))
    if unknown:
        named = sorted(by_location) or "none"
        raise InvalidArgument(
            f"external_data names file(s) {unknown} that {what} does not use; its "
            f"tensors name {named}"
        )
    if isinstance(source, os.PathLike):
        source = os.fspath(source)
    out: list[DataFile] = []
    try:
        for location, tensors in by_location.items():
            file = files.get(location)
            if file is None:
                if isinstance(source, str) and _is_url(source):
                    if urlparse(source).scheme not in ("http", "https"):
                        raise NoSuchFile(
                            f"{what} keeps {tensor_list(tensors)} in external data file "
                            f"{location!r}, and a {urlparse(source).scheme}: URL has no folder to "
                            f"find it in; pass external_data={{{location!r}: <its bytes or URL>}}"
                        )
                    file = DataFile(location, "url", urljoin(source, quote(location)))
                elif isinstance(source, str):
                    folder = os.path.dirname(source)
                    file = DataFile(location, "file", os.path.join(folder, location))
                else:
                    raise NoSuchFile(
                        f"{what} keeps {tensor_list(tensors)} in external data file "
                        f"{location!r}, and bytes have no folder to find it in; pass "
                        f"external_data={{{location!r}: <the file's bytes or URL>}}"
                    )
            size = await _size(file, tensors, what, cache, progress)
            need = _needs(tensors)
            if size < need:
                file.release()
                # The first that does not fit, in file order: where the file was cut.
                first = min((t for t in tensors if t.offset + (t.length or 0) > size),
                            key=lambda t: t.offset)
                shown = file.label() if file.kind == "bytes" else repr(file.source)
                raise InvalidGraph(
                    f"external data file {shown} is too short: {what} keeps tensor "
                    f"{first.name!r} at bytes {first.offset}..{first.offset + (first.length or 0)} "
                    f"of {location!r}, and all its tensors there need {need} bytes; the file "
                    f"has {size}"
                )
            out.append(file)
    except BaseException:
        for f in out:
            f.release()
        raise
    return out
