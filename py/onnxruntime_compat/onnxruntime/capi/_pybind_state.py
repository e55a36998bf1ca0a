"""``onnxruntime.capi._pybind_state``: native re-exports its C module here; so does this."""

from __future__ import annotations

from . import onnxruntime_pybind11_state as _state
from .onnxruntime_pybind11_state import *  # noqa: F403

__all__ = list(_state.__all__)
