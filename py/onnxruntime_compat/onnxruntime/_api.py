"""The drop-in's implementation: onnxruntime's classes and functions on top of ortweb.

Everything runs through ortweb (one async implementation; the sync calls are
ortweb's sync API). What a browser cannot honour is decided in
:mod:`onnxruntime._compat_table`, and refusals raise the reason written there.
"""

from __future__ import annotations

import asyncio
import copy
import os
import warnings
from collections.abc import Callable, Sequence
from enum import IntEnum
from typing import Any, NoReturn

import ortweb
from ortweb import errors as _errors

from ._compat_table import TABLE, status
from ._version import __version__

__all__ = [
    "ALL_PROVIDERS",
    "ExecutionOrder",
    "IOBinding",
    "InferenceSession",
    "RunOptions",
    "SessionOptions",
    "refused",
    "refused_class",
]

#: onnxruntime-web's version, the one this package runs on (and its own version).
ORT_WEB_VERSION = __version__

#: Native onnxruntime 1.32's ``get_all_providers()``, in its order.
ALL_PROVIDERS = [
    "TensorrtExecutionProvider", "CUDAExecutionProvider", "MIGraphXExecutionProvider",
    "OpenVINOExecutionProvider", "DnnlExecutionProvider", "VitisAIExecutionProvider",
    "QNNExecutionProvider", "NnapiExecutionProvider", "VSINPUExecutionProvider",
    "JsExecutionProvider", "CoreMLExecutionProvider", "DmlExecutionProvider",
    "RknpuExecutionProvider", "WebNNExecutionProvider", "WebGpuExecutionProvider",
    "XnnpackExecutionProvider", "CANNExecutionProvider", "AzureExecutionProvider",
    "CPUExecutionProvider",
]

#: onnxruntime's provider names → ortweb's (the providers a browser can have).
_TO_ORTWEB = {
    "WebGpuExecutionProvider": "webgpu",
    "JsExecutionProvider": "webgpu",
    "CPUExecutionProvider": "wasm",
    "webgpu": "webgpu",
    "wasm": "wasm",
    # ortweb's other engines, in onnxruntime's style (no native onnxruntime has them).
    "TractExecutionProvider": "tract",
    "WonnxExecutionProvider": "wonnx",
    "tract": "tract",
    "wonnx": "wonnx",
}
_TO_NATIVE = {"webgpu": "WebGpuExecutionProvider", "wasm": "CPUExecutionProvider",
              "tract": "TractExecutionProvider", "wonnx": "WonnxExecutionProvider"}

# set_default_logger_severity / _verbosity: the levels of options left at -1 / 0.
_LOGGING = {"severity": 2, "verbosity": 0}


# -- refusals, read from the table ------------------------------------------------------


def refused(name: str) -> Callable[..., NoReturn]:
    """A callable that raises ``NotImplemented`` with the table's reason for ``name``."""
    state, note = status(name)
    if state != "refused":
        raise ValueError(f"{name} is {state!r} in the compatibility table, not 'refused'")

    def refuse(*args: Any, **kwargs: Any) -> NoReturn:
        raise _errors.NotImplementedByRuntime(
            f"onnxruntime.{name} is not available in the browser: {note}"
        )

    refuse.__name__ = refuse.__qualname__ = name.rsplit(".", 1)[-1]
    refuse.__doc__ = f"Not available in the browser: {note}."
    return refuse


def refused_class(name: str) -> type:
    """A class whose constructor raises the table's reason for ``name``."""
    init = refused(name)
    return type(name, (), {"__init__": init, "__doc__": init.__doc__, "__module__": "onnxruntime"})


def _install_refusals(cls: type, prefix: str) -> None:
    for key in TABLE:
        if key.startswith(prefix + ".") and status(key)[0] == "refused":
            setattr(cls, key[len(prefix) + 1:], refused(key))


# -- enums and options --------------------------------------------------------------------


class ExecutionOrder(IntEnum):
    """onnxruntime's node execution orders (onnxruntime-web has no such option)."""

    DEFAULT = 0
    PRIORITY_BASED = 1
    MEMORY_EFFICIENT = 2


def _log_level(name: str, value: Any, low: int, high: int | None) -> int:
    if (not isinstance(value, int) or isinstance(value, bool) or value < low
            or (high is not None and value > high)):
        wanted = f"an int from {low} to {high}" if high is not None else f"an int >= {low}"
        raise _errors.InvalidArgument(f"{name}: expected {wanted}, got {value!r}")
    return value


def set_default_logger_severity(severity: int) -> None:
    """The log severity of sessions and runs whose options say -1 (0 verbose … 4 fatal)."""
    _LOGGING["severity"] = _log_level("severity", severity, 0, 4)


def set_default_logger_verbosity(verbosity: int) -> None:
    """The log verbosity of sessions and runs whose options leave it at 0."""
    _LOGGING["verbosity"] = _log_level("verbosity", verbosity, 0, None)


def _config_entry(kind: str, key: Any, value: Any) -> tuple[str, str]:
    if not isinstance(key, str) or not key:
        raise _errors.InvalidArgument(f"{kind} config key: expected a non-empty str, got {key!r}")
    if not isinstance(value, str):
        raise _errors.InvalidArgument(
            f"{kind} config value of {key!r}: expected a str, got {type(value).__name__}"
        )
    return key, value


def _effective(options: Any) -> Any:
    """A copy whose -1 / 0 log levels are the defaults set with set_default_logger_*."""
    effective = copy.copy(options)
    if options.log_severity_level == -1:
        effective.log_severity_level = _LOGGING["severity"]
    if options.log_verbosity_level == 0:
        effective.log_verbosity_level = _LOGGING["verbosity"]
    return effective


class SessionOptions(ortweb.SessionOptions):
    """onnxruntime's ``SessionOptions``: every native attribute, settable.

    Those onnxruntime-web honours go to it (see ``ortweb.SessionOptions``), session
    config entries included; the others are kept and listed as without effect in
    the compatibility table. ``log_severity_level`` is -1 as in native: the level
    of :func:`set_default_logger_severity`. ``enable_mem_pattern`` and
    ``enable_cpu_mem_arena`` default to onnxruntime-web's False.
    """

    def __init__(self) -> None:
        super().__init__()
        self.log_severity_level = -1
        self.enable_mem_reuse = True
        self.enable_profiling = False
        self.execution_order = ExecutionOrder.DEFAULT
        self.inter_op_num_threads = 0
        self.logid = ""
        self.optimized_model_filepath = ""
        self.profile_file_prefix = "onnxruntime_profile_"
        self.use_deterministic_compute = False
        self.use_per_session_threads = True
        self._config: dict[str, str] = {}
        self._providers: list[tuple[str, dict[str, str]]] = []
        self._external_files: dict[str, memoryview] = {}

    def add_session_config_entry(self, config_key: str, config_value: str) -> None:
        """Set a session config entry (``'session.xxx'``), passed to onnxruntime-web."""
        key, value = _config_entry("session", config_key, config_value)
        self._config[key] = value

    def get_session_config_entry(self, config_key: str) -> str:
        """A config entry set before; a missing key raises as native does."""
        if config_key not in self._config:
            raise _errors.OrtRuntimeError(
                f"SessionOptions does not have configuration with key: {config_key}"
            )
        return self._config[config_key]

    def add_provider(self, provider_name: str, provider_options: dict[str, Any]) -> None:
        """A provider for sessions created with ``providers=None``, in the order added."""
        if not isinstance(provider_options, dict):
            raise _errors.InvalidArgument(
                f"provider_options: expected a dict, got {type(provider_options).__name__}"
            )
        self._providers.append((str(provider_name), dict(provider_options)))

    def has_providers(self) -> bool:
        return bool(self._providers)

    def add_external_initializers_from_files_in_memory(
        self, names: Sequence[str], buffers: Sequence[Any], lengths: Sequence[int]
    ) -> None:
        """External data files from memory, as native: each name (a ``location`` the
        model's tensors give) → the first ``length`` bytes of its buffer. Sessions
        created with these options get them as ortweb's ``external_data``."""
        if not len(names) == len(buffers) == len(lengths):
            raise _errors.InvalidArgument(
                "add_external_initializers_from_files_in_memory: names, buffers and lengths "
                f"must be as long as each other, got {len(names)}, {len(buffers)} and "
                f"{len(lengths)}"
            )
        for name, buffer, length in zip(names, buffers, lengths, strict=True):
            view = memoryview(buffer).cast("B")
            if not 0 <= int(length) <= view.nbytes:
                raise _errors.InvalidArgument(
                    f"add_external_initializers_from_files_in_memory: file {name!r} has a "
                    f"buffer of {view.nbytes} bytes and a length of {length}"
                )
            self._external_files[str(name)] = view[: int(length)]

    def set_load_cancellation_flag(self, value: bool) -> None:
        """Accepted without effect: onnxruntime-web cannot cancel a model load."""

    def to_ort(self) -> dict[str, Any]:
        options = ortweb.SessionOptions.to_ort(_effective(self))
        if self.logid:
            options["logId"] = str(self.logid)
        if self._config:
            # ORT-web hands `extra` to onnxruntime as session config entries.
            options["extra"] = dict(self._config)
        return options


class RunOptions(ortweb.RunOptions):
    """onnxruntime's ``RunOptions``: ``logid`` is onnxruntime-web's run tag, config
    entries go to onnxruntime-web, ``terminate`` stops a run before it starts."""

    def __init__(self) -> None:
        super().__init__()
        self.log_severity_level = -1
        self.logid = ""
        self.only_execute_path_to_fetches = False
        self.terminate = False
        self._config: dict[str, str] = {}

    def add_run_config_entry(self, config_key: str, config_value: str) -> None:
        key, value = _config_entry("run", config_key, config_value)
        self._config[key] = value

    def get_run_config_entry(self, config_key: str) -> str:
        if config_key not in self._config:
            raise _errors.OrtRuntimeError(
                f"RunOptions does not have configuration with key: {config_key}"
            )
        return self._config[config_key]

    def to_ort(self) -> dict[str, Any]:
        effective = _effective(self)
        effective.tag = self.logid or self.tag
        options = ortweb.RunOptions.to_ort(effective)
        if self._config:
            options["extra"] = dict(self._config)
        return options


_install_refusals(SessionOptions, "SessionOptions")
_install_refusals(RunOptions, "RunOptions")


# -- providers ------------------------------------------------------------------------------


def get_available_providers() -> list[str]:
    """``['WebGpuExecutionProvider', 'CPUExecutionProvider']`` when the page has a
    WebGPU adapter, else ``['CPUExecutionProvider']``: onnxruntime-web's, with the CPU
    last as native lists it (code passes this list as ``providers``). ortweb's other
    engines run when named (``'TractExecutionProvider'``, ``'WonnxExecutionProvider'``);
    ``ortweb.get_available_providers()`` lists them too."""
    return [_TO_NATIVE[p] for p in ortweb.get_available_providers() if p in ("webgpu", "wasm")]


def get_all_providers() -> list[str]:
    """Every provider onnxruntime knows (native 1.32's list)."""
    return list(ALL_PROVIDERS)


def _browser_providers(
    providers: Any, provider_options: Any, fallback: bool
) -> tuple[list[tuple[str, dict[str, Any]]] | None, dict[str, str]]:
    """onnxruntime's ``providers``/``provider_options`` → ortweb's list, and the skipped.

    Checked as native's ``check_and_normalize_provider_args``; a provider a browser
    cannot have is skipped with native's warning plus why, and CPU is appended
    (onnxruntime falls back to it) unless fallback was disabled.
    """
    if providers is None or (isinstance(providers, list | tuple) and not providers):
        if provider_options:
            raise _errors.InvalidArgument(
                "provider_options: given without providers; pass one options dict per "
                "entry of providers"
            )
        return None, {}
    if not isinstance(providers, Sequence) or isinstance(providers, str):
        raise _errors.InvalidArgument(
            f"providers: expected a sequence of names or (name, options) tuples, got {providers!r}"
        )
    pairs: list[tuple[str, dict[str, Any]]] = []
    if provider_options is not None:
        if not isinstance(provider_options, Sequence) or len(provider_options) != len(providers):
            raise _errors.InvalidArgument(
                "'providers' and 'provider_options' should be the same length if both are "
                f"given: got {len(providers)} providers and provider_options={provider_options!r}"
            )
        if not all(isinstance(p, str) for p in providers):
            raise _errors.InvalidArgument(
                "Only string values for 'providers' are supported if 'provider_options' is given."
            )
        if not all(isinstance(o, dict) for o in provider_options):
            raise _errors.InvalidArgument("'provider_options' values must be dicts.")
        pairs = list(zip(providers, provider_options, strict=True))
    else:
        for p in providers:
            if isinstance(p, str):
                pairs.append((p, {}))
            elif isinstance(p, tuple) and len(p) == 2 and isinstance(p[0], str) and (
                isinstance(p[1], dict)
            ):
                pairs.append((p[0], p[1]))
            else:
                raise _errors.InvalidArgument(
                    "'providers' values must be either strings or (string, dict) tuples, "
                    f"got {p!r}"
                )
    kept: list[tuple[str, dict[str, Any]]] = []
    skipped: dict[str, str] = {}
    seen: set[str] = set()
    for name, options in pairs:
        if name in seen:
            warnings.warn(f"Duplicate provider '{name}' encountered, ignoring.", stacklevel=4)
            continue
        seen.add(name)
        if name in _TO_ORTWEB:
            kept.append((name, options))
            continue
        why = ("onnxruntime does not know it" if name not in ALL_PROVIDERS
               else "a browser cannot run it (ortweb runs onnxruntime-web's WebGPU and wasm "
                    "execution providers, and TractExecutionProvider and "
                    "WonnxExecutionProvider)")
        skipped[name] = f"not available in the browser: {why}"
        warnings.warn(
            f"Specified provider '{name}' is not in available provider names.Available "
            f"providers: '{', '.join(get_available_providers())}' ({why}); it is skipped",
            UserWarning, stacklevel=4,
        )
    if fallback and not any(_TO_ORTWEB[n] == "wasm" for n, _ in kept):
        kept.append(("CPUExecutionProvider", {}))
    if not kept:
        raise _errors.ProviderUnavailable(
            f"none of the providers {[n for n, _ in pairs]} can run in the browser and "
            "fallback is disabled", reasons=skipped,
        )
    return kept, skipped


# -- sessions ---------------------------------------------------------------------------------


def _terminate_check(run_options: Any) -> Any:
    if isinstance(run_options, RunOptions) and run_options.terminate:
        # Native checks the flag as the run starts; a run already inside
        # onnxruntime-web cannot be interrupted.
        raise _errors.OrtRuntimeError("Exiting due to terminate flag being set to true.", code=1)
    return run_options


#: Keywords of ``ortweb.InferenceSession`` the drop-in passes on.
_ORTWEB_KEYWORDS = ("preferred_output_location", "external_data", "progress", "cache")


class InferenceSession:
    """onnxruntime's ``InferenceSession``, running an ``ortweb.InferenceSession``.

    Parameters
    ----------
    path_or_bytes : str, os.PathLike or bytes
        A path in Pyodide's file system, an ``http(s)`` URL, or the model's bytes.
    sess_options : SessionOptions, optional
    providers : list of str or (str, dict), optional
        onnxruntime's names: ``'WebGpuExecutionProvider'`` (WebGPU) and
        ``'CPUExecutionProvider'`` (wasm) run; others are skipped with a warning, as
        native skips an unavailable provider, and ``CPUExecutionProvider`` is tried
        last (native's fallback). None: ortweb's default rule (WebGPU when the page
        can run the model on it, else wasm).
    provider_options : list of dict, optional
        One dict per provider; options onnxruntime-web does not understand are
        dropped with a warning naming them.
    **kwargs
        ``preferred_output_location``, ``external_data`` (a model's external data
        files as ``{location: bytes or URL}``), ``progress`` and ``cache``: ortweb's,
        passed to ``ortweb.InferenceSession``; anything else (native's
        ``disabled_optimizers``, ...) is ignored with a warning naming it.
    """

    def __init__(
        self,
        path_or_bytes: str | bytes | os.PathLike[str],
        sess_options: ortweb.SessionOptions | None = None,
        providers: Sequence[str | tuple[str, dict[Any, Any]]] | None = None,
        provider_options: Sequence[dict[Any, Any]] | None = None,
        **kwargs: Any,
    ) -> None:
        self._source = path_or_bytes
        self._options = sess_options if sess_options is not None else SessionOptions()
        self._extra = {k: kwargs.pop(k) for k in _ORTWEB_KEYWORDS if k in kwargs}
        in_memory = getattr(self._options, "_external_files", None)
        if in_memory:
            self._extra["external_data"] = {**in_memory, **(self._extra.get("external_data") or {})}
        if kwargs:
            warnings.warn(
                f"InferenceSession: arguments {sorted(kwargs)} have no effect in the browser "
                "(onnxruntime-web has no such options); they are ignored",
                UserWarning, stacklevel=2,
            )
        self._fallback = True
        self._tasks: set[asyncio.Future[None]] = set()
        if providers is None and isinstance(self._options, SessionOptions):
            if self._options.has_providers():
                providers = list(self._options._providers)
        self._sess = self._open(providers, provider_options)

    def _open(self, providers: Any, provider_options: Any) -> ortweb.InferenceSession:
        listed, skipped = _browser_providers(providers, provider_options, self._fallback)
        sess = ortweb.InferenceSession(
            self._source, self._options, providers=listed, **self._extra
        )
        for name, reason in skipped.items():
            sess.provider_report.attempts.append(ortweb.ProviderAttempt(name, "skipped", reason))
        if listed and _TO_ORTWEB[listed[0][0]] != sess.provider:
            first = listed[0][0]
            why = sess.skipped_providers.get(_TO_ORTWEB[first], "")
            warnings.warn(
                f"{first} could not be used ({why}); falling back to "
                f"{_TO_NATIVE[sess.provider]}", UserWarning, stacklevel=3,
            )
        return sess

    @property
    def ortweb_session(self) -> ortweb.InferenceSession:
        """The ``ortweb.InferenceSession`` underneath (``provider_report``, async API)."""
        return self._sess

    # -- metadata -------------------------------------------------------------------

    def get_inputs(self) -> list[ortweb.NodeArg]:
        return self._sess.get_inputs()

    def get_outputs(self) -> list[ortweb.NodeArg]:
        return self._sess.get_outputs()

    def get_overridable_initializers(self) -> list[ortweb.NodeArg]:
        return self._sess.get_overridable_initializers()

    def get_modelmeta(self) -> ortweb.ModelMetadata:
        return self._sess.get_modelmeta()

    def get_session_options(self) -> ortweb.SessionOptions:
        return self._options

    def get_providers(self) -> list[str]:
        """onnxruntime's names: ``['WebGpuExecutionProvider', 'CPUExecutionProvider']``
        or ``['CPUExecutionProvider']``."""
        return [_TO_NATIVE[p] for p in self._sess.get_providers()]

    def get_provider_options(self) -> dict[str, dict[str, str]]:
        """Provider → the options onnxruntime-web's EP was given, as strings (native's form)."""
        return {
            _TO_NATIVE[p]: {k: " ".join(v) if isinstance(v, list) else str(v)
                            for k, v in opts.items()}
            for p, opts in self._sess.get_provider_options().items()
        }

    def set_providers(
        self,
        providers: Sequence[str | tuple[str, dict[Any, Any]]] | None = None,
        provider_options: Sequence[dict[Any, Any]] | None = None,
    ) -> None:
        """Re-create the session on other providers (the model is read again)."""
        new = self._open(providers, provider_options)
        old, self._sess = self._sess, new
        old.close()

    def disable_fallback(self) -> None:
        """Later :meth:`set_providers` calls no longer add CPU after the providers named."""
        self._fallback = False

    def enable_fallback(self) -> None:
        self._fallback = True

    # -- running ---------------------------------------------------------------------

    def run(
        self, output_names: Sequence[str] | None, input_feed: dict[str, Any],
        run_options: ortweb.RunOptions | None = None,
    ) -> list[Any]:
        """Outputs as numpy arrays; feeds are numpy arrays, lists or OrtValues."""
        return self._sess.run(output_names, input_feed, _terminate_check(run_options))

    def run_with_ort_values(
        self, output_names: Sequence[str] | None, input_dict_ort_values: dict[str, Any],
        run_options: ortweb.RunOptions | None = None,
    ) -> list[ortweb.OrtValue]:
        """As :meth:`run`, with OrtValues out."""
        outputs = self.run(output_names, input_dict_ort_values, run_options)
        return [o if isinstance(o, ortweb.OrtValue) else ortweb.OrtValue.ortvalue_from_numpy(o)
                for o in outputs]

    def run_async(
        self, output_names: Sequence[str] | None, input_feed: dict[str, Any],
        callback: Callable[[Any, Any, str], Any], user_data: Any,
        run_options: ortweb.RunOptions | None = None,
    ) -> None:
        """Start a run; ``callback(outputs, user_data, err)`` is called when it settles.

        Native calls back from a thread; here the page's event loop calls it, so the
        caller must return to the event loop (``await`` something) for it to run.
        """
        _terminate_check(run_options)

        async def go() -> None:
            try:
                outputs = await self._sess.run_async(output_names, input_feed, run_options)
            except Exception as exc:
                callback(None, user_data, str(exc))
                return
            callback(outputs, user_data, "")

        task = asyncio.ensure_future(go())
        self._tasks.add(task)  # the loop keeps only weak references to tasks
        task.add_done_callback(self._tasks.discard)

    def io_binding(self) -> IOBinding:
        return IOBinding(self)

    def run_with_iobinding(
        self, iobinding: ortweb.IOBinding, run_options: ortweb.RunOptions | None = None
    ) -> None:
        self._sess.run_with_iobinding(iobinding, _terminate_check(run_options))

    def create_ortvalue_from_shape_and_type(
        self, shape: Sequence[int], element_type: Any, device_type: str = "cpu",
        device_id: int = 0, vendor_id: int = -1,
    ) -> ortweb.OrtValue:
        return ortweb.OrtValue.ortvalue_from_shape_and_type(shape, element_type, device_type)

    # -- profiling and tuning (nothing to report in a browser) ---------------------------

    def end_profiling(self) -> str:
        """``''``: no profile file, as native when profiling is off."""
        return ""

    def get_profiling_start_time_ns(self) -> int:
        return 0

    def get_tuning_results(self) -> list[Any]:
        return []

    def set_tuning_results(self, results: Any, error_on_invalid: bool = False) -> None:
        """Accepted without effect: onnxruntime-web has no kernel tuning."""

    def __repr__(self) -> str:
        return f"<onnxruntime (ortweb) InferenceSession providers={self.get_providers()}>"


_install_refusals(InferenceSession, "InferenceSession")


class IOBinding(ortweb.IOBinding):
    """onnxruntime's ``IOBinding`` (``sess.io_binding()`` or ``IOBinding(sess)``)."""

    def __init__(self, session: InferenceSession | ortweb.InferenceSession):
        inner = session.ortweb_session if isinstance(session, InferenceSession) else session
        super().__init__(inner)

    def get_outputs_as_ortvaluevector(self) -> list[ortweb.OrtValue]:
        return self.get_outputs()


# -- module functions -------------------------------------------------------------------------


def get_device() -> str:
    """``'CPU'``: see the compatibility table for why not ``'GPU'``."""
    return "CPU"


def get_version_string() -> str:
    return ORT_WEB_VERSION


def get_build_info() -> str:
    return (f"ORT Build Info: onnxruntime-web {ORT_WEB_VERSION} (WebAssembly, WebGPU) "
            f"through ortweb {ortweb.__version__} in Pyodide")


def has_collective_ops() -> bool:
    return False


def get_ep_devices() -> list[Any]:
    return []


def _no_effect(*args: Any, **kwargs: Any) -> None:
    return None


set_seed = enable_telemetry_events = disable_telemetry_events = preload_dlls = _no_effect
set_global_thread_pool_sizes = _no_effect


def print_debug_info() -> None:
    """Print what runs underneath (native prints its build and providers)."""
    print(f"onnxruntime (ortweb drop-in) {ORT_WEB_VERSION}")
    print(get_build_info())
    print("available providers:", get_available_providers())
