"""``onnxruntime.capi``: the modules native code imports names from."""

from __future__ import annotations

from . import _pybind_state, onnxruntime_inference_collection, onnxruntime_pybind11_state

__all__ = ["_pybind_state", "onnxruntime_inference_collection", "onnxruntime_pybind11_state"]
