"""``ortweb soak``: many runs and session cycles; prints leak and growth figures."""

from __future__ import annotations

import argparse
import json

__all__ = ["add_parser", "cmd_soak"]


def add_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    soak = sub.add_parser("soak", help="many runs and create/close cycles; leak figures")
    soak.add_argument("--providers", choices=["webgpu", "wasm"], default="webgpu")
    soak.add_argument("--runs", type=int, default=10_000)
    soak.add_argument("--cycles", type=int, default=1_000)
    soak.add_argument("--json", action="store_true")


def cmd_soak(args: argparse.Namespace) -> int:
    # Here, not at the top: the soak's model needs onnx, which no other command's
    # parser should wait for.
    from ..host.browser import open_runtime
    from ..host.soak import run_soak

    with open_runtime(args.browser) as runtime, runtime.new_page() as page:
        result = run_soak(runtime, page, args.providers, args.runs, args.cycles)
    problems = result.problems()
    if args.json:
        print(json.dumps({"provider": result.provider, "runs": result.runs,
                          "cycles": result.cycles, "readings": result.readings,
                          "problems": problems}, indent=2))
    else:
        print(f"soak on {result.provider}: {result.runs} runs (GPU outputs disposed each time), "
              f"{result.cycles} session create/close cycles")
        print("columns: live sessions, CPU and GPU OrtValues, finalized, GPU buffers in the "
              "page, their MiB, all wasm memories MiB, seconds")
        print(result.table())
        print("soak: " + ("OK: handles and GPU buffers flat, wasm heap growth within bound"
                          if not problems else "FAILED: " + "; ".join(problems)))
    return 1 if problems else 0
