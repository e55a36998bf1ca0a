"""Device names: the one table every API that names a device or an output location reads.

``OrtValue.ortvalue_from_numpy(a, device_type)``, ``IOBinding.bind_input/bind_output``
and ``InferenceSession(..., preferred_output_location=...)`` all take the same names,
in any case, as native onnxruntime lower-cases ``device_type``: ``'cpu'``, and
``'webgpu'``, ``'gpu'`` or ``'gpu-buffer'`` (onnxruntime-web's name) for WebGPU.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

from .errors import InvalidArgument

__all__ = ["DEVICES", "Locations", "device", "location", "normalize_locations", "unknown_outputs"]

#: Every accepted name, lower-case → the device: ``'cpu'`` or ``'webgpu'``.
DEVICES = MappingProxyType(
    {"cpu": "cpu", "webgpu": "webgpu", "gpu": "webgpu", "gpu-buffer": "webgpu"}
)

#: onnxruntime-web's name for where a tensor lives, by device.
_ORT_LOCATION = {"cpu": "cpu", "webgpu": "gpu-buffer"}

#: ``preferred_output_location``: one name for every output, or output name → name.
Locations = str | dict[str, str] | None


def _lookup(value: Any) -> str | None:
    return DEVICES.get(value.lower()) if isinstance(value, str) else None


def device(value: Any, what: str = "device_type") -> str:
    """The device a name means: ``'cpu'`` or ``'webgpu'``.

    Parameters
    ----------
    value : str
        Any name of :data:`DEVICES`, in any case.
    what : str
        The argument's name, for the error message.

    Raises
    ------
    InvalidArgument
        When ``value`` is not a name of the table.
    """
    found = _lookup(value)
    if found is None:
        raise InvalidArgument(f"{what}: expected 'cpu' or 'webgpu', got {value!r}")
    return found


def location(value: Any, what: str = "preferred_output_location") -> str:
    """onnxruntime-web's location for a name: ``'cpu'`` or ``'gpu-buffer'``.

    Parameters
    ----------
    value : str
        Any name of :data:`DEVICES`, in any case.
    what : str
        The argument's name, for the error message.

    Raises
    ------
    InvalidArgument
        When ``value`` is not a name of the table.
    """
    found = _lookup(value)
    if found is None:
        raise InvalidArgument(f"{what}: expected 'cpu' or 'gpu-buffer', got {value!r}")
    return _ORT_LOCATION[found]


def normalize_locations(value: Locations) -> str | dict[str, str] | None:
    """``preferred_output_location`` in onnxruntime-web's names, as its
    ``preferredOutputLocation`` session option takes it.

    Raises
    ------
    InvalidArgument
        For a name not in the table, or a value neither a name nor a dict.
    """
    if value is None:
        return None
    if isinstance(value, str):
        return location(value)
    if isinstance(value, dict):
        return {str(k): location(v, f"preferred_output_location[{k!r}]")
                for k, v in value.items()}
    raise InvalidArgument(
        "preferred_output_location: expected 'cpu', 'gpu-buffer' or a dict of output names "
        f"to those, got {type(value).__name__}"
    )


def unknown_outputs(locations: str | dict[str, str] | None, outputs: list[str]) -> str:
    """What is wrong with a per-output ``preferred_output_location`` that names outputs
    the model does not have (``''`` when nothing is)."""
    if not isinstance(locations, dict):
        return ""
    unknown = sorted(set(locations) - set(outputs))
    if not unknown:
        return ""
    return (f"preferred_output_location names unknown output(s) {unknown}; the model's "
            f"outputs are {outputs}")
