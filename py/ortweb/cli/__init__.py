"""The ``ortweb`` command: run models and scripts in headless Chromium from the host.

    ortweb run MODEL [--providers wasm|webgpu|...] [-i in.npz] [-o out.npz] [--seed N]
                     [--verify [PROVIDER]] [--compare-native] [--rtol R] [--atol A] [--dim NAME=N]
                     [--trust OP,OP] [--json]
                     [--progress | --no-progress]
    ortweb exec SCRIPT.py [--providers ...] [--file PATH]... [--wheel PATH]...
                     [--wheel-no-deps PATH]... [--requirements FILE] [-- ARGS...]
                     (everything after -- is the script's sys.argv[1:])
    ortweb site --model M --script APP.py [--out DIR] [--title T] [--providers ...]
                [--template NAME|PATH] [--assets local|cdn] [--file PATH]... [--wheel PATH]...
                [--force]
    ortweb demo [--serve] [--out DIR] [--no-check] [--host H] [--port N] [--json]
    ortweb serve DIR [--host 127.0.0.1] [--port N]
    ortweb lite [--out DIR] [--notebooks DIR]... [--model PATH]... [--package NAME]...
                [--no-examples] [--serve]
    ortweb conformance [--providers wasm|webgpu] [--suite node|light|...|all] [--filter REGEX]
                       [--json OUT] [--jobs N]
    ortweb bench [--quick] [--json OUT] [--markdown OUT] [--sections LIST]
    ortweb --version

run, exec, demo, conformance and bench also take --browser-endpoint URL (repeatable; default
$ORTWEB_BROWSER_ENDPOINT): browsers elsewhere, a Playwright server or a DevTools endpoint.

Exit status: 0 on success, 1 when a run fails or outputs differ from native
onnxruntime beyond the tolerance, 2 on usage errors.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from .. import __version__
from ..host.errors import BrowserError, HostError

__all__ = ["main"]


class UsageError(HostError):
    """Bad command-line input: exit status 2."""


def _providers(text: str) -> list[str]:
    from .._providers import normalize_providers
    from ..errors import InvalidArgument

    try:
        return normalize_providers([p.strip() for p in text.split(",") if p.strip()])
    except InvalidArgument as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _ops(text: str) -> list[str]:
    return [op.strip() for op in text.split(",") if op.strip()]


def _dim(text: str) -> tuple[str, int]:
    name, sep, value = text.partition("=")
    if not sep or not name or not value.isdigit():
        raise argparse.ArgumentTypeError(f"expected NAME=SIZE, got {text!r}")
    return name, int(value)


def _parser() -> argparse.ArgumentParser:
    from ._endpoints import add_endpoint_argument

    parser = argparse.ArgumentParser(
        prog="ortweb", description="Run ONNX models from Python in the browser."
    )
    parser.add_argument("--version", action="store_true", help="print versions and exit")
    parser.add_argument("--browser", help="Chromium binary (default: chromium on PATH)")
    sub = parser.add_subparsers(dest="command")

    run = sub.add_parser("run", help="run a model in the browser through ortweb's Python API")
    run.add_argument("model", type=Path)
    run.add_argument("--providers", type=_providers, default=["wasm"],
                     help="comma-separated providers tried in order (default: wasm)")
    run.add_argument("-i", "--inputs", type=Path, help=".npz of inputs (default: random)")
    run.add_argument("-o", "--outputs", type=Path, help="write the outputs to this .npz")
    run.add_argument("--seed", type=int, default=0, help="seed of the random inputs")
    run.add_argument("--trust", type=_ops, default=[], metavar="OP[,OP]",
                     help="operators to run on the engines named in --providers although "
                          "their operator table distrusts them (ProviderPolicy(trust=...)); "
                          "check the outputs with --compare-native")
    run.add_argument("--dim", type=_dim, action="append", default=[],
                     help="size of a symbolic dimension, NAME=SIZE: for random inputs, and "
                          "pinned in the session (a free-dimension override, which also "
                          "gives wonnx the static shape it needs)")
    run.add_argument("--verify", nargs="?", const="wasm", default=None, metavar="PROVIDER",
                     help="check the first run against a reference provider in the page "
                          "(default wasm) within --rtol/--atol, falling back to it on a "
                          "difference (ProviderPolicy(verify=...))")
    run.add_argument("--compare-native", action="store_true",
                     help="compare with native onnxruntime on the same inputs")
    run.add_argument("--rtol", type=float, default=1e-3)
    run.add_argument("--atol", type=float, default=1e-5)
    run.add_argument("--json", action="store_true", help="print a JSON report")
    run.add_argument("--webgpu-build", choices=["native", "jsep"], default="native",
                     help="ORT-web WebGPU build: native C++ EP (default) or JSEP")
    run.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                     help="a progress bar on stderr while a model (with its data files) of "
                          "4 MB or more loads (default: when stderr is a terminal)")
    add_endpoint_argument(run)

    ex = sub.add_parser("exec", help="run a Python script inside Pyodide with ortweb")
    ex.add_argument("script", type=Path)
    ex.add_argument("--providers", type=_providers, default=None,
                    help="default providers for sessions the script creates")
    ex.add_argument("--file", type=Path, action="append", default=[],
                    help="copy a file into the script's working directory")
    ex.add_argument("--wheel", type=Path, action="append", default=[],
                    help="install a wheel with micropip, offline, before the script runs; "
                         "its requirements must be met by the offline Pyodide packages or "
                         "other --wheel files (repeatable)")
    ex.add_argument("--wheel-no-deps", type=Path, action="append", default=[], metavar="PATH",
                    help="install a wheel as it is, after the others, without checking or "
                         "installing its requirements (micropip deps=False, pip's --no-deps): "
                         "for a wheel whose pins the page cannot meet although it runs, e.g. "
                         "numpy<2 (repeatable)")
    ex.add_argument("--requirements", type=Path, default=None, metavar="FILE",
                    help="wheel paths and requirements to install offline before the script "
                         "runs, one a line")
    ex.add_argument("--webgpu-build", choices=["native", "jsep"], default="native",
                     help="ORT-web WebGPU build: native C++ EP (default) or JSEP")
    add_endpoint_argument(ex)

    site = sub.add_parser("site", help="write a static web site that runs a script on a model")
    from ._site import add_site_arguments

    add_site_arguments(site)

    demo = sub.add_parser("demo", help="build the digits demo site, check it headless vs native")
    demo.add_argument("--json", action="store_true")
    demo.add_argument("--out", type=Path, help="site folder (default: build/demo/site)")
    demo.add_argument("--no-check", action="store_true", help="build only, no headless check")
    demo.add_argument("--serve", action="store_true", help="then serve it for a person")
    demo.add_argument("--host", default="127.0.0.1")
    demo.add_argument("--port", type=int, default=8000)
    add_endpoint_argument(demo)

    from ._lite import add_parser as add_lite_parser

    add_lite_parser(sub)

    from ._conformance import add_parser as add_conformance_parser

    add_conformance_parser(sub)

    from ._soak import add_parser as add_soak_parser

    add_soak_parser(sub)

    from ._bench import add_parser as add_bench_parser

    add_bench_parser(sub)

    serve = sub.add_parser("serve", help="serve a folder with COOP/COEP headers")
    serve.add_argument("directory", type=Path)
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8000)
    return parser


def versions(browser: str | None = None) -> dict[str, str]:
    """ortweb, Pyodide, ORT-web and Chromium versions (without starting a page)."""
    from ..host.browser import find_chromium
    from ..host.build.assets import find_assets

    assets = find_assets()
    lock = json.loads((assets.pyodide / "pyodide-lock.official.json").read_text())
    ort = json.loads((assets.ort_package / "package.json").read_text())
    try:
        chromium = subprocess.run(
            [find_chromium(browser), "--version"], capture_output=True, text=True, check=True
        ).stdout.strip()
    except Exception as exc:  # a missing browser is reported, not fatal, here
        chromium = f"unavailable ({exc})"
    return {
        "ortweb": __version__,
        "pyodide": str(lock["info"]["version"]),
        "onnxruntime-web": str(ort["version"]),
        "chromium": chromium,
    }


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``ortweb`` console script."""
    parser = _parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    # Everything after the first `--` belongs to the script of `ortweb exec`.
    script_args: list[str] = []
    if "--" in argv:
        cut = argv.index("--")
        argv, script_args = argv[:cut], argv[cut + 1:]
    args = parser.parse_args(argv)
    args.args = script_args
    if args.version:
        for name, value in versions(args.browser).items():
            print(f"{name} {value}")
        return 0
    if args.command is None:
        parser.print_help()
        return 2
    try:
        if args.command == "run":
            from ._run import cmd_run

            return cmd_run(args)
        if args.command == "exec":
            from ._exec import cmd_exec

            return cmd_exec(args)
        if args.command == "site":
            from ._site import cmd_site

            return cmd_site(args)
        if args.command == "demo":
            from ._site import cmd_demo

            return cmd_demo(args)
        if args.command == "lite":
            from ._lite import cmd_lite

            return cmd_lite(args)
        if args.command == "conformance":
            from ._conformance import cmd_conformance

            return cmd_conformance(args)
        if args.command == "soak":
            from ._soak import cmd_soak

            return cmd_soak(args)
        if args.command == "bench":
            from ._bench import cmd_bench

            return cmd_bench(args)
        if args.command == "serve":
            from ..host.serve import serve_forever

            if not args.directory.is_dir():
                raise UsageError(f"{args.directory} is not a directory")
            serve_forever(args.directory, host=args.host, port=args.port)
            return 0
    except UsageError as exc:
        print(f"ortweb {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except BrowserError as exc:  # a browser that cannot be launched or reached, named
        print(f"ortweb {args.command}: error: {exc}", file=sys.stderr)
        return 1
    parser.error(f"unknown command {args.command}")
    return 2
