"""``onnxruntime.capi.onnxruntime_inference_collection``: the Python classes native
defines here, the drop-in's."""

from __future__ import annotations

from ortweb import OrtValue

from .._api import InferenceSession, IOBinding

Session = InferenceSession

__all__ = ["IOBinding", "InferenceSession", "OrtValue", "Session"]
