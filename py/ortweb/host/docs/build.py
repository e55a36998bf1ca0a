"""``python3 build.py docs``: the docs site, built offline into ``build/docs/``.

MkDocs builds the pages with warnings as errors (a broken link or anchor, a public
name without a docstring, a generated part that cannot be made), then the live
example's site is written beside them. ``--serve`` serves the result with
``ortweb serve``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from .live import LIVE_ENV, LIVE_FOLDER, build_live_example

__all__ = ["CONFIG", "build_docs", "main", "run_mkdocs"]

_ROOT = Path(__file__).resolve().parents[4]
#: The MkDocs configuration of the docs site.
CONFIG = _ROOT / "docs" / "mkdocs.yml"


def run_mkdocs(config: Path, out: Path, *, env: dict[str, str] | None = None,
               capture: bool = False, timeout: float | None = None
               ) -> subprocess.CompletedProcess[str]:
    """``mkdocs build --strict`` of ``config`` into ``out``, with ``env`` added to this
    process's environment; with ``capture``, its output is kept (``stderr`` names each
    warning)."""
    # Material for MkDocs prints a notice about its successor on every build. No
    # --quiet: it drops warnings below the level that --strict counts, so the build passed.
    full_env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", **(env or {})}
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict",
                           "-f", str(config), "-d", str(out)], env=full_env,
                          capture_output=capture, text=True, check=False, timeout=timeout)


def build_docs(out: Path | None = None, config: Path = CONFIG) -> int:
    """Build the docs into ``out`` (default ``build/docs``); MkDocs' exit status."""
    out = out or _ROOT / "build" / "docs"
    # The live example first: the getting-started page states its bytes (``live-bytes``),
    # and MkDocs empties ``out`` before it writes.
    with tempfile.TemporaryDirectory(prefix="ortweb-docs-") as tmp:
        live = build_live_example(Path(tmp))
        code = run_mkdocs(config, out, env={LIVE_ENV: str(live)}).returncode
        if code == 0:
            shutil.copytree(live, out / LIVE_FOLDER)
    return code


def main(argv: list[str] | None = None) -> int:
    """The ``build.py docs`` command line."""
    parser = argparse.ArgumentParser(prog="build.py docs", description=__doc__)
    parser.add_argument("--out", type=Path, default=None, help="default: build/docs")
    parser.add_argument("--serve", action="store_true",
                        help="then serve the site at http://127.0.0.1:PORT/")
    parser.add_argument("--port", type=int, default=8000)
    args = parser.parse_args(argv)
    code = build_docs(args.out)
    if code or not args.serve:
        return code
    from ..serve import serve_forever

    serve_forever(args.out or _ROOT / "build" / "docs", port=args.port)
    return 0


if __name__ == "__main__":
    sys.exit(main())
