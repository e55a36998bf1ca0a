"""ortweb: run ONNX models from Python in the browser (Pyodide + onnxruntime-web).

The API follows onnxruntime's Python API::

    import numpy as np
    import ortweb

    sess = ortweb.InferenceSession("model.onnx", providers=["webgpu", "wasm"])
    (y,) = sess.run(None, {"x": np.ones((1, 3), np.float32)})

    # or, asynchronously
    sess = await ortweb.InferenceSession.create("model.onnx")
    (y,) = await sess.run_async(None, {"x": x})
"""

from __future__ import annotations

from . import errors
from ._cache import cache_info, cache_info_async, clear_cache, clear_cache_async
from ._dtypes import DTYPES
from ._iobinding import IOBinding
from ._metadata import ModelMetadata, NodeArg
from ._options import ExecutionMode, GraphOptimizationLevel, RunOptions, SessionOptions
from ._ortvalue import OrtValue
from ._policy import ProviderPolicy
from ._report import ProviderAttempt, ProviderReport
from ._runtime import (
    get_available_providers,
    get_available_providers_async,
    live_handles,
    memory_info,
    memory_info_async,
    runtime_info,
    runtime_info_async,
    set_default_providers,
    set_num_threads,
    webgpu_device,
    webgpu_device_async,
)
from ._session import InferenceSession
from .errors import (
    InvalidArgument,
    InvalidGraph,
    ModelTooLarge,
    NoSuchFile,
    NotImplementedByRuntime,
    OrtRuntimeError,
    OrtWebError,
    OutputMismatch,
    ProviderUnavailable,
    SessionClosed,
    SyncUnavailable,
)

__version__ = "0.1.0"

__all__ = [
    "DTYPES",
    "ExecutionMode",
    "GraphOptimizationLevel",
    "IOBinding",
    "InferenceSession",
    "InvalidArgument",
    "InvalidGraph",
    "ModelMetadata",
    "ModelTooLarge",
    "NoSuchFile",
    "NodeArg",
    "NotImplementedByRuntime",
    "OrtRuntimeError",
    "OrtValue",
    "OrtWebError",
    "OutputMismatch",
    "ProviderAttempt",
    "ProviderPolicy",
    "ProviderReport",
    "ProviderUnavailable",
    "RunOptions",
    "SessionClosed",
    "SessionOptions",
    "SyncUnavailable",
    "__version__",
    "cache_info",
    "cache_info_async",
    "clear_cache",
    "clear_cache_async",
    "errors",
    "get_available_providers",
    "get_available_providers_async",
    "live_handles",
    "memory_info",
    "memory_info_async",
    "runtime_info",
    "runtime_info_async",
    "set_default_providers",
    "set_num_threads",
    "webgpu_device",
    "webgpu_device_async",
]
