"""``InferenceSession``: onnxruntime's API, running in onnxruntime-web.

One async implementation (``create``, ``run_async``, ``close_async``); the
synchronous methods are the same coroutines driven by :func:`_bridge.block_on`.
"""

from __future__ import annotations

import os
import weakref
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlparse

import numpy as np

from . import _bridge, _dtypes
from ._auto import choose_provider
from ._convert import to_wire
from ._iobinding import IOBinding
from ._metadata import (
    ModelMetadata,
    NodeArg,
    model_metadata,
    node_args_from_bridge,
    node_args_from_model,
)
from ._onnxproto import parse_model
from ._options import RunOptions, SessionOptions
from ._ortvalue import OrtValue
from ._policy import Plan, ProviderPolicy, plan_providers
from ._providers import provider_options as ep_options
from ._report import ProviderAttempt, ProviderReport
from ._validate import FeedMemo, check_feeds, check_output_names
from .errors import (
    InvalidArgument,
    InvalidGraph,
    NoSuchFile,
    OrtWebError,
    ProviderUnavailable,
    SessionClosed,
)

__all__ = ["InferenceSession", "load_model_bytes"]

ModelSource = str | bytes | bytearray | memoryview | os.PathLike[str]

_URL_SCHEMES = {"http", "https", "blob", "data"}

#: Errors the bridge raises from its own checks, before ORT runs: they cannot
#: have left ORT in a bad state, so they never trigger a session re-creation.
_OWN_CHECKS = {"InvalidArgument", "SessionClosed", "ProviderUnavailable"}

_LOCATIONS = {"cpu": "cpu", "gpu-buffer": "gpu-buffer", "webgpu": "gpu-buffer", "gpu": "gpu-buffer"}

Location = str | dict[str, str] | None


def _location(name: str, value: Any) -> str:
    found = _LOCATIONS.get(value) if isinstance(value, str) else None
    if found is None:
        raise InvalidArgument(
            f"preferred_output_location{name}: expected 'cpu' or 'gpu-buffer', got {value!r}"
        )
    return found


def _normalize_locations(value: Location) -> str | dict[str, str] | None:
    if value is None:
        return None
    if isinstance(value, str):
        return _location("", value)
    if isinstance(value, dict):
        return {str(k): _location(f"[{k!r}]", v) for k, v in value.items()}
    raise InvalidArgument(
        "preferred_output_location: expected 'cpu', 'gpu-buffer' or a dict of output names "
        f"to those, got {type(value).__name__}"
    )


async def load_model_bytes(source: ModelSource) -> bytes:
    """Read a model from bytes, a path in Pyodide's file system, or a URL."""
    if isinstance(source, bytes | bytearray | memoryview):
        data = bytes(source)
        if not data:
            raise InvalidArgument("path_or_bytes: the model bytes are empty")
        return data
    if isinstance(source, os.PathLike):
        source = os.fspath(source)
    if not isinstance(source, str):
        raise InvalidArgument(
            "path_or_bytes: expected a file path, a URL or the model's bytes, "
            f"got {type(source).__name__}"
        )
    if urlparse(source).scheme in _URL_SCHEMES:
        return await _bridge.fetch_bytes(source)
    try:
        with open(source, "rb") as f:
            return f.read()
    except FileNotFoundError:
        raise NoSuchFile(
            f"model file {source!r} not found (working directory {os.getcwd()!r}); "
            "pass a path in Pyodide's file system, an http(s) URL or the model's bytes"
        ) from None
    except IsADirectoryError:
        raise NoSuchFile(f"model path {source!r} is a directory, not an .onnx file") from None


def _onnx_type(ort_type: Any) -> str:
    if ort_type is None:
        return "unknown"
    try:
        return _dtypes.by_ort(str(ort_type)).onnx
    except KeyError:
        return f"unknown({ort_type})"


def _make_report(
    plan: Plan, info: dict[str, Any], timings: dict[str, dict[str, float]], how: str | None
) -> ProviderReport:
    """Assemble the report from the plan and what the bridge did, in the plan's order."""
    tried = {str(s["provider"]): s for s in info.get("skipped", [])}
    used = str(info["provider"])
    attempts = []
    seen = []
    for provider in [*plan.candidates, *plan.excluded, *tried]:
        if provider in seen:
            continue
        seen.append(provider)
        if provider == used:
            attempts.append(ProviderAttempt(provider, "used"))
        elif provider in tried:
            entry = tried[provider]
            attempts.append(ProviderAttempt(provider, str(entry.get("kind", "skipped")),
                                            str(entry["reason"])))
        elif provider in plan.excluded:
            reason = plan.excluded[provider]
            status = "disallowed" if reason.startswith("disallowed") else "not tried"
            attempts.append(ProviderAttempt(provider, status, reason))
        else:
            attempts.append(ProviderAttempt(provider, "not needed", f"{used!r} came first"))
    placement = info.get("placement") or {}
    nodes = placement.get("nodes") or {}
    cpu = list(nodes.get("CPUExecutionProvider", []))
    gpu = [n for ep, listed in nodes.items() if ep != "CPUExecutionProvider" for n in listed]
    counts = {str(ep): int(n) for ep, n in (placement.get("counts") or {}).items()}
    return ProviderReport(used, str(info["build"]), plan.description, attempts, cpu, gpu,
                          counts, timings, how)


class InferenceSession:
    """A model loaded into onnxruntime-web, used as ``onnxruntime.InferenceSession``.

    Parameters
    ----------
    path_or_bytes : str, os.PathLike or bytes
        A path in Pyodide's file system, an ``http(s)`` URL, or the model's bytes.
    sess_options : SessionOptions, optional
    providers : list of str, optional
        Execution providers tried in order: ``'webgpu'``, ``'wasm'`` (onnxruntime's
        ``'WebGpuExecutionProvider'`` / ``'CPUExecutionProvider'`` are accepted).
        None: the page default (``ortweb.set_default_providers``), else
        ``['webgpu', 'wasm']``. An entry may be onnxruntime's ``(name, options)``.
    provider_options : list of dict, optional
        onnxruntime's other form: one options dict per entry of ``providers``.
        Options onnxruntime-web's EP understands (WebGPU: ``preferredLayout``,
        ``validationMode``, ``forceCpuNodeNames``, ``*BufferCacheMode``) go into its
        ``executionProviders`` entry; others are dropped with a ``UserWarning``.

    Notes
    -----
    The constructor blocks through JSPI; in async code prefer
    ``await InferenceSession.create(...)``.
    """

    _handle: int | None

    def __init__(
        self,
        path_or_bytes: ModelSource,
        sess_options: SessionOptions | None = None,
        providers: Sequence[Any] | str | ProviderPolicy | None = None,
        provider_options: Any = None,
        *,
        preferred_output_location: Location = None,
    ) -> None:
        self._handle = None
        _bridge.block_on(self._open(
            path_or_bytes, sess_options, providers, preferred_output_location, provider_options
        ))

    @classmethod
    async def create(
        cls,
        path_or_bytes: ModelSource,
        sess_options: SessionOptions | None = None,
        providers: Sequence[Any] | str | ProviderPolicy | None = None,
        provider_options: Any = None,
        *,
        preferred_output_location: Location = None,
    ) -> InferenceSession:
        """Asynchronous constructor: ``sess = await InferenceSession.create(...)``."""
        self = cls.__new__(cls)
        self._handle = None
        await self._open(
            path_or_bytes, sess_options, providers, preferred_output_location, provider_options
        )
        return self

    async def _open(
        self,
        path_or_bytes: ModelSource,
        sess_options: SessionOptions | None,
        providers: Sequence[Any] | str | ProviderPolicy | None,
        preferred_output_location: Location = None,
        provider_options: Any = None,
    ) -> None:
        _bridge.get_bridge()  # outside a page with the bridge, say so before anything else
        if sess_options is not None and not isinstance(sess_options, SessionOptions):
            raise InvalidArgument(
                f"sess_options: expected ortweb.SessionOptions, got {type(sess_options).__name__}"
            )
        self._options = sess_options or SessionOptions()
        plan = plan_providers(providers, _bridge.default_providers())
        self._ep_options = ep_options(providers, provider_options)
        self._locations = _normalize_locations(preferred_output_location)
        if self._options.intra_op_num_threads:
            from ._runtime import set_num_threads

            set_num_threads(self._options.intra_op_num_threads)
        self._model_bytes = await load_model_bytes(path_or_bytes)
        timings: dict[str, dict[str, float]] = {}
        how = None
        if plan.auto:
            info, timings, how = await choose_provider(
                self._model_bytes, plan.candidates, self._ort_options()
            )
        else:
            info = await self._create_planned(plan)
        self._adopt(int(info["handle"]))
        self._provider = str(info["provider"])
        self._build = str(info["build"])
        self._report = _make_report(plan, info, timings, how)
        self._describe(info)
        self._feed_memo = FeedMemo()
        if isinstance(self._locations, dict):
            unknown = sorted(set(self._locations) - {a.name for a in self._outputs})
            if unknown:
                await self.close_async()
                raise InvalidArgument(
                    f"preferred_output_location names unknown output(s) {unknown}; the model's "
                    f"outputs are {[a.name for a in self._outputs]}"
                )

    def _describe(self, info: dict[str, Any]) -> None:
        """Take inputs, outputs and metadata from the model's own bytes, as native
        onnxruntime shows them (ORT-web's ``inputMetadata`` turns a ``-1`` or unset
        dim into 4294967295 and a missing shape into rank 0)."""
        try:
            model = parse_model(self._model_bytes)
        except InvalidGraph:
            # ORT-web loaded bytes ortweb's small reader cannot: the runtime is the
            # authority on what loads, so describe the model with what it reports.
            model = None
        if model is None:
            self._inputs = node_args_from_bridge(
                [{**e, "type": _onnx_type(e["type"])} for e in info["inputs"]]
            )
            self._outputs = node_args_from_bridge(
                [{**e, "type": _onnx_type(e["type"])} for e in info["outputs"]]
            )
            self._overridable: list[NodeArg] = []
            self._meta: ModelMetadata | None = None
            return
        self._inputs, self._outputs, self._overridable = node_args_from_model(
            model, self._options.free_dimension_overrides
        )
        self._meta = model_metadata(model)

    async def _create_planned(self, plan: Plan) -> dict[str, Any]:
        try:
            return await _bridge.create_session(
                self._model_bytes, plan.candidates, self._ort_options()
            )
        except ProviderUnavailable as exc:
            reasons = {**plan.excluded, **exc.reasons}
            if plan.require is not None:
                why = reasons.get(plan.require, exc.message)
                raise ProviderUnavailable(
                    f"the provider policy requires {plan.require!r}, which cannot run here: "
                    f"{why}", reasons=reasons,
                ) from exc
            exc.reasons = reasons
            raise

    def _ort_options(self) -> dict[str, Any]:
        options = self._options.to_ort()
        if self._locations is not None:
            options["preferredOutputLocation"] = self._locations
        if self._ep_options:
            # Not an ORT-web session option: the bridge moves each provider's
            # options into its executionProviders entry.
            options["ortwebProviderOptions"] = self._ep_options
        return options

    def _adopt(self, handle: int) -> None:
        old = getattr(self, "_finalizer", None)
        if old is not None:
            old.detach()
        self._handle = handle
        # A session dropped without close() is released when it is collected.
        self._finalizer = weakref.finalize(self, _bridge.release_later, handle)

    def _wants_gpu(self, name: str) -> bool:
        loc = self._locations
        return (loc.get(name) if isinstance(loc, dict) else loc) == "gpu-buffer"

    def output_location(self, name: str) -> str:
        """Where output ``name`` is left by a run: ``'gpu-buffer'`` or ``'cpu'``.

        ``'gpu-buffer'`` only when the session was created with
        ``preferred_output_location`` asking for it *and* runs on WebGPU; a session
        that fell back to wasm returns CPU ``OrtValue``s for those outputs instead.
        """
        return "gpu-buffer" if self._provider == "webgpu" and self._wants_gpu(name) else "cpu"

    # -- metadata ---------------------------------------------------------------

    def get_inputs(self) -> list[NodeArg]:
        """The model's inputs (name, type, shape)."""
        return list(self._inputs)

    def get_outputs(self) -> list[NodeArg]:
        """The model's outputs (name, type, shape)."""
        return list(self._outputs)

    def get_overridable_initializers(self) -> list[NodeArg]:
        """Graph inputs that have an initializer (IR version 4 and later), as in
        onnxruntime. Unlike native, ortweb does not take them as feeds (they are
        unknown input names to ``run``): the model's initializer is always used."""
        return list(self._overridable)

    def get_modelmeta(self) -> ModelMetadata:
        """The model's metadata (producer, graph name, doc strings, version,
        ``metadata_props``), as onnxruntime's ``get_modelmeta()``.

        Raises
        ------
        InvalidGraph
            When ortweb could not read the model's bytes (onnxruntime-web loaded
            them, but does not report metadata).
        """
        if self._meta is None:
            raise InvalidGraph(
                "get_modelmeta: ortweb could not read this model's ModelProto, and "
                "onnxruntime-web does not report model metadata"
            )
        return self._meta

    def get_providers(self) -> list[str]:
        """Providers of this session: the one that runs it, then ``'wasm'``.

        ``'wasm'`` follows ``'webgpu'`` because ORT places nodes the WebGPU EP lacks
        on the CPU, as native onnxruntime lists ``CPUExecutionProvider`` last.
        """
        return [self._provider] if self._provider == "wasm" else [self._provider, "wasm"]

    def get_provider_options(self) -> dict[str, dict[str, Any]]:
        """Each provider of :meth:`get_providers` → the onnxruntime-web EP options it
        was given (``{}`` when none), as onnxruntime's ``get_provider_options()``."""
        return {p: dict(self._ep_options.get(p, {})) for p in self.get_providers()}

    @property
    def provider(self) -> str:
        """The execution provider that runs this session (``'webgpu'`` or ``'wasm'``)."""
        return self._provider

    @property
    def skipped_providers(self) -> dict[str, str]:
        """Providers not running this session, each with why (see :attr:`provider_report`)."""
        return self._report.reasons()

    @property
    def provider_report(self) -> ProviderReport:
        """Which provider runs, every provider considered and why, CPU-placed nodes,
        and ``"auto"`` timings; ``print()`` it."""
        return self._report

    def get_session_options(self) -> SessionOptions:
        return self._options

    # -- running ------------------------------------------------------------------

    def _check_open(self) -> int:
        if self._handle is None:
            raise SessionClosed("this InferenceSession was closed; create a new one")
        return self._handle

    async def run_async(
        self,
        output_names: Sequence[str] | None,
        input_feed: Any,
        run_options: RunOptions | None = None,
    ) -> list[Any]:
        """Run the model: ``await sess.run_async(None, {"x": array})``.

        Feeds are numpy arrays or :class:`OrtValue`s (a WebGPU value is fed without a
        copy through the CPU).

        Returns
        -------
        list of numpy.ndarray or OrtValue
            One per name in ``output_names`` (all outputs when None), in that order:
            numpy arrays, or OrtValues for outputs the session keeps on the GPU
            (``preferred_output_location``).
        """
        self._check_open()
        names = check_output_names(self._outputs, output_names)
        outputs = await self._execute(input_feed, tuple((n, None) for n in names), run_options)
        if self._locations is None:
            return outputs  # numpy arrays only: the common case, kept short
        results: list[Any] = []
        for name, out in zip(names, outputs, strict=True):
            if isinstance(out, _bridge.GpuOutput):
                results.append(OrtValue._from_output(out))
            elif self._wants_gpu(name):
                # Asked for the GPU but ran on wasm: same type back, on the CPU.
                results.append(OrtValue.ortvalue_from_numpy(out))
            else:
                results.append(out)
        return results

    async def _execute(
        self,
        input_feed: Any,
        fetches: Sequence[tuple[str, int | None]],
        run_options: RunOptions | None,
    ) -> list[np.ndarray | _bridge.GpuOutput]:
        """Validate, convert and run; re-create the session if ORT fails under IO binding."""
        handle = self._check_open()
        if run_options is not None and not isinstance(run_options, RunOptions):
            raise InvalidArgument(
                f"run_options: expected ortweb.RunOptions or None, got {type(run_options).__name__}"
            )
        feeds: list[_bridge.Feed] = []
        on_gpu = any(h is not None for _, h in fetches) or (
            self._locations is not None
            and any(self.output_location(n) == "gpu-buffer" for n, _ in fetches)
        )
        for arg, dtype, value in check_feeds(
            self._inputs, input_feed, self._feed_memo, self._overridable
        ):
            if isinstance(value, OrtValue) and value.handle is not None:
                feeds.append((arg.name, value.handle))
                on_gpu = True
            else:
                array = value.numpy() if isinstance(value, OrtValue) else value
                feeds.append((arg.name, to_wire(array, dtype)))
        options = None if run_options is None else run_options.to_ort()
        try:
            return await _bridge.run_session(handle, feeds, fetches, options)
        except OrtWebError as exc:
            if not on_gpu or exc.js_name in _OWN_CHECKS:
                raise
            # ORT-web keeps stale IO bindings after an error, so every later run on
            # this session would fail or hang: start afresh from the model bytes.
            await self._recreate()
            raise type(exc)(
                f"{exc.message} (ortweb re-created the session from its model bytes, "
                "so the next run works)", code=exc.code, js_name=exc.js_name,
            ) from exc

    async def _recreate(self) -> None:
        info = await _bridge.create_session(
            self._model_bytes, [self._provider], self._ort_options()
        )
        old = self._handle
        self._adopt(int(info["handle"]))
        if old is not None:
            # The new session exists before the old one goes, so a device ORT
            # shares between them is never released in between.
            _bridge.release_later(old)

    def io_binding(self) -> IOBinding:
        """A new :class:`IOBinding` for :meth:`run_with_iobinding`."""
        self._check_open()
        return IOBinding(self)

    async def run_with_iobinding_async(
        self, iobinding: IOBinding, run_options: RunOptions | None = None
    ) -> None:
        """Run with the inputs and outputs bound in ``iobinding``.

        Results are read with ``iobinding.get_outputs()`` (OrtValues, in the order the
        outputs were bound) or ``iobinding.copy_outputs_to_cpu()``.
        """
        if not isinstance(iobinding, IOBinding) or iobinding._session is not self:
            raise InvalidArgument("run_with_iobinding: expected an IOBinding of this session")
        bound = dict(iobinding._outputs)
        if not bound:
            raise InvalidArgument("run_with_iobinding: no output is bound; use bind_output()")
        fetches: list[tuple[str, int | None]] = []
        for name, target in bound.items():
            if isinstance(target, OrtValue):
                if target.is_disposed:
                    raise InvalidArgument(f"output {name!r}: the OrtValue bound was disposed")
                # A pre-allocated CPU output comes back all zeros from ORT-web
                # (upstream bug): let ORT allocate and copy into it afterwards.
                fetches.append((name, target.handle))
            else:
                fetches.append((name, None))
        outputs = await self._execute(iobinding._inputs, fetches, run_options)
        results: list[OrtValue] = []
        for (name, target), out in zip(bound.items(), outputs, strict=True):
            if isinstance(target, OrtValue):
                if target.handle is None:
                    self._copy_into(name, target, out)
                results.append(target)
            elif isinstance(out, _bridge.GpuOutput):
                if target == "cpu":
                    out = await _bridge.read_value(out.handle, True)
                    results.append(OrtValue.ortvalue_from_numpy(out))
                else:
                    results.append(OrtValue._from_output(out))
            else:
                results.append(OrtValue.ortvalue_from_numpy(out))
        iobinding._results = results

    @staticmethod
    def _copy_into(name: str, target: OrtValue, out: Any) -> None:
        array = target.numpy()
        if isinstance(out, _bridge.GpuOutput):
            raise InvalidArgument(f"output {name!r}: bound on the CPU but left on the GPU")
        if array.shape != out.shape:
            raise InvalidArgument(
                f"output {name!r}: the run produced shape {list(out.shape)}, the OrtValue "
                f"bound has {list(array.shape)}"
            )
        np.copyto(array, out)

    def run_with_iobinding(
        self, iobinding: IOBinding, run_options: RunOptions | None = None
    ) -> None:
        """Synchronous :meth:`run_with_iobinding_async`."""
        self._check_open()
        _bridge.block_on(self.run_with_iobinding_async(iobinding, run_options))

    def run(
        self,
        output_names: Sequence[str] | None,
        input_feed: Any,
        run_options: RunOptions | None = None,
    ) -> list[Any]:
        """Synchronous :meth:`run_async` (needs JSPI; see :class:`ortweb.SyncUnavailable`)."""
        self._check_open()
        return _bridge.block_on(self.run_async(output_names, input_feed, run_options))

    # -- lifetime -----------------------------------------------------------------

    async def close_async(self) -> None:
        """Release the session in onnxruntime-web; safe to call twice."""
        handle, self._handle = self._handle, None
        if handle is not None:
            self._finalizer.detach()
            await _bridge.release_session(handle)

    def close(self) -> None:
        """Synchronous :meth:`close_async`."""
        if self._handle is not None:
            _bridge.block_on(self.close_async())

    @property
    def closed(self) -> bool:
        return self._handle is None

    def __enter__(self) -> InferenceSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> InferenceSession:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close_async()

    def __repr__(self) -> str:
        state = "closed" if self._handle is None else f"provider={self._provider!r}"
        return f"<ortweb.InferenceSession {state} inputs={[a.name for a in self._inputs]}>"
