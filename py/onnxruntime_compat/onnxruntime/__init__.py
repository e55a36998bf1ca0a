"""onnxruntime's Python API in the browser, on ortweb and onnxruntime-web.

A drop-in for ``import onnxruntime`` inside Pyodide: existing onnxruntime code runs
unchanged, on onnxruntime-web's WebGPU (``WebGpuExecutionProvider``) or wasm
(``CPUExecutionProvider``) execution provider::

    import onnxruntime as ort

    sess = ort.InferenceSession("model.onnx", providers=["CPUExecutionProvider"])
    (y,) = sess.run(None, {"x": x})

What a browser cannot honour is listed, with why, in :mod:`onnxruntime._compat_table`.
The synchronous calls need JSPI (Python entered through ``runPythonAsync``), as
ortweb's; ``sess.ortweb_session`` is the ``ortweb.InferenceSession`` underneath.
"""

from __future__ import annotations

from ortweb import ExecutionMode, GraphOptimizationLevel, ModelMetadata, NodeArg, OrtValue

from . import _api
from ._api import (
    ExecutionOrder,
    InferenceSession,
    IOBinding,
    RunOptions,
    SessionOptions,
    disable_telemetry_events,
    enable_telemetry_events,
    get_all_providers,
    get_available_providers,
    get_build_info,
    get_device,
    get_ep_devices,
    get_version_string,
    has_collective_ops,
    preload_dlls,
    print_debug_info,
    set_default_logger_severity,
    set_default_logger_verbosity,
    set_global_thread_pool_sizes,
    set_seed,
)
from ._compat_table import TABLE, status

# The version is onnxruntime-web's, so requirements like `onnxruntime>=1.17` hold.
from ._version import __version__

version = __version__
package_name = "onnxruntime"
cuda_version = ""
import_capi_exception = None
SessionIOBinding = IOBinding

# Every top-level name the table refuses: a class or function that raises its reason.
for _name in TABLE:
    if "." not in _name and status(_name)[0] == "refused":
        globals()[_name] = (_api.refused_class(_name) if _name[0].isupper()
                            else _api.refused(_name))
del _name

from . import capi  # noqa: E402  (capi imports the names above)

__all__ = [
    "ExecutionMode",
    "ExecutionOrder",
    "GraphOptimizationLevel",
    "IOBinding",
    "InferenceSession",
    "ModelMetadata",
    "NodeArg",
    "OrtValue",
    "RunOptions",
    "SessionIOBinding",
    "SessionOptions",
    "__version__",
    "capi",
    "cuda_version",
    "disable_telemetry_events",
    "enable_telemetry_events",
    "get_all_providers",
    "get_available_providers",
    "get_build_info",
    "get_device",
    "get_ep_devices",
    "get_version_string",
    "has_collective_ops",
    "import_capi_exception",
    "package_name",
    "preload_dlls",
    "print_debug_info",
    "set_default_logger_severity",
    "set_default_logger_verbosity",
    "set_global_thread_pool_sizes",
    "set_seed",
    "version",
]
