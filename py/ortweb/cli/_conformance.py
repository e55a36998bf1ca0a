"""``ortweb conformance``: the ONNX backend test suite through ortweb in the browser.

Each case runs through ortweb's Python API inside Pyodide (many cases per page)
and through native onnxruntime on the host; both are compared with the
suite's expected outputs. One summary line per suite and EP, per-case JSON with
``--json``, exit status 1 when a ``fail`` is not in the known-failures file.
"""

from __future__ import annotations

import argparse
import datetime
import json
import platform
import re
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from . import UsageError

__all__ = ["add_parser", "cmd_conformance"]


def add_parser(sub: Any) -> argparse.ArgumentParser:
    """Register ``conformance`` on the ``ortweb`` command's subparsers."""
    from ..host.conformance.cases import SUITES

    p = sub.add_parser(
        "conformance",
        help="run the ONNX backend test suite in the browser vs native onnxruntime",
        description="Run the ONNX backend test suite through ortweb's Python API in "
                    "headless Chromium and through native onnxruntime, and compare both "
                    "with the suite's expected outputs.",
    )
    p.add_argument("--providers", default="wasm",
                   help="comma-separated providers, each run separately: wasm, webgpu, tract, "
                        "wonnx (default: wasm)")
    p.add_argument("--suite", default="node", choices=[*SUITES, "all"],
                   help="which suite (default: node)")
    p.add_argument("--filter", metavar="REGEX",
                   help="only cases whose name (or suite/name) matches REGEX (re.search)")
    p.add_argument("--json", type=Path, metavar="OUT", help="write per-case results to OUT")
    p.add_argument("--op-table", type=Path, metavar="OUT",
                   help="write the operator table of the one provider run to OUT (what "
                        "py/ortweb/_engine_ops/<engine>.json holds; node suite only)")
    p.add_argument("--jobs", type=int, default=1,
                   help="pages running batches at the same time (default: 1)")
    p.add_argument("--batch-size", type=int, default=64, help="cases per page call (default: 64)")
    p.add_argument("--case-timeout", type=float, default=None,
                   help="seconds without progress before a page counts as hung "
                        "(default: 120 on wasm, 600 on webgpu)")
    p.add_argument("--known-failures", type=Path, default=None,
                   help="known-failures TOML (default: tests/conformance/known_failures.toml)")
    p.add_argument("--webgpu-build", choices=["native", "jsep"], default="native",
                   help="ORT-web WebGPU build: native C++ EP (default) or JSEP")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="list every non-passing case, not only unexpected failures")
    from ._endpoints import add_endpoint_argument

    add_endpoint_argument(p)  # --jobs N spreads the pages over the pool, round robin
    return p


def _eps(text: str) -> list[str]:
    from .._providers import PROVIDERS, normalize_provider
    from ..errors import InvalidArgument

    try:
        eps = [normalize_provider(p.strip()) for p in text.split(",") if p.strip()]
    except InvalidArgument:
        eps = []
    if not eps:
        raise UsageError(f"--providers: expected some of {', '.join(PROVIDERS)}, got {text!r}")
    return list(dict.fromkeys(eps))


def cmd_conformance(args: argparse.Namespace) -> int:
    from ..host.browser import open_runtime
    from ..host.conformance.cases import SUITES, load_cases
    from ..host.conformance.classify import Status
    from ..host.conformance.report import (
        KnownFailures,
        default_known_failures_path,
        summary_line,
        write_json,
    )
    from ..host.conformance.runner import run_conformance

    eps = _eps(args.providers)
    suites = list(SUITES) if args.suite == "all" else [args.suite]
    if args.jobs < 1 or args.batch_size < 1:
        raise UsageError("--jobs and --batch-size must be at least 1")
    if args.op_table is not None and (len(eps) != 1 or suites != ["node"]):
        raise UsageError("--op-table: name one provider, and the node suite (an operator "
                         f"table is one engine's), got --providers {args.providers} "
                         f"--suite {args.suite}")
    if args.filter:
        try:
            re.compile(args.filter)
        except re.error as exc:
            raise UsageError(f"--filter: {exc}") from None
    known_path = args.known_failures or default_known_failures_path()
    if args.known_failures is not None and not known_path.exists():
        raise UsageError(f"known-failures file {known_path} not found")
    try:
        known = KnownFailures.load(known_path)
    except (ValueError, OSError) as exc:
        raise UsageError(str(exc)) from None

    t_start = time.monotonic()
    t_load = time.monotonic()
    cases = load_cases(suites, args.filter)
    t_load = time.monotonic() - t_load
    if not cases:
        raise UsageError(f"no case matches --filter {args.filter!r} in {', '.join(suites)}")
    print(f"conformance: {len(cases)} cases from {', '.join(suites)} "
          f"(loaded in {t_load:.1f} s); providers {', '.join(eps)}; jobs {args.jobs}",
          flush=True)

    def timeout(ep: str) -> float:
        if args.case_timeout is not None:
            return float(args.case_timeout)
        return 120.0 if ep == "wasm" else 600.0

    from ..host.browser import where_line
    from ._endpoints import endpoints

    pool = endpoints(args)
    with open_runtime(args.browser, endpoints=pool,
                      log=lambda line: print(f"  {line}", flush=True)) as runtime:
        for slot in range(min(args.jobs, max(1, len(pool)))):
            print(f"  browser: {where_line(runtime.where(slot))}", flush=True)
        results = run_conformance(
            runtime, cases, eps, jobs=args.jobs, batch_size=args.batch_size, case_timeout=timeout,
            webgpu_build=args.webgpu_build, known=known.lookup,
            log=lambda line: print(line, flush=True),
        )
        browser_version = runtime.browser.version

    records: list[dict[str, Any]] = []
    unexpected = 0
    failing: set[tuple[str, str]] = set()
    lines = []
    for ep in eps:
        ep_results, seconds = results[ep]
        by_suite: dict[str, list[Any]] = defaultdict(list)
        for r in ep_results:
            by_suite[r.case.suite].append(r)
            records.append(r.as_dict())
            if r.status is Status.FAIL:
                failing.add((r.case.id, ep))
                if r.unexpected:
                    unexpected += 1
                    print(f"FAIL {r.case.id} [{ep}]: {r.verdict.reason}")
                elif args.verbose:
                    print(f"known {r.case.id} [{ep}]: {r.known}")
            elif args.verbose and r.status is not Status.PASS:
                print(f"{r.status} {r.case.id} [{ep}]: {r.verdict.reason}")
        for suite in suites:
            if by_suite[suite]:
                lines.append(summary_line(suite, ep, [r.status for r in by_suite[suite]]))
        lines.append(f"conformance {'+'.join(suites)} {ep}: took {seconds:.1f} s "
                     f"({len(ep_results)} cases, jobs {args.jobs})")

    wheres = {(r.case.id, ep): r.where for ep in eps for r in results[ep][0]}
    stale = known.stale(cases, eps, failing, wheres)
    for item in stale:
        print(f"note: {item} is in {known_path.name} but did not fail: remove it")
    for line in lines:
        print(line)
    total = time.monotonic() - t_start
    known_fails = len(failing) - unexpected
    print(f"conformance: {unexpected} unexpected failure(s), {known_fails} known; "
          f"total {total:.1f} s")
    if args.op_table is not None:
        import onnx

        from ..host.conformance.op_table import write_op_table

        ep_results = results[eps[0]][0]
        print(write_op_table(args.op_table, ep_results, {
            "provider": eps[0], "command": f"ortweb conformance --providers {eps[0]} "
            f"--op-table {args.op_table.name}",
            "date": datetime.datetime.now(datetime.UTC).date().isoformat(),
            "onnx": onnx.__version__, "chromium": browser_version, "cases": len(ep_results),
        }))
    if args.json is not None:
        import onnx
        import onnxruntime

        from .. import __version__

        ort_web = json.loads((runtime.assets.ort_package / "package.json").read_text())
        meta = {
            "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            "onnxruntime_web": ort_web.get("version"),
            "onnxruntime": onnxruntime.__version__,
            "onnx": onnx.__version__,
            "suites": suites,
            "providers": eps,
            "filter": args.filter,
            "jobs": args.jobs,
            "webgpu_build": args.webgpu_build,
            "seconds": round(total, 1),
            "summary": lines,
            "ortweb": __version__,
            "chromium": browser_version,
            "browser_endpoints": [e.text for e in pool] or ["local"],
            "host": platform.platform(),
            "known_failures_file": str(known_path),
        }
        write_json(args.json, meta, records)
        print(f"per-case results: {args.json}")
    sys.stdout.flush()
    return 1 if unexpected else 0
