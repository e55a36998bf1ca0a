"""``SessionBase``: what a session says about itself, as onnxruntime's ``Session``.

The metadata half of :class:`ortweb.InferenceSession` (onnxruntime splits its
session the same way: ``Session`` holds the getters, ``InferenceSession`` loads
and runs). Everything here reads what loading recorded; nothing calls the bridge.
"""

from __future__ import annotations

from typing import Any

from ._devices import Locations
from ._metadata import ModelMetadata, NodeArg
from ._options import SessionOptions
from ._report import ProviderReport
from .errors import InvalidGraph, SessionClosed

__all__ = ["SessionBase"]


class SessionBase:
    """The getters of a loaded session (see :class:`ortweb.InferenceSession`)."""

    _handle: int | None
    _provider: str
    _locations: Locations
    _inputs: list[NodeArg]
    _outputs: list[NodeArg]
    _overridable: list[NodeArg]
    _meta: ModelMetadata | None
    _ep_options: dict[str, dict[str, Any]]
    _report: ProviderReport
    _options: SessionOptions

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
        """Providers of this session: the one that runs it, then ``'wasm'`` after
        ``'webgpu'``, because ORT places nodes the WebGPU EP lacks on the CPU, as
        native onnxruntime lists ``CPUExecutionProvider`` last."""
        return [self._provider, "wasm"] if self._provider == "webgpu" else [self._provider]

    def get_provider_options(self) -> dict[str, dict[str, Any]]:
        """Each provider of :meth:`get_providers` → the onnxruntime-web EP options it
        was given (``{}`` when none), as onnxruntime's ``get_provider_options()``."""
        return {p: dict(self._ep_options.get(p, {})) for p in self.get_providers()}

    @property
    def provider(self) -> str:
        """The provider that runs this session: ``'webgpu'``, ``'wasm'``, ``'tract'`` or
        ``'wonnx'``."""
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
        """The :class:`SessionOptions` the session was created with."""
        return self._options

    def _check_open(self) -> int:
        if self._handle is None:
            raise SessionClosed("this InferenceSession was closed; create a new one")
        return self._handle

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` has run (a closed session refuses every call)."""
        return self._handle is None

    def close(self) -> None:
        raise NotImplementedError

    async def close_async(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> Any:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close_async()

    def __repr__(self) -> str:
        state = "closed" if self._handle is None else f"provider={self._provider!r}"
        return f"<ortweb.InferenceSession {state} inputs={[a.name for a in self._inputs]}>"
