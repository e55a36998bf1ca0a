"""onnxruntime's exception classes, as ortweb's, and the names native code imports here.

Each exception name is an alias of an ``ortweb.errors`` class (see
``EXCEPTIONS`` in :mod:`onnxruntime._compat_table`), so ``except`` clauses written
for native onnxruntime catch what ortweb raises: ``InvalidArgument`` a bad feed,
``NoSuchFile`` a missing model, ``InvalidGraph``/``InvalidProtobuf``/``NoModel`` a
bad model, ``EPFail`` no usable provider, ``Fail`` (and native's other generic
names) any other failure in onnxruntime-web.
"""

from __future__ import annotations

from ortweb import ExecutionMode, GraphOptimizationLevel, ModelMetadata, NodeArg, OrtValue
from ortweb import errors as _errors

from .._api import (
    ExecutionOrder,
    InferenceSession,
    RunOptions,
    SessionOptions,
    disable_telemetry_events,
    enable_telemetry_events,
    get_all_providers,
    get_available_providers,
    get_build_info,
    get_device,
    get_version_string,
    has_collective_ops,
    set_default_logger_severity,
    set_default_logger_verbosity,
    set_seed,
)
from .._api import IOBinding as SessionIOBinding
from .._compat_table import EXCEPTIONS

for _name, _target in EXCEPTIONS.items():
    globals()[_name] = getattr(_errors, _target)
del _name, _target


def get_default_session_options() -> SessionOptions:
    return SessionOptions()


__all__ = [
    *EXCEPTIONS,
    "ExecutionMode",
    "ExecutionOrder",
    "GraphOptimizationLevel",
    "InferenceSession",
    "ModelMetadata",
    "NodeArg",
    "OrtValue",
    "RunOptions",
    "SessionIOBinding",
    "SessionOptions",
    "disable_telemetry_events",
    "enable_telemetry_events",
    "get_all_providers",
    "get_available_providers",
    "get_build_info",
    "get_default_session_options",
    "get_device",
    "get_version_string",
    "has_collective_ops",
    "set_default_logger_severity",
    "set_default_logger_verbosity",
    "set_seed",
]
