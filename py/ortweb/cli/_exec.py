"""``ortweb exec``: a Python script inside Pyodide, its output streamed to the terminal."""

from __future__ import annotations

import argparse
import json
import shutil
import sys

from ..host import inpage
from ..host.browser import PythonFailure, open_runtime
from . import UsageError

__all__ = ["cmd_exec"]

_CWD = "/home/pyodide"


def _stream(stream: str, line: str) -> None:
    out = sys.stderr if stream == "stderr" else sys.stdout
    print(line, file=out, flush=True)


def cmd_exec(args: argparse.Namespace) -> int:
    if not args.script.is_file():
        raise UsageError(f"script {args.script} not found")
    for path in args.file:
        if not path.is_file():
            raise UsageError(f"--file {path} not found")
    argv = list(args.args)
    with open_runtime(args.browser) as runtime, runtime.shared_folder() as (folder, prefix):
        for path in [args.script, *args.file]:
            shutil.copyfile(path, folder / path.name)
        with runtime.new_page(
            providers=args.providers, on_output=_stream, webgpu_build=args.webgpu_build
        ) as page:
            for path in [args.script, *args.file]:
                page.write_file(prefix + path.name, f"{_CWD}/{path.name}")
            call = {"cwd": _CWD, "script": args.script.name, "argv": argv}
            try:
                code = f"ORTWEB_ARGS = {json.dumps(json.dumps(call))}\n"
                status = page.run_python(
                    code + inpage.source("exec_script"), filename="<ortweb exec>"
                )
            except PythonFailure as exc:  # the runner itself failed, not the script
                print(exc.traceback, file=sys.stderr)
                return 1
            blocked = page.blocked_requests
    if blocked:
        print(f"ortweb exec: the page tried to reach {blocked} (refused)", file=sys.stderr)
    return int(status or 0)
