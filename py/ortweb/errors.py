"""Exceptions raised by ortweb.

One hierarchy, rooted at :class:`OrtWebError`::

    OrtWebError
    ├── InvalidArgument        bad feeds, names, dtypes, shapes, options (also a ValueError)
    ├── NoSuchFile             a model path or URL that cannot be read (also a FileNotFoundError)
    ├── InvalidGraph           bytes that are not a loadable ONNX model
    ├── NotImplementedByRuntime  an op or type the runtime does not implement
    ├── ProviderUnavailable    no requested execution provider could be used
    ├── SyncUnavailable        the synchronous API was called where it cannot block
    ├── SessionClosed          a session used after ``close()``
    ├── ModelTooLarge          a model over a memory limit of the browser (also a MemoryError)
    ├── OutputMismatch         outputs that differ from the reference provider's (``verify=``)
    └── OrtRuntimeError        any other failure inside onnxruntime-web (also a RuntimeError)

Errors that come from onnxruntime-web arrive through the bridge as an envelope
``{name, message, code}`` and are translated once, by :func:`from_envelope`, with
onnxruntime's status code kept in :attr:`OrtWebError.code`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

__all__ = [
    "InvalidArgument",
    "InvalidGraph",
    "ModelTooLarge",
    "NoSuchFile",
    "NotImplementedByRuntime",
    "OrtRuntimeError",
    "OrtWebError",
    "OutputMismatch",
    "ProviderUnavailable",
    "SessionClosed",
    "SyncUnavailable",
    "from_envelope",
]


class OrtWebError(Exception):
    """Base class of every ortweb error.

    Parameters
    ----------
    message : str
        What went wrong, naming the culprit and what was expected.
    code : int or None
        onnxruntime's status code (``ORT_INVALID_ARGUMENT`` = 2, ...) when the
        error came from the runtime.
    js_name : str or None
        The JavaScript error's ``name`` when the error came through the bridge.
    """

    def __init__(self, message: str, *, code: int | None = None, js_name: str | None = None):
        super().__init__(message)
        self.message = message
        self.code = code
        self.js_name = js_name


class InvalidArgument(OrtWebError, ValueError):
    """An argument does not match what the model or the API expects."""


class NoSuchFile(OrtWebError, FileNotFoundError):
    """A model path or URL could not be read."""


class InvalidGraph(OrtWebError):
    """The bytes given are not a model onnxruntime-web can load."""


class NotImplementedByRuntime(OrtWebError, NotImplementedError):
    """onnxruntime-web does not implement an operator or type used by the model."""


class ProviderUnavailable(OrtWebError):
    """None of the requested execution providers could run the model.

    Attributes
    ----------
    reasons : dict of str to str
        Why each provider was skipped or failed.
    """

    def __init__(self, message: str, *, reasons: Mapping[str, str] | None = None, **kw: Any):
        super().__init__(message, **kw)
        self.reasons: dict[str, str] = dict(reasons or {})


class SyncUnavailable(OrtWebError):
    """The synchronous API cannot block here (Python was entered synchronously)."""


class SessionClosed(OrtWebError):
    """The session was closed and cannot be used any more."""


class ModelTooLarge(OrtWebError, MemoryError):
    """A model that cannot fit under one of the browser's memory limits.

    Raised before the bytes reach the runtime when the model's own description
    shows it cannot fit, and in place of the runtime's ``bad_alloc`` otherwise.

    Attributes
    ----------
    limit : int
        The limit in bytes (0 when not known).
    size : int
        What the model needs under it, in bytes (0 when not known).
    """

    def __init__(self, message: str, *, limit: int = 0, size: int = 0,
                 code: int | None = None, js_name: str | None = None):
        super().__init__(message, code=code, js_name=js_name)
        self.limit = limit
        self.size = size


class OutputMismatch(OrtWebError):
    """A provider's outputs differ from the reference provider's on the run that
    ``ProviderPolicy(verify=...)`` checked, and the policy allows no fallback; the
    message names each output and the elements that differ."""


class OrtRuntimeError(OrtWebError, RuntimeError):
    """onnxruntime-web failed while loading or running a model."""


# onnxruntime's OrtErrorCode values (onnxruntime_c_api.h).
_BY_CODE: dict[int, type[OrtWebError]] = {
    1: OrtRuntimeError,  # ORT_FAIL
    2: InvalidArgument,  # ORT_INVALID_ARGUMENT
    3: NoSuchFile,  # ORT_NO_SUCHFILE
    4: InvalidGraph,  # ORT_NO_MODEL
    5: OrtRuntimeError,  # ORT_ENGINE_ERROR
    6: OrtRuntimeError,  # ORT_RUNTIME_EXCEPTION
    7: InvalidGraph,  # ORT_INVALID_PROTOBUF
    8: OrtRuntimeError,  # ORT_MODEL_LOADED
    9: NotImplementedByRuntime,  # ORT_NOT_IMPLEMENTED
    10: InvalidGraph,  # ORT_INVALID_GRAPH
    11: OrtRuntimeError,  # ORT_EP_FAIL
}

_BY_NAME: dict[str, type[OrtWebError]] = {
    "InvalidArgument": InvalidArgument,
    "NoSuchFile": NoSuchFile,
    "InvalidGraph": InvalidGraph,
    "NotImplemented": NotImplementedByRuntime,
    "ProviderUnavailable": ProviderUnavailable,
    "SessionClosed": SessionClosed,
}

# ORT-web reports some load failures only in prose, without a status code.
_PROSE: list[tuple[re.Pattern[str], type[OrtWebError]]] = [
    (re.compile(r"protobuf parsing failed|Failed to load model", re.I), InvalidGraph),
    (re.compile(r"not implemented|NOT_IMPLEMENTED", re.I), NotImplementedByRuntime),
]

_CODE_IN_TEXT = re.compile(r"ERROR_CODE:\s*(\d+)")


def from_envelope(envelope: Mapping[str, Any], context: str = "") -> OrtWebError:
    """Translate a bridge error envelope into an ortweb exception.

    Parameters
    ----------
    envelope : mapping
        ``{"name": str, "message": str, "code": int | None}`` as built by
        ``bridge_js/errors.js``.
    context : str
        Prefix naming the operation, e.g. ``"run"``.

    Returns
    -------
    OrtWebError
        An instance of the most specific class; the caller raises it.
    """
    name = str(envelope.get("name") or "Error")
    message = str(envelope.get("message") or name)
    code = envelope.get("code")
    if code is None:
        found = _CODE_IN_TEXT.search(message)
        code = int(found.group(1)) if found else None
    cls: type[OrtWebError] | None = _BY_NAME.get(name)
    if cls is None and code is not None:
        cls = _BY_CODE.get(int(code))
    if cls is None:
        cls = next((c for pat, c in _PROSE if pat.search(message)), OrtRuntimeError)
    text = f"{context}: {message}" if context else message
    return cls(text, code=None if code is None else int(code), js_name=name)
