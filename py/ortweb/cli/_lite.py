"""``ortweb lite``: build a JupyterLite site where ``import ortweb`` just works, offline."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

__all__ = ["add_parser", "cmd_lite"]


def add_parser(sub: Any) -> None:
    """Register ``ortweb lite`` on the CLI's subparsers."""
    lite = sub.add_parser(
        "lite", help="build an offline JupyterLite site with ortweb, example notebooks included"
    )
    lite.add_argument("--out", type=Path, default=Path("ortweb-lite"),
                      help="the site's folder (default: ./ortweb-lite; replaces a previous site)")
    lite.add_argument("--notebooks", type=Path, action="append", default=[],
                      help="a folder of notebooks or one .ipynb, for the file browser (repeatable)")
    lite.add_argument("--model", type=Path, action="append", default=[],
                      help="a model file for the file browser (repeatable)")
    lite.add_argument("--file", type=Path, action="append", default=[],
                      help="any other file for the file browser, beside the notebooks: "
                           "a wheel given here is not installed (repeatable)")
    lite.add_argument("--package", action="append", default=[],
                      help="another Pyodide package the notebooks import (repeatable)")
    lite.add_argument("--wheel", type=Path, action="append", default=[],
                      help="a wheel preinstalled in the kernel (an import loads it), also in "
                           "the file browser and for %%pip install (repeatable)")
    lite.add_argument("--no-examples", action="store_true",
                      help="leave out ortweb's example notebooks and their models")
    lite.add_argument("--webgpu-build", choices=["native", "jsep"], default="native",
                      help="ORT-web WebGPU build to ship: native C++ EP (default) or JSEP")
    lite.add_argument("--serve", action="store_true", help="serve the site after building it")
    lite.add_argument("--host", default="127.0.0.1")
    lite.add_argument("--port", type=int, default=8000)


def _mb(n: int) -> str:
    return f"{n / 1e6:.1f} MB"


def cmd_lite(args: argparse.Namespace) -> int:
    """Build the site (exit 1 when the build fails), print what it holds, maybe serve it."""
    from ..host.build.lite import LiteError, build_lite
    from . import UsageError

    for path in [*args.notebooks, *args.model, *args.file, *args.wheel]:
        if not path.exists():
            raise UsageError(f"{path} does not exist")
    try:
        site = build_lite(
            args.out,
            notebooks=args.notebooks,
            models=args.model,
            files=args.file,
            examples=not args.no_examples,
            packages=args.package,
            wheels=args.wheel,
            webgpu_build=args.webgpu_build,
            log=lambda msg: print(f"ortweb lite: {msg}", file=sys.stderr, flush=True),
        )
    except LiteError as exc:
        print(f"ortweb lite: error: {exc}", file=sys.stderr)
        return 1
    print(f"built {site.out} ({_mb(site.size)})")
    for name, size in list(site.sizes.items())[:4]:
        print(f"  {name + '/':12s} {_mb(size)}")
    print(f"notebooks: {', '.join(site.notebooks) or '(none)'}")
    print(f"Pyodide packages: {', '.join(site.packages)}")
    if args.serve:
        from ..host.serve import serve_forever

        # Without cross-origin isolation: isolated, the Pyodide kernel talks to the page
        # over SharedArrayBuffer (coincident), which loses cell replies now and then.
        serve_forever(site.out, host=args.host, port=args.port, isolation=False)
    else:
        print(f"serve it with any static web server, e.g. `ortweb lite --serve --out {site.out}`")
    return 0
