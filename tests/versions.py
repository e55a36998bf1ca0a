"""The versions set-up unpacked (``ORTWEB_ONNXRUNTIME_WEB`` chooses onnxruntime-web's),
for tests that check what a tool or a page reports."""

from __future__ import annotations

from ortweb.host.build.assets import find_assets
from ortweb.host.build.wheel import ort_web_version

#: The onnxruntime-web of this checkout's set-up (sha256-checked against assets.lock.json).
ORT_WEB = ort_web_version(find_assets().root) or "not set up"
