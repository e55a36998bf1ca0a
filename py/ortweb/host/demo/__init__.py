"""The digits demo: train, export, build the site, check it headless.

``python3 build.py demo`` (``ortweb demo``) trains a small classifier on
scikit-learn's bundled handwritten digits (no download), exports it to ONNX
with ``onnx.helper``, builds a static site with ``ortweb site`` where a person
draws a digit, then opens the site in headless Chromium and checks it: the
held-out digits fed through the page on wasm and on WebGPU give native
onnxruntime's predictions, strokes drawn with the mouse give a prediction on
screen, no request leaves 127.0.0.1, and time to first inference is measured
in the browser, and a first visit is timed again over loopback and on the
``broadband`` link of ``ortweb bench --sections network`` (with its compressed
bytes: :meth:`DemoCheck.network_line`).

Modules: :mod:`.model` (training, export, the cache), :mod:`.site` (the site's
inputs, its build, serving it), :mod:`.check` (the headless check). The page's
own Python is ``host/inpage/digits_app.py`` and ``digits_features.py``.
"""

from __future__ import annotations

from .check import (
    SEVEN,
    DemoCheck,
    ProviderCheck,
    check_demo,
    check_provider,
    clear_and_draw,
    draw_digit,
    measure_first_visit,
    shown_count,
    wait_prediction,
)
from .model import (
    INPUT,
    OUTPUT,
    DigitsModel,
    digits_model,
    export_mlp,
    native_probabilities,
    train_digits,
)
from .site import PAGE_SAMPLES, ServedSite, build_demo_site, demo_inputs, serve_site

__all__ = [
    "INPUT",
    "OUTPUT",
    "PAGE_SAMPLES",
    "SEVEN",
    "DemoCheck",
    "DigitsModel",
    "ProviderCheck",
    "ServedSite",
    "build_demo_site",
    "check_demo",
    "check_provider",
    "clear_and_draw",
    "demo_inputs",
    "digits_model",
    "draw_digit",
    "export_mlp",
    "measure_first_visit",
    "native_probabilities",
    "serve_site",
    "shown_count",
    "train_digits",
    "wait_prediction",
]
