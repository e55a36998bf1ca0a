"""Model input/output descriptions, as onnxruntime's ``NodeArg`` and ``ModelMetadata``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ._onnxproto import ModelInfo, ValueInfo

__all__ = [
    "ModelMetadata", "NodeArg", "format_shape", "model_metadata", "node_args_from_bridge",
    "node_args_from_model",
]

Dim = int | str | None

#: What native onnxruntime reports as the version of a model that sets none.
NO_MODEL_VERSION = 2**63 - 1


@dataclass(frozen=True)
class NodeArg:
    """One model input or output, named as in onnxruntime.

    Attributes
    ----------
    name : str
    type : str
        ``'tensor(float)'``, ``'tensor(int64)'``, ``'seq(tensor(float))'``, ...
    shape : list of int, str or None
        Fixed sizes as ints, symbolic dimensions by name, unknown ones as None; ``[]``
        both for a scalar and for a tensor whose rank the model leaves open, as
        onnxruntime shows them.
    rank_known : bool
        False when the model declares no shape at all (any rank is accepted). Not
        part of equality or ``repr``, so a NodeArg still reads like onnxruntime's.
    """

    name: str
    type: str
    shape: list[Dim]
    rank_known: bool = field(default=True, compare=False, repr=False)

    def __repr__(self) -> str:
        return f"NodeArg(name={self.name!r}, type={self.type!r}, shape={self.shape!r})"


@dataclass(frozen=True)
class ModelMetadata:
    """A model's metadata, as onnxruntime's ``InferenceSession.get_modelmeta()``.

    Attributes
    ----------
    producer_name : str
    graph_name : str
    graph_description : str
        The graph's ``doc_string``.
    domain : str
    description : str
        The model's ``doc_string``.
    version : int
        The model's ``model_version``; ``2**63 - 1`` when the model sets none, as
        onnxruntime reports it.
    custom_metadata_map : dict of str to str
        The model's ``metadata_props``.
    """

    producer_name: str
    graph_name: str
    graph_description: str
    domain: str
    description: str
    version: int
    custom_metadata_map: dict[str, str]


def model_metadata(info: ModelInfo) -> ModelMetadata:
    """The :class:`ModelMetadata` of a parsed model."""
    return ModelMetadata(
        producer_name=info.producer_name,
        graph_name=info.graph_name,
        graph_description=info.graph_doc_string,
        domain=info.domain,
        description=info.doc_string,
        version=NO_MODEL_VERSION if info.model_version is None else info.model_version,
        custom_metadata_map=dict(info.metadata_props),
    )


def format_shape(shape: Sequence[Dim]) -> str:
    """``[1, 'batch', None]`` → ``[1, batch, ?]`` for messages."""
    return "[" + ", ".join("?" if d is None else str(d) for d in shape) + "]"


def _declared_dim(dim: Dim, overrides: Mapping[str, int]) -> Dim:
    # Native onnxruntime shows a negative dim_value and an empty dim_param as
    # unknown, and a free-dimension override as the int it fixes the dim to.
    if isinstance(dim, int):
        return dim if dim >= 0 else None
    if dim:
        return overrides.get(dim, dim)
    return None


def _node_arg(value: ValueInfo, overrides: Mapping[str, int]) -> NodeArg:
    if value.shape is None:
        return NodeArg(value.name, value.type, [], rank_known=False)
    return NodeArg(value.name, value.type, [_declared_dim(d, overrides) for d in value.shape])


def node_args_from_model(
    info: ModelInfo, free_dimension_overrides: Mapping[str, int] | None = None
) -> tuple[list[NodeArg], list[NodeArg], list[NodeArg]]:
    """``(inputs, outputs, overridable_initializers)`` as native onnxruntime lists them.

    Graph inputs that have an initializer are left out of the inputs; from IR
    version 4 on they are the overridable initializers (before that, initializers
    are constants and cannot be fed). ``free_dimension_overrides`` replaces
    symbolic dims by the sizes given, as
    ``SessionOptions.add_free_dimension_override_by_name`` does natively.
    """
    overrides = dict(free_dimension_overrides or {})
    inits = info.initializer_names
    inputs = [_node_arg(v, overrides) for v in info.inputs if v.name not in inits]
    outputs = [_node_arg(v, overrides) for v in info.outputs]
    overridable = (
        [_node_arg(v, overrides) for v in info.inputs if v.name in inits]
        if info.ir_version >= 4 else []
    )
    return inputs, outputs, overridable


def _dim(value: Any) -> Dim:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        # ORT-web reports a dim_value of -1 and an unset dim as 4294967295.
        return int(value) if 0 <= value < 2**32 - 1 else None
    if isinstance(value, str) and value:
        return value
    return None


def node_args_from_bridge(entries: Sequence[Mapping[str, Any]]) -> list[NodeArg]:
    """Build NodeArgs from the bridge's ``{name, type, shape}`` records.

    Only used when ortweb cannot read the model's bytes itself (see
    ``InferenceSession``): onnxruntime-web's metadata shows an input without a
    shape as rank 0, so its rank is then taken as unknown.
    """
    out = []
    for e in entries:
        shape = e.get("shape")
        dims = [] if shape is None else [_dim(d) for d in shape]
        out.append(NodeArg(str(e["name"]), str(e.get("type") or "unknown"), dims,
                           rank_known=bool(dims)))
    return out
