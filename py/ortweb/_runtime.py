"""Page-wide runtime state: available providers and the default choice."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from . import _bridge
from ._providers import normalize_providers

__all__ = [
    "get_available_providers",
    "get_available_providers_async",
    "set_default_providers",
]


async def get_available_providers_async() -> list[str]:
    """Providers this page can use, best first: ``['webgpu', 'wasm']`` or ``['wasm']``."""
    gpu = await _bridge.probe_webgpu()
    return ["webgpu", "wasm"] if gpu.get("available") else ["wasm"]


def get_available_providers() -> list[str]:
    """Synchronous :func:`get_available_providers_async` (as onnxruntime's)."""
    return _bridge.block_on(get_available_providers_async())


def set_default_providers(providers: Sequence[Any] | str | None) -> list[str] | None:
    """Set the providers used by sessions that name none (None restores the default rule).

    Returns
    -------
    list of str or None
        The normalised list now in force.
    """
    value = None if providers is None else normalize_providers(providers)
    bridge = _bridge.get_bridge()
    bridge.defaultProviders = None if value is None else _bridge._js(value)
    return value
