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
from ._convert import to_wire
from ._metadata import NodeArg, node_args_from_bridge
from ._options import RunOptions, SessionOptions
from ._providers import normalize_providers
from ._validate import check_feeds, check_output_names
from .errors import InvalidArgument, NoSuchFile, SessionClosed

__all__ = ["InferenceSession", "load_model_bytes"]

ModelSource = str | bytes | bytearray | memoryview | os.PathLike[str]

_URL_SCHEMES = {"http", "https", "blob", "data"}


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
        ``['webgpu', 'wasm']``.

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
        providers: Sequence[Any] | str | None = None,
        provider_options: Any = None,
    ) -> None:
        self._handle = None
        _bridge.block_on(self._open(path_or_bytes, sess_options, providers))

    @classmethod
    async def create(
        cls,
        path_or_bytes: ModelSource,
        sess_options: SessionOptions | None = None,
        providers: Sequence[Any] | str | None = None,
        provider_options: Any = None,
    ) -> InferenceSession:
        """Asynchronous constructor: ``sess = await InferenceSession.create(...)``."""
        self = cls.__new__(cls)
        self._handle = None
        await self._open(path_or_bytes, sess_options, providers)
        return self

    async def _open(
        self,
        path_or_bytes: ModelSource,
        sess_options: SessionOptions | None,
        providers: Sequence[Any] | str | None,
    ) -> None:
        _bridge.get_bridge()  # outside a page with the bridge, say so before anything else
        if sess_options is not None and not isinstance(sess_options, SessionOptions):
            raise InvalidArgument(
                f"sess_options: expected ortweb.SessionOptions, got {type(sess_options).__name__}"
            )
        self._options = sess_options or SessionOptions()
        self._requested = normalize_providers(providers, _bridge.default_providers())
        self._model_bytes = await load_model_bytes(path_or_bytes)
        info = await _bridge.create_session(
            self._model_bytes, self._requested, self._options.to_ort()
        )
        self._handle = int(info["handle"])
        # A session dropped without close() is released when it is collected.
        self._finalizer = weakref.finalize(self, _bridge.release_later, self._handle)
        self._provider = str(info["provider"])
        self._build = str(info["build"])
        self._skipped = {str(s["provider"]): str(s["reason"]) for s in info["skipped"]}
        self._inputs = node_args_from_bridge(
            [{**e, "type": _onnx_type(e["type"])} for e in info["inputs"]]
        )
        self._outputs = node_args_from_bridge(
            [{**e, "type": _onnx_type(e["type"])} for e in info["outputs"]]
        )

    # -- metadata ---------------------------------------------------------------

    def get_inputs(self) -> list[NodeArg]:
        """The model's inputs (name, type, shape)."""
        return list(self._inputs)

    def get_outputs(self) -> list[NodeArg]:
        """The model's outputs (name, type, shape)."""
        return list(self._outputs)

    def get_providers(self) -> list[str]:
        """Providers of this session: the one that runs it, then ``'wasm'``.

        ``'wasm'`` follows ``'webgpu'`` because ORT places nodes the WebGPU EP lacks
        on the CPU, as native onnxruntime lists ``CPUExecutionProvider`` last.
        """
        return [self._provider] if self._provider == "wasm" else [self._provider, "wasm"]

    @property
    def provider(self) -> str:
        """The execution provider that runs this session (``'webgpu'`` or ``'wasm'``)."""
        return self._provider

    @property
    def skipped_providers(self) -> dict[str, str]:
        """Providers tried before :attr:`provider`, each with why it was not used."""
        return dict(self._skipped)

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
    ) -> list[np.ndarray]:
        """Run the model: ``await sess.run_async(None, {"x": array})``.

        Returns
        -------
        list of numpy.ndarray
            One per name in ``output_names`` (all outputs when None), in that order.
        """
        handle = self._check_open()
        if run_options is not None and not isinstance(run_options, RunOptions):
            raise InvalidArgument(
                f"run_options: expected ortweb.RunOptions or None, got {type(run_options).__name__}"
            )
        names = check_output_names(self._outputs, output_names)
        feeds = [
            (arg.name, to_wire(array, dtype))
            for arg, dtype, array in check_feeds(self._inputs, input_feed)
        ]
        return await _bridge.run_session(
            handle, feeds, names, None if run_options is None else run_options.to_ort()
        )

    def run(
        self,
        output_names: Sequence[str] | None,
        input_feed: Any,
        run_options: RunOptions | None = None,
    ) -> list[np.ndarray]:
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
