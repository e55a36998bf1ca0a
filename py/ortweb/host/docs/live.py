"""The docs' live example: an ortweb site that runs a small model in the reader's
browser, built into the docs site (``build/docs/live/``) by the same machinery as
``ortweb site``.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

__all__ = ["LIVE_ENV", "LIVE_FOLDER", "LIVE_SCRIPT", "build_live_example", "live_bytes",
           "live_model"]

#: Where the live example lands inside the built docs.
LIVE_FOLDER = "live"
#: Set by ``build_docs`` to the live example it built before MkDocs ran, so that the
#: page's byte counts are that build's own (``live_bytes``).
LIVE_ENV = "ORTWEB_DOCS_LIVE"
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


def live_bytes(_: str | None, root: Path) -> str:
    """The generated part ``live-bytes``: what the live example's first visit downloads,
    read from the manifest of the live example being published (``LIVE_ENV``), or of
    one built here when MkDocs runs without ``build_docs``."""
    from ..build.site import MANIFEST_NAME

    built = os.environ.get(LIVE_ENV)
    with tempfile.TemporaryDirectory(prefix="ortweb-live-bytes-") as tmp:
        folder = Path(built) if built else build_live_example(Path(tmp))
        first = json.loads((folder / MANIFEST_NAME).read_text())["first_visit"]
    return (f"Its first visit downloads {first['br'] / 1e6:.1f} MB with brotli "
            f"({first['raw'] / 1e6:.1f} MB uncompressed, {first['files']} files:\n")
