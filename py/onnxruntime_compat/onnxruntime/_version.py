"""The drop-in's version: that of the onnxruntime-web it runs on.

This file holds the default pin of ``assets.lock.json``; the wheel builder
(``ortweb/host/build/wheel.py``) writes the version set-up unpacked into the wheel's
copy, so a checkout set up with ``ORTWEB_ONNXRUNTIME_WEB=1.31.1`` ships
``onnxruntime-1.31.1``.
"""

__version__ = "1.30.0"
