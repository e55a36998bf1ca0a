"""Execution-provider names and the default choice.

ortweb's providers are ``'webgpu'`` and ``'wasm'`` (onnxruntime-web's names);
onnxruntime's spellings are accepted too. The default, when neither the call nor
the page names providers, is ``['webgpu', 'wasm']``: WebGPU when the page has an
adapter and it can run the model's types, else wasm. Changing this rule is a
breaking change.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .errors import InvalidArgument

__all__ = ["DEFAULT_PROVIDERS", "normalize_providers"]

DEFAULT_PROVIDERS = ("webgpu", "wasm")

_ALIASES = {
    "wasm": "wasm",
    "cpu": "wasm",
    "cpuexecutionprovider": "wasm",
    "wasmexecutionprovider": "wasm",
    "webgpu": "webgpu",
    "webgpuexecutionprovider": "webgpu",
    "jsexecutionprovider": "webgpu",
}


def normalize_provider(name: Any) -> str:
    """``'CPUExecutionProvider'`` → ``'wasm'``; unknown names → InvalidArgument."""
    if isinstance(name, tuple) and len(name) == 2:  # onnxruntime's (name, options) form
        name = name[0]
    if not isinstance(name, str):
        raise InvalidArgument(f"providers: expected provider names (str), got {name!r}")
    found = _ALIASES.get(name.lower())
    if found is None:
        raise InvalidArgument(
            f"providers: unknown execution provider {name!r}; expected one of "
            "'webgpu', 'wasm' (or 'WebGpuExecutionProvider', 'CPUExecutionProvider')"
        )
    return found


def normalize_providers(providers: Any, default: Sequence[str] | None = None) -> list[str]:
    """Resolve a ``providers=`` argument to an ordered list without duplicates.

    Parameters
    ----------
    providers : str, sequence of str, or None
        What the user passed. None means ``default`` (the page's choice), or
        :data:`DEFAULT_PROVIDERS`.
    default : sequence of str, optional
        The page-wide default set by ``ortweb.set_default_providers`` or the host.
    """
    if providers is None:
        providers = list(default) if default else list(DEFAULT_PROVIDERS)
    if isinstance(providers, str):
        providers = [providers]
    if not isinstance(providers, Sequence):
        raise InvalidArgument(
            f"providers: expected a list of provider names, got {type(providers).__name__}"
        )
    out: list[str] = []
    for p in providers:
        name = normalize_provider(p)
        if name not in out:
            out.append(name)
    if not out:
        raise InvalidArgument("providers: the list is empty; name at least one of 'webgpu', 'wasm'")
    return out
