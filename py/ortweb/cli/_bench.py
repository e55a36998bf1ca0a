"""``ortweb bench``: speed figures measured side by side, with the goals of issue 9."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ..host.bench import SECTIONS, Plan, render_table, run_bench, write_outputs
from ..host.browser import open_runtime
from ._endpoints import add_endpoint_argument, endpoints, say_dropped

__all__ = ["add_parser", "cmd_bench"]


def add_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    bench = sub.add_parser("bench", help="benchmark: bridge, transfer, GPU chain, threads, "
                                         "cold start, each next to its anchor")
    bench.add_argument("--quick", action="store_true",
                       help="fewer repetitions (under 5 minutes on two shared cores)")
    bench.add_argument("--json", type=Path, metavar="OUT", help="write the JSON report here")
    bench.add_argument("--markdown", type=Path, metavar="OUT",
                       help="write the Markdown table here")
    bench.add_argument("--sections", default=",".join(SECTIONS),
                       help=f"comma-separated subset of {','.join(SECTIONS)} (default: all)")
    add_endpoint_argument(bench)


def cmd_bench(args: argparse.Namespace) -> int:
    sections = [s.strip() for s in args.sections.split(",") if s.strip()]
    unknown = sorted(set(sections) - set(SECTIONS))
    if unknown:
        print(f"ortweb bench: error: unknown sections {unknown}; known: {list(SECTIONS)}",
              file=sys.stderr)
        return 2
    command = "ortweb bench" + (" --quick" if args.quick else "")
    command += f" --json {args.json}" if args.json else ""
    command += f" --markdown {args.markdown}" if args.markdown else ""
    command += f" --sections {','.join(sections)}" if tuple(sections) != SECTIONS else ""
    # Timed as visitors' browsers run: V8's own WebAssembly tiers, whatever
    # $ORTWEB_WASM_TIERS says (the harness section times the plugin's pages both ways).
    with open_runtime(args.browser, endpoints=endpoints(args), log=say_dropped,
                      tiers="all") as runtime:
        result = run_bench(runtime, Plan.quick() if args.quick else Plan(), sections,
                           command=command)
    print(render_table(result))
    if result["notes"]:
        print("notes: " + json.dumps(result["notes"]))
    write_outputs(result, args.json, args.markdown)
    return 0
