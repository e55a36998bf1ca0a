"""What the drop-in ``onnxruntime`` provides of native onnxruntime 1.32's public API.

One table, :data:`TABLE`: every public name of native onnxruntime's top-level
module, of its public classes and of ``capi.onnxruntime_pybind11_state``'s
exceptions, mapped to ``'provided'`` or to a reason that starts with one of:

- ``'provided: '``  there, with a note on how it maps;
- ``'no effect: '`` there and accepted, but a browser cannot honour it (why);
- ``'refused: '``   there, and raises ``NotImplemented`` (an ``ortweb`` error, also a
  ``NotImplementedError``) with this reason;
- ``'absent: '``    not there (why).

The drop-in reads its refusals from here, the tests check the table against native
onnxruntime and against the drop-in in a page, and the docs' table is rendered
from it (``python py/onnxruntime_compat/onnxruntime/_compat_table.py``). Standard
library only, so the host can load this file by path without importing the drop-in
(on the host ``onnxruntime`` is the native package).
"""

from __future__ import annotations

__all__ = ["CLASSES", "EXCEPTIONS", "STATUSES", "TABLE", "render_markdown", "status"]

STATUSES = ("provided", "no effect", "refused", "absent")

#: Native classes whose public members the table lists one by one.
CLASSES = (
    "InferenceSession", "SessionOptions", "RunOptions", "OrtValue", "IOBinding", "NodeArg",
    "ModelMetadata", "GraphOptimizationLevel", "ExecutionMode", "ExecutionOrder",
)

#: ``capi.onnxruntime_pybind11_state`` exception → the ``ortweb.errors`` class it is.
#: Aliases, not look-alikes: ``except`` matches by class, so native ``except``
#: clauses catch what ortweb raises. onnxruntime-web reports load failures with
#: fewer distinctions than native, so every "bad model" name is one class, and
#: every generic failure another.
EXCEPTIONS = {
    "Fail": "OrtRuntimeError",
    "EngineError": "OrtRuntimeError",
    "RuntimeException": "OrtRuntimeError",
    "ModelLoaded": "OrtRuntimeError",
    "ModelLoadCanceled": "OrtRuntimeError",
    "ModelRequiresCompilation": "OrtRuntimeError",
    "DeviceReset": "OrtRuntimeError",
    "NotFound": "OrtRuntimeError",
    "InvalidArgument": "InvalidArgument",
    "NoSuchFile": "NoSuchFile",
    "NoModel": "InvalidGraph",
    "InvalidProtobuf": "InvalidGraph",
    "InvalidGraph": "InvalidGraph",
    "NotImplemented": "NotImplementedByRuntime",
    "EPFail": "ProviderUnavailable",
}

_EP_DEVICES = ("refused: onnxruntime-web has no execution-provider device API (plugin EPs, "
               "hardware devices); choose providers with providers=[...]")
_ALLOC = ("refused: onnxruntime-web's allocators and memory arenas are its own and cannot be "
          "configured from Python")
_COMPILE = "refused: onnxruntime-web has no model compile API (EP context models)"
_PACKAGE = "refused: onnxruntime-web has no model package API"
_LORA = "refused: onnxruntime-web has no LoRA adapter API"
_SPARSE = "refused: onnxruntime-web has no sparse tensors"
_NATIVE_LIB = ("refused: a browser cannot load native shared libraries (.so, .dll, .dylib) into "
               "onnxruntime-web's WebAssembly")
_STREAMS = ("refused: onnxruntime-web exposes no device streams or copies between devices; use "
            "OrtValue.numpy() and OrtValue.ortvalue_from_numpy(array, 'webgpu')")
_PROFILING = ("no effect: onnxruntime-web writes profiles into its own WebAssembly file system, "
              "which Python cannot read")
_THREADS = ("no effect: onnxruntime-web has one wasm thread pool per page (intra_op_num_threads "
            "sets it, as ortweb.set_num_threads)")
_NO_OPTION = "no effect: onnxruntime-web has no such option"
_OWN_FILE = "absent: an implementation detail of native onnxruntime's package, not API"

TABLE: dict[str, str] = {
    # -- top level -----------------------------------------------------------------------
    "AdapterFormat": _LORA,
    "ExecutionMode": "provided: ortweb.ExecutionMode",
    "ExecutionOrder": "provided",
    "GraphOptimizationLevel": "provided: ortweb.GraphOptimizationLevel",
    "IOBinding": "provided",
    "InferenceSession": "provided",
    "LoraAdapter": _LORA,
    "ModelCompiler": _COMPILE,
    "ModelMetadata": "provided: ortweb.ModelMetadata",
    "ModelPackage": _PACKAGE,
    "ModelPackageComponentContext": _PACKAGE,
    "ModelPackageContext": _PACKAGE,
    "ModelPackageOptions": _PACKAGE,
    "ModelPackageWriteMode": _PACKAGE,
    "NodeArg": "provided: ortweb.NodeArg",
    "OrtAllocatorType": _ALLOC,
    "OrtArenaCfg": _ALLOC,
    "OrtCompileApiFlags": _COMPILE,
    "OrtDevice": ("refused: ortweb names devices with strings: device_type 'cpu' or 'webgpu' "
                  "in OrtValue and IOBinding"),
    "OrtDeviceMemoryType": _ALLOC,
    "OrtDeviceVendorId": _EP_DEVICES,
    "OrtEpAssignedNode": _EP_DEVICES,
    "OrtEpAssignedSubgraph": _EP_DEVICES,
    "OrtEpContextData": _COMPILE,
    "OrtEpContextDataBuffer": _COMPILE,
    "OrtEpDevice": _EP_DEVICES,
    "OrtExecutionProviderDevicePolicy": _EP_DEVICES,
    "OrtExternalInitializerInfo": ("refused: onnxruntime-web takes external data as files in "
                                   "its session options, not initializer objects"),
    "OrtHardwareDevice": _EP_DEVICES,
    "OrtHardwareDeviceType": _EP_DEVICES,
    "OrtMemType": _ALLOC,
    "OrtMemoryInfo": _ALLOC,
    "OrtMemoryInfoDeviceType": _ALLOC,
    "OrtSparseFormat": _SPARSE,
    "OrtSyncStream": _STREAMS,
    "OrtValue": "provided: ortweb.OrtValue",
    "RunOptions": "provided",
    "SessionIOBinding": "provided: the same class as IOBinding",
    "SessionOptions": "provided",
    "SparseTensor": _SPARSE,
    "capi": "provided: onnxruntime_pybind11_state, _pybind_state, onnxruntime_inference_collection",
    "contextlib": _OWN_FILE,
    "copy_tensors": _STREAMS,
    "create_and_register_allocator": _ALLOC,
    "create_and_register_allocator_v2": _ALLOC,
    "cuda_version": "provided: '' (no CUDA in a browser)",
    "disable_telemetry_events": "no effect: onnxruntime-web sends no telemetry",
    "enable_telemetry_events": "no effect: onnxruntime-web sends no telemetry",
    "get_all_providers": "provided",
    "get_available_providers": ("provided: ['WebGpuExecutionProvider', 'CPUExecutionProvider'] "
                                "with a WebGPU adapter, else ['CPUExecutionProvider']"),
    "get_build_info": "provided",
    "get_device": ("provided: 'CPU', as native's CPU package says; native code that sees 'GPU' "
                   "asks for CUDA, which a browser cannot have (WebGPU runs when providers name "
                   "it, or by ortweb's default rule)"),
    "get_ep_devices": "no effect: returns [] (onnxruntime-web has no plugin EP devices)",
    "get_version_string": "provided: the onnxruntime-web version",
    "has_collective_ops": "provided: False",
    "import_capi_exception": "provided: None",
    "onnxruntime_validation": "absent: native onnxruntime's install-time platform checks",
    "package_name": "provided: 'onnxruntime'",
    "preload_dlls": "no effect: a browser has no DLLs to load",
    "print_debug_info": "provided",
    "register_execution_provider_library": _NATIVE_LIB,
    "set_default_logger_callback": ("refused: onnxruntime-web logs to the browser console and "
                                    "takes no log callback"),
    "set_default_logger_severity": "provided: the default of SessionOptions.log_severity_level",
    "set_default_logger_verbosity": "provided: the default of SessionOptions.log_verbosity_level",
    "set_global_thread_pool_sizes": _THREADS,
    "set_seed": "no effect: onnxruntime-web cannot seed its random operators",
    "unregister_execution_provider_library": _NATIVE_LIB,
    "version": "provided: the onnxruntime-web version",
    # -- InferenceSession ----------------------------------------------------------------
    "InferenceSession.create_ortvalue_from_shape_and_type": "provided",
    "InferenceSession.disable_fallback": ("provided: later set_providers calls no longer add "
                                          "CPUExecutionProvider after the providers named"),
    "InferenceSession.enable_fallback": "provided",
    "InferenceSession.end_profiling": ("provided: returns '' (no profile file: see "
                                       "enable_profiling)"),
    "InferenceSession.get_input_epdevices": _EP_DEVICES,
    "InferenceSession.get_input_memory_infos": _ALLOC,
    "InferenceSession.get_inputs": "provided",
    "InferenceSession.get_modelmeta": "provided",
    "InferenceSession.get_output_memory_infos": _ALLOC,
    "InferenceSession.get_outputs": "provided",
    "InferenceSession.get_overridable_initializers": "provided",
    "InferenceSession.get_profiling_start_time_ns": "provided: 0 (no profiling)",
    "InferenceSession.get_provider_graph_assignment_info": (
        "refused: ortweb reports node placement in ortweb_session.provider_report"),
    "InferenceSession.get_provider_options": "provided",
    "InferenceSession.get_providers": "provided",
    "InferenceSession.get_session_options": "provided",
    "InferenceSession.get_tuning_results": "no effect: returns [] (onnxruntime-web has no tuning)",
    "InferenceSession.io_binding": "provided",
    "InferenceSession.release_captured_graph": ("refused: ortweb does not expose onnxruntime-web's "
                                                "graph capture"),
    "InferenceSession.run": "provided",
    "InferenceSession.run_async": ("provided: the callback is called from the page's event loop "
                                   "once the run settles (no threads)"),
    "InferenceSession.run_with_iobinding": "provided",
    "InferenceSession.run_with_ort_values": "provided",
    "InferenceSession.run_with_ortvaluevector": ("refused: an internal helper of native's "
                                                 "IOBinding; use run_with_ort_values"),
    "InferenceSession.set_ep_dynamic_options": _NO_OPTION.replace("no effect", "refused"),
    "InferenceSession.set_providers": "provided",
    "InferenceSession.set_tuning_results": "no effect: onnxruntime-web has no tuning",
    # -- SessionOptions ------------------------------------------------------------------
    "SessionOptions.add_external_initializers": ("refused: onnxruntime-web takes no initializer "
                                                 "values from Python"),
    "SessionOptions.add_external_initializers_from_files_in_memory": (
        "provided: the files go to ortweb's external_data (an InferenceSession's own "
        "external_data= wins for a name in both)"),
    "SessionOptions.add_free_dimension_override_by_denotation": (
        "refused: onnxruntime-web overrides free dimensions by name only"),
    "SessionOptions.add_free_dimension_override_by_name": "provided",
    "SessionOptions.add_initializer": ("refused: onnxruntime-web takes no initializer values "
                                       "from Python"),
    "SessionOptions.add_provider": ("provided: used by an InferenceSession created without "
                                    "providers"),
    "SessionOptions.add_provider_for_devices": _EP_DEVICES,
    "SessionOptions.add_session_config_entry": ("provided: passed to onnxruntime-web as session "
                                                "config entries (its `extra`)"),
    "SessionOptions.clear_ep_context_data_read_func": _COMPILE,
    "SessionOptions.enable_cpu_mem_arena": "provided: default False, onnxruntime-web's",
    "SessionOptions.enable_mem_pattern": "provided: default False, onnxruntime-web's",
    "SessionOptions.enable_mem_reuse": _NO_OPTION,
    "SessionOptions.enable_profiling": _PROFILING,
    "SessionOptions.execution_mode": "provided",
    "SessionOptions.execution_order": _NO_OPTION,
    "SessionOptions.get_session_config_entry": "provided",
    "SessionOptions.graph_optimization_level": "provided",
    "SessionOptions.has_providers": "provided",
    "SessionOptions.inter_op_num_threads": _THREADS,
    "SessionOptions.intra_op_num_threads": ("provided: onnxruntime-web's thread count for the page "
                                            "(ortweb.set_num_threads)"),
    "SessionOptions.log_severity_level": "provided",
    "SessionOptions.log_verbosity_level": "provided",
    "SessionOptions.logid": "provided",
    "SessionOptions.optimized_model_filepath": _PROFILING.replace("profiles", "the model"),
    "SessionOptions.profile_file_prefix": _PROFILING,
    "SessionOptions.register_custom_ops_library": _NATIVE_LIB,
    "SessionOptions.set_ep_context_data_read_func": _COMPILE,
    "SessionOptions.set_load_cancellation_flag": ("no effect: onnxruntime-web cannot cancel a "
                                                  "model load"),
    "SessionOptions.set_provider_selection_policy": _EP_DEVICES,
    "SessionOptions.set_provider_selection_policy_delegate": _EP_DEVICES,
    "SessionOptions.use_deterministic_compute": _NO_OPTION,
    "SessionOptions.use_per_session_threads": _THREADS,
    # -- RunOptions ----------------------------------------------------------------------
    "RunOptions.add_active_adapter": _LORA,
    "RunOptions.add_run_config_entry": ("provided: passed to onnxruntime-web as run config "
                                        "entries (its `extra`)"),
    "RunOptions.get_run_config_entry": "provided",
    "RunOptions.log_severity_level": "provided",
    "RunOptions.log_verbosity_level": "provided",
    "RunOptions.logid": "provided: onnxruntime-web's run tag",
    "RunOptions.only_execute_path_to_fetches": _NO_OPTION,
    "RunOptions.terminate": ("provided: a run started with terminate=True raises Fail; a run "
                             "already in onnxruntime-web cannot be stopped"),
    # -- OrtValue ------------------------------------------------------------------------
    "OrtValue.as_sparse_tensor": _SPARSE.replace("refused", "absent"),
    "OrtValue.data_ptr": ("absent: a pointer into onnxruntime-web's wasm heap or a GPU buffer "
                          "means nothing to Python; use numpy() or gpu_buffer"),
    "OrtValue.data_type": "provided",
    "OrtValue.device_name": "provided: 'cpu' or 'webgpu'",
    "OrtValue.element_type": "provided",
    "OrtValue.from_dlpack": "absent: Pyodide's numpy has no device memory to share through DLPack",
    "OrtValue.has_value": "provided",
    "OrtValue.is_sparse_tensor": "provided: False",
    "OrtValue.is_tensor": "provided",
    "OrtValue.is_tensor_sequence": "provided: False (onnxruntime-web feeds tensors only)",
    "OrtValue.numpy": "provided",
    "OrtValue.ort_value_from_sparse_tensor": _SPARSE.replace("refused", "absent"),
    "OrtValue.ortvalue_from_numpy": "provided: device_type 'cpu' or 'webgpu'",
    "OrtValue.ortvalue_from_numpy_with_onnx_type": "provided",
    "OrtValue.ortvalue_from_shape_and_type": "provided: device_type 'cpu' or 'webgpu'",
    "OrtValue.shape": "provided",
    "OrtValue.tensor_size_in_bytes": "provided",
    "OrtValue.update_inplace": "provided: CPU values",
    # -- IOBinding -----------------------------------------------------------------------
    "IOBinding.bind_cpu_input": "provided",
    "IOBinding.bind_input": "provided: device_type 'cpu' (numpy array) or 'webgpu' (GPUBuffer)",
    "IOBinding.bind_ortvalue_input": "provided",
    "IOBinding.bind_ortvalue_output": "provided",
    "IOBinding.bind_output": "provided",
    "IOBinding.clear_binding_inputs": "provided",
    "IOBinding.clear_binding_outputs": "provided",
    "IOBinding.copy_outputs_to_cpu": "provided",
    "IOBinding.get_outputs": "provided",
    "IOBinding.get_outputs_as_ortvaluevector": "provided: a list of OrtValue",
    "IOBinding.synchronize_inputs": "provided",
    "IOBinding.synchronize_outputs": "provided",
    # -- NodeArg, ModelMetadata, enums ---------------------------------------------------
    "NodeArg.name": "provided",
    "NodeArg.shape": "provided",
    "NodeArg.type": "provided",
    "ModelMetadata.custom_metadata_map": "provided",
    "ModelMetadata.description": "provided",
    "ModelMetadata.domain": "provided",
    "ModelMetadata.graph_description": "provided",
    "ModelMetadata.graph_name": "provided",
    "ModelMetadata.producer_name": "provided",
    "ModelMetadata.version": "provided",
    "GraphOptimizationLevel.ORT_DISABLE_ALL": "provided",
    "GraphOptimizationLevel.ORT_ENABLE_BASIC": "provided",
    "GraphOptimizationLevel.ORT_ENABLE_EXTENDED": "provided",
    "GraphOptimizationLevel.ORT_ENABLE_LAYOUT": "provided",
    "GraphOptimizationLevel.ORT_ENABLE_ALL": "provided",
    "GraphOptimizationLevel.name": "provided",
    "GraphOptimizationLevel.value": "provided",
    "ExecutionMode.ORT_SEQUENTIAL": "provided",
    "ExecutionMode.ORT_PARALLEL": "provided",
    "ExecutionMode.name": "provided",
    "ExecutionMode.value": "provided",
    "ExecutionOrder.DEFAULT": "provided",
    "ExecutionOrder.PRIORITY_BASED": "provided",
    "ExecutionOrder.MEMORY_EFFICIENT": "provided",
    "ExecutionOrder.name": "provided",
    "ExecutionOrder.value": "provided",
}

TABLE.update({
    f"capi.onnxruntime_pybind11_state.{name}": f"provided: ortweb.errors.{target}"
    for name, target in EXCEPTIONS.items()
})


def status(name: str) -> tuple[str, str]:
    """``(status, note)`` of a table entry, e.g. ``('refused', 'onnxruntime-web has ...')``."""
    value = TABLE[name]
    head, _, note = value.partition(": ")
    if head not in STATUSES:
        raise ValueError(f"{name}: table value {value!r} starts with none of {STATUSES}")
    return head, note


def _scope(name: str) -> str:
    if name.startswith("capi."):
        return name.rsplit(".", 1)[0]
    return name.split(".")[0] if "." in name else ""


def render_markdown() -> str:
    """The docs' compatibility table: per scope, what is provided, then every name
    that is not (plainly) provided with its reason."""
    scopes: dict[str, list[str]] = {}
    for name in TABLE:
        scopes.setdefault(_scope(name), []).append(name)
    lines = ["| Name | In the browser |", "|---|---|"]
    for scope in sorted(scopes, key=lambda s: (s != "", s.startswith("capi."), s)):
        names = sorted(scopes[scope], key=str.lower)
        plain = [n for n in names if TABLE[n] == "provided"]
        title = f"`onnxruntime.{scope}`" if scope else "`onnxruntime`"
        if plain:
            short = ", ".join(f"`{n.rsplit('.', 1)[-1]}`" for n in plain)
            lines.append(f"| {title} | provided: {short} |")
        for n in names:
            if n in plain:
                continue
            state, note = status(n)
            label = n if not scope else f"{scope.rsplit('.', 1)[-1]}.{n.rsplit('.', 1)[-1]}"
            lines.append(f"| `{label}` | **{state}**: {note.replace('|', '/')} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(render_markdown(), end="")
