"""The docs' live example: an ortweb site that runs a small model in the reader's
browser, built into the docs site (``build/docs/live/``) by the same machinery as
``ortweb site``.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

__all__ = ["LIVE_FOLDER", "LIVE_SCRIPT", "build_live_example", "live_model"]

#: Where the live example lands inside the built docs.
LIVE_FOLDER = "live"
#: The script the site runs, shown on the getting-started page as it is.
LIVE_SCRIPT = Path(__file__).resolve().parents[4] / "docs" / "live" / "classify.py"


def live_model() -> bytes:
    """The example's model: a two-layer perceptron, ``x`` float32 ``[batch, 8]`` to three
    class probabilities (the same bytes on every build)."""
    from ...testing.samples import mlp_model

    return mlp_model(8, 16, 3, seed=0)


def build_live_example(docs_out: Path) -> Path:
    """Write the live example's site into ``docs_out / LIVE_FOLDER``; its folder."""
    from ..build.site import build_site

    out = docs_out / LIVE_FOLDER
    with tempfile.TemporaryDirectory(prefix="ortweb-live-") as tmp:
        model = Path(tmp) / "classifier.onnx"
        model.write_bytes(live_model())
        build_site(model, LIVE_SCRIPT, out, title="ortweb: a model in your browser",
                   providers=["wasm"], force=True)
    return out
