"""``ortweb exec``: a Python script inside Pyodide, its output streamed to the terminal."""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

from ..host import inpage
from ..host.browser import PythonFailure, open_runtime
from ..host.build.assets import find_assets
from ..host.build.offline_packages import PackageError
from ..host.build.requirements import (
    parse_requirements_file,
    read_wheel,
    resolve_for_pyodide,
)
from ..host.errors import PageFailure
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
    for path in args.wheel:
        if not path.is_file():
            raise UsageError(f"--wheel {path} not found")
    no_deps = []
    for path in args.wheel_no_deps:
        if not path.is_file():
            raise UsageError(f"--wheel-no-deps {path} not found")
        try:
            no_deps.append(read_wheel(path))
        except PackageError as exc:
            raise UsageError(f"--wheel-no-deps {path}: {exc}") from None
    if args.requirements is not None and not args.requirements.is_file():
        raise UsageError(f"--requirements {args.requirements} not found")
    argv = list(args.args)
    wheels: list[Path] = list(args.wheel)
    requirements: list[str] = []
    plan = None
    try:
        if args.requirements is not None:
            more, requirements = parse_requirements_file(args.requirements)
            wheels += more
        if wheels or requirements:
            # Checked on the host first: a requirement the offline set cannot meet stops
            # here, by name, before any page (or network request) exists.
            plan = resolve_for_pyodide(find_assets().pyodide, wheels, requirements)
    except PackageError as exc:
        print(f"ortweb exec: error: {exc}\n(nothing of {args.script.name} ran)", file=sys.stderr)
        return 1
    from ._endpoints import endpoints, say_dropped

    with open_runtime(args.browser, endpoints=endpoints(args), log=say_dropped) as runtime, \
            runtime.shared_folder() as (folder, prefix):
        for path in [args.script, *args.file]:
            shutil.copyfile(path, folder / path.name)
        for attempt in (1, 2):
            if attempt == 2:
                # Whatever the crash came from, the retry meets none of it: a new
                # browser, and Python booted afresh instead of from the snapshot.
                runtime.restart()
            page = runtime.new_page(
                providers=args.providers, on_output=_stream, webgpu_build=args.webgpu_build,
                snapshot=attempt == 1,
            )
            try:
                if plan is not None or no_deps:
                    page.install_wheels(
                        plan.wheels if plan else [], requirements, folder, prefix,
                        plan.lock_packages if plan else [], no_deps=no_deps,
                    )
                break
            except PythonFailure as exc:
                page.close()
                print(exc.traceback, file=sys.stderr)
                print(f"ortweb exec: installing the wheels failed (nothing of "
                      f"{args.script.name} ran)", file=sys.stderr)
                return 1
            except PageFailure as exc:
                page.close()
                # Nothing of the script has run yet, so a new page loses nothing.
                print(f"ortweb exec: the page failed while installing the wheels ({exc}); "
                      f"nothing of {args.script.name} ran"
                      + ("; trying once more on a new page, in a new browser"
                         if attempt == 1 else ""),
                      file=sys.stderr)
                if attempt == 2:
                    return 1
            except BaseException:
                page.close()
                raise
        with page:
            for path in [args.script, *args.file]:
                page.write_file(prefix + path.name, f"{_CWD}/{path.name}")
            modules = [p.name for p in args.file if p.suffix == ".py"]
            call = {"cwd": _CWD, "script": args.script.name, "argv": argv, "modules": modules}
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
