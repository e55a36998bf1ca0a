"""Execution-provider names and the default choice.

ortweb's providers are ``'webgpu'`` and ``'wasm'`` (onnxruntime-web's execution
providers), ``'tract'`` and ``'wonnx'`` (two more engines, :mod:`._engines`);
onnxruntime's spellings are accepted too (``'CPUExecutionProvider'``,
``'TractExecutionProvider'``, ...). The default, when neither the call nor the page
names providers, is ``['webgpu', 'wasm']``: WebGPU when the page has an adapter and
it can run the model's types, else wasm; the other engines run only when named.
Changing this rule is a breaking change.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

from .errors import InvalidArgument

__all__ = [
    "DEFAULT_PROVIDERS",
    "PROVIDERS",
    "WEBGPU_OPTIONS",
    "normalize_provider",
    "normalize_providers",
    "provider_options",
]

DEFAULT_PROVIDERS = ("webgpu", "wasm")

_ALIASES = {
    "wasm": "wasm",
    "cpu": "wasm",
    "cpuexecutionprovider": "wasm",
    "wasmexecutionprovider": "wasm",
    "webgpu": "webgpu",
    "webgpuexecutionprovider": "webgpu",
    "jsexecutionprovider": "webgpu",
    "tract": "tract",
    "tractexecutionprovider": "tract",
    "wonnx": "wonnx",
    "wonnxexecutionprovider": "wonnx",
}

#: Every provider name, in the order messages list them.
PROVIDERS = ("webgpu", "wasm", "tract", "wonnx")


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
            "'webgpu', 'wasm', 'tract', 'wonnx' (or onnxruntime's spelling: "
            "'WebGpuExecutionProvider', 'CPUExecutionProvider', 'TractExecutionProvider', "
            "'WonnxExecutionProvider')"
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
        raise InvalidArgument(
            "providers: the list is empty; name at least one of 'webgpu', 'wasm', 'tract', 'wonnx'"
        )
    return out


_CACHE_MODES = frozenset({"disabled", "lazyRelease", "simple", "bucket"})

#: The options of onnxruntime-web 1.30's WebGPU EP (``WebGpuExecutionProviderOption``
#: in its ``types.d.ts``), each with the values it takes; None: node names.
WEBGPU_OPTIONS: dict[str, frozenset[str] | None] = {
    "preferredLayout": frozenset({"NCHW", "NHWC"}),
    "validationMode": frozenset({"disabled", "wgpuOnly", "basic", "full"}),
    "forceCpuNodeNames": None,
    "storageBufferCacheMode": _CACHE_MODES,
    "uniformBufferCacheMode": _CACHE_MODES,
    "queryResolveBufferCacheMode": _CACHE_MODES,
    "defaultBufferCacheMode": _CACHE_MODES,
}

#: ORT-web's wasm EP takes no options (``WebAssemblyExecutionProviderOption`` has
#: only its name).
_EP_OPTIONS: dict[str, dict[str, frozenset[str] | None]] = {
    "webgpu": WEBGPU_OPTIONS, "wasm": {}, "tract": {}, "wonnx": {},
}


def _option_value(provider: str, key: str, value: Any) -> Any:
    allowed = WEBGPU_OPTIONS[key] if provider == "webgpu" else None
    if allowed is None:
        # onnxruntime passes every option as a string: node names one per line.
        names = value.split() if isinstance(value, str) else value
        if not isinstance(names, list | tuple) or not all(isinstance(n, str) for n in names):
            raise InvalidArgument(
                f"provider option {key!r} of {provider!r}: expected a list of node names "
                f"(or one string of names separated by whitespace), got {value!r}"
            )
        return list(names)
    if value not in allowed:
        raise InvalidArgument(
            f"provider option {key!r} of {provider!r}: expected one of {sorted(allowed)}, "
            f"got {value!r}"
        )
    return value


def provider_options(providers: Any, options: Any = None) -> dict[str, dict[str, Any]]:
    """The onnxruntime-web EP options of each provider, from onnxruntime's two forms.

    onnxruntime takes options either as ``(name, options)`` tuples in ``providers``
    or as a ``provider_options`` list parallel to ``providers``. Options
    onnxruntime-web understands are checked and kept; any other option is dropped
    with a ``UserWarning`` naming it, because a silently ignored option reads as one
    that took effect.

    Parameters
    ----------
    providers : list of str or (str, dict), or anything else ``providers=`` takes
    options : list of dict, optional
        ``provider_options``: one dict per entry of ``providers``.

    Returns
    -------
    dict of str to dict
        ortweb provider (``'webgpu'``, ``'wasm'``) → the keys of its
        onnxruntime-web ``executionProviders`` entry; providers without options
        are left out.

    Raises
    ------
    InvalidArgument
        When ``options`` does not match ``providers``, or a known option has a
        value onnxruntime-web does not accept.
    """
    listed = isinstance(providers, list | tuple)
    if options is not None:
        if not listed:
            raise InvalidArgument(
                "provider_options: given without a list of providers; pass providers=[...] "
                f"with one options dict per provider, got providers={providers!r}"
            )
        if not isinstance(options, list | tuple) or len(options) != len(providers):
            raise InvalidArgument(
                "provider_options: expected a list of dicts as long as providers "
                f"({len(providers)}), got {options!r}"
            )
        if not all(isinstance(p, str) for p in providers):
            raise InvalidArgument(
                "provider_options: only provider names (str) may be given with provider_options, "
                f"got providers={providers!r}"
            )
        pairs = list(zip(providers, options, strict=True))
    elif listed:
        pairs = [p for p in providers if isinstance(p, tuple) and len(p) == 2]
    else:
        return {}
    out: dict[str, dict[str, Any]] = {}
    for name, opts in pairs:
        if not isinstance(opts, dict):
            raise InvalidArgument(
                f"provider options of {name!r}: expected a dict, got {type(opts).__name__}"
            )
        provider = normalize_provider(name)
        known = _EP_OPTIONS[provider]
        unknown = sorted(str(k) for k in opts if k not in known)
        if unknown:
            warnings.warn(
                f"provider options {unknown} of {name!r} are not understood by onnxruntime-web's "
                f"{provider} execution provider and are ignored"
                + (f" (it understands {sorted(known)})" if known else " (it takes no options)"),
                UserWarning,
                stacklevel=4,
            )
        kept = {str(k): _option_value(provider, str(k), v) for k, v in opts.items() if k in known}
        if kept:
            out.setdefault(provider, {}).update(kept)
    return out
