"""The inference engines a page can run, and what each can do.

Each provider name belongs to one engine: ``'webgpu'`` and ``'wasm'`` to
onnxruntime-web (``ort``), ``'tract'`` to tract (tractjs 0.4.0: CPU, WebAssembly,
in its own Web Worker), ``'wonnx'`` to wonnx (0.5.1: WebGPU shaders made when the
session is created). The JavaScript side of each is one adapter
(``bridge_js/engine_*.js``, listed in ``bridge_js/engines.js``); this module is the
Python side: what an engine can take, checked against the model's own bytes before
the engine is tried, so that a model it cannot run is refused with the reason
instead of failing inside it, or giving a wrong answer.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from importlib import resources
from typing import Any

from . import _dtypes
from ._dimpin import pin_dims
from ._model import ModelData
from ._onnxproto import ModelInfo, ValueInfo
from ._policy import Plan
from .errors import ProviderUnavailable

__all__ = ["ENGINES", "Engine", "engine_graph", "engine_model", "engine_of", "fit_engines",
           "op_table", "op_version"]


@dataclass(frozen=True)
class Engine:
    """What one inference engine can do.

    Attributes
    ----------
    name : str
        ``'ort'``, ``'tract'`` or ``'wonnx'``.
    package : str
        The npm package and version that ortweb pins for it.
    providers : tuple of str
        The provider names it serves.
    types : frozenset of str or None
        The tensor types (onnxruntime's spelling) its inputs and outputs may have;
        None: every type ortweb knows.
    gpu_values : bool
        Whether it takes and leaves GPU buffers (IO binding with ``OrtValue``s on
        WebGPU, ``preferred_output_location``).
    external_data : bool
        Whether it loads models with tensors in external files.
    static_shapes : bool
        Whether it needs every input and output dim fixed, and the shape of every
        intermediate value declared in the model (wonnx compiles its shaders for
        one shape when the session is created).
    needs_graph : bool
        Whether it needs the model's inputs and outputs as ortweb reads them
        (:func:`engine_graph`): tract and wonnx report none of their own.
    """

    name: str
    package: str
    providers: tuple[str, ...]
    types: frozenset[str] | None = None
    gpu_values: bool = False
    external_data: bool = False
    static_shapes: bool = False
    needs_graph: bool = True

    def refusal(self, model: ModelInfo | None, overrides: Mapping[str, int],
                trusted: frozenset[str] = frozenset()) -> str:
        """Why this engine cannot run ``model``, read from its bytes; ``''`` when it
        may try.

        Parameters
        ----------
        model : ModelInfo or None
            The model as ortweb read it; None when ortweb could not read it.
        overrides : mapping of str to int
            The session's free-dimension overrides (``dim_param`` → size).
        trusted : frozenset of str
            Operators to run although the table says they gave wrong values in some
            case (``ProviderPolicy.trust``).
        """
        if model is None:
            # An engine that reads the model itself says what it cannot do.
            return "" if not self.needs_graph else (
                f"ortweb could not read the model's inputs and outputs, which the "
                f"{self.name} engine needs")
        if model.external and not self.external_data:
            return (f"the model keeps tensors in external files ({model.external[0].location!r}), "
                    f"which the {self.name} engine cannot load")
        for kind, values in (("input", model.inputs), ("output", model.outputs)):
            for value in values:
                if value.name in model.initializer_names:
                    continue
                problem = self._value_problem(value, overrides)
                if problem:
                    return f"{kind} {value.name!r}: {problem}"
        if self.static_shapes and model.undeclared:
            names = ", ".join(repr(n) for n in model.undeclared[:3])
            more = f" and {len(model.undeclared) - 3} more" if len(model.undeclared) > 3 else ""
            return (f"{self.name} needs the shape of every intermediate value declared in the "
                    f"model (value_info), and {names}{more} have none; run "
                    "onnx.shape_inference.infer_shapes on the model first")
        return self._op_problem(model, trusted)

    def _op_problem(self, model: ModelInfo, trusted: frozenset[str]) -> str:
        """Every op of ``model`` that this engine's table distrusts, in one message,
        so that a user learns at once what a ``trust=`` would have to name."""
        table = op_table(self.name)
        if table is None:
            return ""
        problems: dict[str, str] = {}
        for domain, op in model.ops:
            key = op if domain in ("", "ai.onnx") else f"{domain}.{op}"
            entry = table["ops"].get(key)
            if entry is None or key in trusted or key in problems:
                continue  # not measured: the engine is tried, and says what it cannot do
            counts = entry["versions"].get(str(op_version(entry["since"], _opset(model, domain))))
            if counts is None:
                continue  # a version of the op the suite holds no case of: tried, as above
            cases = counts["pass"] + counts["wrong"] + counts["error"]
            # Named as onnx names the version the model uses (Softmax-13), not by
            # the first version of its signature (Softmax-1) that the table is kept by.
            version = op_version(entry.get("schemas", entry["since"]), _opset(model, domain))
            if counts["wrong"]:
                problems[key] = (f"{key}-{version} gives wrong values on {self.name} in "
                                 f"{counts['wrong']} of {cases} ONNX node cases "
                                 f"({', '.join(counts['wrong_cases'][:3])})")
            elif not counts["pass"]:
                problems[key] = (f"{key}-{version} not supported by {self.name}: none of its "
                                 f"{cases} ONNX node cases ran")
        if not problems:
            return ""
        names = list(problems)
        return (f"{'; '.join(problems.values())} (measured by "
                f"`{table['meta'].get('command', 'ortweb conformance')}` on "
                f"{table['meta'].get('date', '?')}); to run it anyway, for a model whose "
                f"outputs you have checked: ProviderPolicy(trust={{{self.providers[0]!r}: "
                f"{names!r}}}) (ortweb run --trust {','.join(names)})")

    def _value_problem(self, value: ValueInfo, overrides: Mapping[str, int]) -> str:
        if self.types is not None and value.type not in self.types:
            allowed = ", ".join(sorted(_dtypes.by_onnx(t).ort for t in self.types))
            return (f"{value.type or 'no type'} is not a type the {self.name} engine "
                    f"({self.package}) passes (it passes {allowed})")
        if not self.static_shapes:
            return ""
        if value.shape is None:
            return f"no declared shape, and {self.name} needs static shapes"
        for dim in value.shape:
            if isinstance(dim, int) and dim >= 0:
                continue
            if isinstance(dim, str) and dim in overrides:
                continue  # pinned in the bytes the engine gets (engine_model)
            how = (f"pin it with SessionOptions.add_free_dimension_override_by_name({dim!r}, "
                   "n) (ortweb run --dim)" if isinstance(dim, str) and dim else
                   "a dim with no name cannot be pinned by name: give the model fixed shapes "
                   "(onnx.tools.update_model_dims.update_inputs_outputs_dims)")
            return f"dynamic dim {dim!r}: {self.name} needs static shapes; {how}"
        return ""


_TRACT_TYPES = frozenset({
    "tensor(float)", "tensor(double)", "tensor(int8)", "tensor(uint8)",
    "tensor(int16)", "tensor(uint16)", "tensor(int32)", "tensor(uint32)",
})

#: Every engine, the table's order being the order of its providers in messages.
ENGINES: tuple[Engine, ...] = (
    Engine("ort", "onnxruntime-web", ("webgpu", "wasm"), gpu_values=True, external_data=True,
           needs_graph=False),
    Engine("tract", "tractjs 0.4.0", ("tract",), types=_TRACT_TYPES),
    Engine("wonnx", "@webonnx/wonnx-wasm 0.5.1", ("wonnx",),
           types=frozenset({"tensor(float)"}), static_shapes=True),
)

_BY_PROVIDER = {p: e for e in ENGINES for p in e.providers}


@functools.cache
def op_table(engine: str) -> dict[str, Any] | None:
    """The operator table of ``engine`` (``_engine_ops/<engine>.json``, written by
    ``ortweb conformance --op-table``), or None when ortweb ships none for it."""
    found = resources.files(__package__) / "_engine_ops" / f"{engine}.json"
    if not found.is_file():
        return None
    table: dict[str, Any] = json.loads(found.read_text())
    return table


def _opset(model: ModelInfo, domain: str) -> int:
    """The opset ``model`` imports for ``domain`` (0 when it imports none)."""
    names = ("", "ai.onnx") if domain in ("", "ai.onnx") else (domain,)
    return max((model.opset_import.get(n, 0) for n in names), default=0)


def op_version(since: list[int], opset: int) -> int:
    """The version (``since_version``) of an op, begun at the opsets ``since``, that a
    model of ``opset`` uses; ``opset`` itself when the table knows no history."""
    begun = [s for s in since if s <= opset]
    return begun[-1] if begun else opset


def engine_of(provider: str) -> Engine:
    """The engine that serves ``provider`` (a normalized provider name)."""
    return _BY_PROVIDER[provider]


def fit_engines(
    plan: Plan, model: ModelInfo | None, overrides: Mapping[str, int], what: str
) -> Plan:
    """The plan without the providers whose engine cannot run ``model``, each with
    the reason, before anything is downloaded or loaded.

    Raises
    ------
    ProviderUnavailable
        When no provider is left, or the one the policy requires is refused.
    """
    refused = {}
    for provider in plan.candidates:
        trusted = plan.trust.get(provider, frozenset())
        reason = engine_of(provider).refusal(model, overrides, trusted)
        if reason:
            refused[provider] = reason
    if not refused:
        return plan
    reasons = {**plan.excluded, **refused}
    if plan.require is not None and plan.require in refused:
        raise ProviderUnavailable(
            f"{what}: the provider policy requires {plan.require!r}, which cannot run this "
            f"model: {refused[plan.require]}", reasons=reasons)
    rest = [p for p in plan.candidates if p not in refused]
    if not rest:
        listed = "; ".join(f"{p}: {r}" for p, r in refused.items())
        raise ProviderUnavailable(f"{what}: no provider asked for can run this model ({listed})",
                                  reasons=reasons)
    return replace(plan, candidates=rest, excluded=reasons)


def engine_model(model: ModelData, plan: Plan, overrides: Mapping[str, int],
                 what: str) -> ModelData:
    """The bytes the plan's engines get: ``model``, or, when an engine of the plan
    reads shapes only from the model (``static_shapes``) and ``overrides`` are
    given, a copy with the dims they name pinned (:func:`._dimpin.pin_dims`; the
    other engines get the same overrides as an option, so they see the same
    model)."""
    if not overrides or not any(engine_of(p).static_shapes for p in plan.candidates):
        return model
    data = model if isinstance(model, bytes) else model.read(0, model.nbytes)
    pinned, _ = pin_dims(data, overrides, what)
    return pinned


def engine_graph(model: ModelInfo | None, plan: Plan | None = None,
                 overrides: Mapping[str, int] | None = None) -> dict[str, Any] | None:
    """The model's inputs and outputs for engines that report none (the bridge's
    ``ortwebGraph``): names, onnxruntime-web's type names, declared shapes with the
    dims ``overrides`` names pinned (as :func:`engine_model` pins them); None when
    no engine of ``plan`` needs them (``needs_graph``)."""
    providers = [] if plan is None else [*plan.candidates, *filter(None, [plan.verify])]
    if model is None or (plan is not None
                         and not any(engine_of(p).needs_graph for p in providers)):
        return None

    def describe(v: ValueInfo) -> dict[str, Any]:
        try:
            kind = _dtypes.by_onnx(v.type).ort
        except KeyError:
            kind = None
        shape = None if v.shape is None else [
            -1 if d is None else pinned.get(d, d) if isinstance(d, str) else d for d in v.shape]
        return {"name": v.name, "type": kind, "shape": shape}

    pinned = dict(overrides or {})

    feeds = [v for v in model.inputs if v.name not in model.initializer_names]
    return {"inputs": [describe(v) for v in feeds], "outputs": [describe(v) for v in model.outputs]}
