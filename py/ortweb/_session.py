"""``InferenceSession``: onnxruntime's API, running in onnxruntime-web.

One async implementation (``create``, ``run_async``, ``close_async``); the
synchronous methods are the same coroutines driven by :func:`_bridge.block_on`.
The jobs around it have their own modules: :mod:`._model` (reading, describing),
:mod:`._create` (creating in the runtime), :mod:`._runio` (a run's values),
:mod:`._iobinding` (runs through :class:`._iobinding.BindingSession`).
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from typing import Any

import numpy as np

from . import _bridge
from ._create import create_from_plan, ort_session_options
from ._devices import Locations, normalize_locations, unknown_outputs
from ._engines import engine_graph, engine_model, fit_engines
from ._external import DataFile, ExternalData, ort_entries, resolve_external_data
from ._iobinding import Fetches, IOBinding, run_with_iobinding
from ._limits import check_model_file, check_model_size, fit_plan, model_sizes, out_of_memory
from ._model import (
    ModelData,
    ModelSource,
    describe_model,
    model_name,
    open_model,
    read_model,
    release,
)
from ._options import RunOptions, SessionOptions
from ._policy import ProviderPolicy, plan_providers
from ._progress import Progress, ProgressCallback
from ._providers import provider_options as ep_options
from ._report import make_report
from ._runio import bridge_feeds, deliver_outputs
from ._session_base import SessionBase
from ._validate import FeedMemo, check_output_names
from ._verify import plan_verify, verify_first_run
from .errors import InvalidArgument, OrtWebError

__all__ = ["InferenceSession"]

#: Errors the bridge raises from its own checks, before ORT runs: they cannot
#: have left ORT in a bad state, so they never trigger a session re-creation.
_OWN_CHECKS = {"InvalidArgument", "SessionClosed", "ProviderUnavailable", "NotImplemented"}


class InferenceSession(SessionBase):
    """A model loaded into onnxruntime-web, used as ``onnxruntime.InferenceSession``.

    Parameters
    ----------
    path_or_bytes : str, os.PathLike or bytes
        A path in Pyodide's file system, an ``http(s)`` URL, or the model's bytes.
    sess_options : SessionOptions, optional
    providers : list of str, ProviderPolicy or "auto", optional
        Providers tried in order: onnxruntime-web's ``'webgpu'`` and ``'wasm'``, and
        the engines ``'tract'`` and ``'wonnx'`` (onnxruntime's spellings such as
        ``'CPUExecutionProvider'`` are accepted). None: the page default
        (``ortweb.set_default_providers``), else ``['webgpu', 'wasm']``. An entry may
        be onnxruntime's ``(name, options)``. A provider whose engine cannot run the
        model (its types, shapes, external data) is skipped before it loads, with
        the reason in :attr:`provider_report`.
    provider_options : list of dict, optional
        onnxruntime's other form: one options dict per entry of ``providers``.
        Options onnxruntime-web's EP understands (WebGPU: ``preferredLayout``,
        ``validationMode``, ``forceCpuNodeNames``, ``*BufferCacheMode``) go into its
        ``executionProviders`` entry; others are dropped with a ``UserWarning``.
    preferred_output_location : str or dict, optional
        ``'gpu-buffer'`` (or ``{output: 'gpu-buffer'}``) leaves outputs on the GPU.
    external_data : dict, optional
        For a model saved with external data (``onnx.save(...,
        save_as_external_data=True)``): each file the model's tensors name (their
        ``location``, e.g. ``'model.onnx.data'``) → its bytes, a URL or a path in
        Pyodide's file system. Needed for a model given as bytes; a model opened by
        path or URL finds its files beside itself, and entries given here win.
    progress : callable, optional
        ``progress(file, loaded, total)``, called as the model and each data file
        load: ``file`` is the URL or path, ``loaded`` and ``total`` bytes (``total``
        None while a server has not said). Per file, ``loaded`` only grows and ends
        at ``total``. An exception it raises stops the load and is raised here.
    cache : bool, default True
        A model or data file given by URL is kept in ortweb's file cache, in the
        browser's Origin Private File System (checked for size, and for sha256
        when the URL ends in ``#sha256=<hex>``), so the next load of that URL
        makes no network request; False fetches from the network and keeps
        nothing (see :func:`ortweb.cache_info`).

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
        preferred_output_location: Locations = None,
        external_data: ExternalData | None = None,
        progress: ProgressCallback | None = None,
        cache: bool = True,
    ) -> None:
        self._handle = None
        _bridge.block_on(self._open(
            path_or_bytes, sess_options, providers, preferred_output_location, provider_options,
            external_data, progress, cache,
        ))

    @classmethod
    async def create(
        cls,
        path_or_bytes: ModelSource,
        sess_options: SessionOptions | None = None,
        providers: Sequence[Any] | str | ProviderPolicy | None = None,
        provider_options: Any = None,
        *,
        preferred_output_location: Locations = None,
        external_data: ExternalData | None = None,
        progress: ProgressCallback | None = None,
        cache: bool = True,
    ) -> InferenceSession:
        """Asynchronous constructor: ``sess = await InferenceSession.create(...)``."""
        self = cls.__new__(cls)
        self._handle = None
        await self._open(
            path_or_bytes, sess_options, providers, preferred_output_location, provider_options,
            external_data, progress, cache,
        )
        return self

    async def _open(
        self,
        path_or_bytes: ModelSource,
        sess_options: SessionOptions | None,
        providers: Sequence[Any] | str | ProviderPolicy | None,
        preferred_output_location: Locations = None,
        provider_options: Any = None,
        external_data: ExternalData | None = None,
        progress: ProgressCallback | None = None,
        cache: bool = True,
    ) -> None:
        _bridge.get_bridge()  # outside a page with the bridge, say so before anything else
        if sess_options is not None and not isinstance(sess_options, SessionOptions):
            raise InvalidArgument(
                f"sess_options: expected ortweb.SessionOptions, got {type(sess_options).__name__}"
            )
        self._options = sess_options or SessionOptions()
        plan = plan_providers(providers, _bridge.default_providers())
        self._ep_options = ep_options(providers, provider_options)
        self._locations = normalize_locations(preferred_output_location)
        if self._options.intra_op_num_threads:
            from ._runtime import set_num_threads

            set_num_threads(self._options.intra_op_num_threads)
        reporter = None if progress is None else Progress(progress)
        self._source, self._cache = path_or_bytes, bool(cache)
        what = model_name(path_or_bytes)
        check_model_file(path_or_bytes, what)
        model = await open_model(path_or_bytes, cache=self._cache, progress=reporter)
        self._external: list[DataFile] = []
        buffers: list[_bridge.JsBuffer] = []
        try:
            nbytes = len(model) if isinstance(model, bytes) else model.nbytes
            check_model_size(nbytes, what)
            parsed = read_model(model)
            # Sizes from the model's own description: refused before any file is fetched.
            sizes = model_sizes(nbytes, parsed)
            plan = fit_plan(plan, sizes, what)
            self._external = await resolve_external_data(
                parsed, path_or_bytes, external_data, what,
                cache=self._cache, progress=reporter,
            )
            overrides = self._options.free_dimension_overrides
            plan = fit_engines(plan, parsed, overrides, what)
            plan, verifier = await plan_verify(plan, model)
            self._graph = engine_graph(parsed, plan, overrides)
            options, buffers = await self._ort_options(reporter)
            try:
                sent = engine_model(model, plan, overrides, what)
                info, timings, how = await create_from_plan(sent, plan, options)
            except OrtWebError as exc:
                clear = out_of_memory(exc, sizes, what)
                if clear is None:
                    raise
                raise clear from exc
        finally:
            # ORT-web has copied what it needs into its heap: JavaScript may free
            # the files now (a re-creation reads or fetches them again).
            release(model)
            for b in buffers:
                b.release()
            for f in self._external:
                f.release()
        # The caller's bytes are kept for a re-creation; a file's or URL's are not.
        self._model_bytes = model if isinstance(model, bytes) else None
        self._adopt(int(info["handle"]))
        self._provider, self._build = str(info["provider"]), str(info["build"])
        self._report = make_report(plan, info, timings, how)
        self._verifier = verifier.for_session(self) if verifier else None
        described = describe_model(parsed, info, self._options.free_dimension_overrides)
        self._inputs, self._outputs = described.inputs, described.outputs
        self._overridable, self._meta = described.overridable, described.meta
        self._feed_memo = FeedMemo()
        problem = unknown_outputs(self._locations, [a.name for a in self._outputs])
        if problem:
            await self.close_async()
            raise InvalidArgument(problem)

    async def _ort_options(
        self, progress: Progress | None = None
    ) -> tuple[dict[str, Any], list[_bridge.JsBuffer]]:
        """ORT-web's session options, and the JS buffers of the data files in them
        (released once the session is created)."""
        options = ort_session_options(self._options, self._locations, self._ep_options)
        if self._graph is not None:
            options["ortwebGraph"] = self._graph
        buffers: list[_bridge.JsBuffer] = []
        if self._external:
            options["externalData"], buffers = await ort_entries(
                self._external, cache=self._cache, progress=progress
            )
        return options, buffers

    def _adopt(self, handle: int) -> None:
        old = getattr(self, "_finalizer", None)
        if old is not None:
            old.detach()
        self._handle = handle
        # A session dropped without close() is released when it is collected.
        self._finalizer = weakref.finalize(self, _bridge.release_later, handle)

    # -- running ------------------------------------------------------------------

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
        outputs = await self.execute_async(
            input_feed, tuple((n, None) for n in names), run_options
        )
        if self._locations is None:
            return outputs  # numpy arrays only: the common case, kept short
        return deliver_outputs(names, outputs, self._wants_gpu)

    async def execute_async(
        self,
        input_feed: Any,
        fetches: Fetches,
        run_options: RunOptions | None = None,
    ) -> list[np.ndarray | _bridge.GpuOutput]:
        """Validate and convert the feeds, and run once: the step under :meth:`run_async`
        and :meth:`run_with_iobinding_async` (:class:`._iobinding.BindingSession`).

        Parameters
        ----------
        input_feed : dict
            Input name → numpy array or :class:`OrtValue`, checked as :meth:`run_async`
            checks them.
        fetches : sequence of (str, int or None)
            The outputs to compute: each name with the bridge handle of the GPU value
            ORT writes into, or None to let ORT allocate it.
        run_options : RunOptions, optional

        Returns
        -------
        list of numpy.ndarray or _bridge.GpuOutput
            One per fetch, in order: an array, or what ORT left on the GPU.

        Notes
        -----
        If ORT fails in a run that involves GPU tensors, the session is re-created
        from its model bytes before the error is raised, so the next run works.
        """
        handle = self._check_open()
        if run_options is not None and not isinstance(run_options, RunOptions):
            raise InvalidArgument(
                f"run_options: expected ortweb.RunOptions or None, got {type(run_options).__name__}"
            )
        feeds, gpu_feeds = bridge_feeds(
            self._inputs, input_feed, self._feed_memo, self._overridable
        )
        on_gpu = gpu_feeds or any(h is not None for _, h in fetches) or (
            self._locations is not None
            and any(self.output_location(n) == "gpu-buffer" for n, _ in fetches)
        )
        options = None if run_options is None else run_options.to_ort()
        try:
            outputs = await _bridge.run_session(handle, feeds, fetches, options)
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
        if self._verifier is None or on_gpu:
            return outputs
        return await verify_first_run(self, feeds, fetches, outputs)

    async def _recreate(self) -> None:
        self._move_to(await self._create_on(self._provider))

    async def _create_on(self, provider: str) -> dict[str, Any]:
        """This session's model and options created again on ``provider``: the record."""
        model: ModelData = self._model_bytes or await open_model(self._source, cache=self._cache)
        buffers: list[_bridge.JsBuffer] = []
        try:
            options, buffers = await self._ort_options()
            return await _bridge.create_session(model, [provider], options)
        finally:
            if model is not self._model_bytes:
                release(model)
            for b in buffers:
                b.release()

    def _move_to(self, info: dict[str, Any]) -> None:
        """Run on the session of ``info`` from now on, releasing the current one."""
        old = self._handle
        self._adopt(int(info["handle"]))
        self._provider, self._build = str(info["provider"]), str(info["build"])
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
        await run_with_iobinding(self, iobinding, run_options)

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
