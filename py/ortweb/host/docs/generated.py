"""The parts of the docs made from the code and from measured runs, never typed.

A page asks for one with a line ``<!-- generated: NAME [ARGUMENT] -->``:

``cli``
    The command-line reference, from ``ortweb.cli``'s argparse definitions.
``onnxruntime-compat``
    The drop-in ``onnxruntime``'s compatibility table (``_compat_table.py``).
``offline-packages``
    The Pyodide packages set-up makes available offline (``offline-packages.json``).
``bench FILE``
    The figures of one ``ortweb bench --json`` run kept as ``docs/bench/FILE.json``.
``engines FILE``
    The per-engine table of a ``--sections engines`` run kept as ``docs/bench/FILE.json``.
``live-bytes``
    What the docs' live example downloads on a first visit, from its site's manifest
    (a sentence that the page goes on with).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import re
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

__all__ = ["MARKER", "GeneratedError", "compat_table_module", "expand", "generators"]

MARKER = re.compile(r"^<!-- generated: ([a-z-]+)(?: (\S+))? -->$", re.M)


class GeneratedError(ValueError):
    """A page asked for a generated part that does not exist or cannot be made."""


def _cli_reference(_: str | None, root: Path) -> str:
    from ...cli import _parser

    parser = _parser()
    out = [_options_table(parser)]
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    helps = {c.dest: c.help for c in sub._choices_actions}
    for name, command in sub.choices.items():
        if not helps.get(name):
            raise GeneratedError(f"`ortweb {name}` has no help text (add_parser(help=...))")
        command.prog = f"ortweb {name}"
        usage = command.format_usage().removeprefix("usage: ").strip()
        out += [f"## ortweb {name}", "", f"{helps[name]}.", "", "```text", usage, "```", "",
                _options_table(command)]
    return "\n".join(out)


def _options_table(parser: argparse.ArgumentParser) -> str:
    rows = ["| argument | what it does | default |", "|---|---|---|"]
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction | argparse._SubParsersAction):
            continue
        name = ", ".join(f"`{o}`" for o in action.option_strings) or f"`{action.dest}`"
        if action.metavar and action.option_strings:
            name += f" `{action.metavar}`"
        default = action.default
        shown = ("" if default in (None, False, [], argparse.SUPPRESS)
                 else f"`{default}`")
        text = (action.help or "").replace("|", "\\|").replace("\n", " ")
        if action.choices and not isinstance(action.choices, dict):
            text += f" (one of {', '.join(f'`{c}`' for c in action.choices)})"
        rows.append(f"| {name} | {text} | {shown} |")
    return "\n".join(rows) + "\n"


def compat_table_module(root: Path) -> ModuleType:
    """The drop-in's ``_compat_table`` module of the checkout at ``root``, loaded by path
    (on the host ``onnxruntime`` is the native package)."""
    path = root / "py" / "onnxruntime_compat" / "onnxruntime" / "_compat_table.py"
    spec = importlib.util.spec_from_file_location("_ortweb_compat_table", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _compat_table(_: str | None, root: Path) -> str:
    return str(compat_table_module(root).render_markdown())


def _offline_packages(_: str | None, root: Path) -> str:
    from ..build.offline_packages import read_offline

    pyodide_dir = root / "build" / "pyodide"
    try:
        offline = read_offline(pyodide_dir)
    except (OSError, ValueError) as exc:
        raise GeneratedError(f"no offline package list in {pyodide_dir} ({exc}): run "
                             "`python3 build.py setup`") from exc
    names = ", ".join(f"`{n}`" for n in sorted(offline.available))
    total = len(offline.available) + len(offline.unavailable)
    return (f"**{len(offline.available)} of the {total} packages** of Pyodide 0.27.7's lock "
            f"are available offline: {names}. The other {len(offline.unavailable)} are not.\n")


def _bench(name: str | None, root: Path) -> str:
    from ..bench.report import render_markdown

    result = _read_run(name, root)
    # Only what the run measured: a partial run lists every other figure as "not run".
    return "\n".join(line for line in render_markdown(result).splitlines()
                     if "| not run |" not in line) + "\n"


def _read_run(name: str | None, root: Path) -> dict[str, Any]:
    if not name:
        raise GeneratedError("needs the name of a file in docs/bench/")
    path = root / "docs" / "bench" / f"{name}.json"
    try:
        return dict(json.loads(path.read_text()))
    except (OSError, ValueError) as exc:
        raise GeneratedError(f"cannot read the bench run {path}: {exc}") from exc


def _engines(name: str | None, root: Path) -> str:
    from ..bench.engines import ENGINE_MODELS, ENGINE_NAMES, RATIO_MODEL
    from ..bench.figures import GOALS, verdict

    result = _read_run(name, root)
    figures, skipped = result["figures"], result.get("notes", {}).get("engine_skipped", {})
    labels = {"tiny": "tiny (Add+Relu)", "conv": "conv (2 Conv, 3x32x32)",
              "cnn": "cnn (2 Conv, 3x64x64)", "digits": "digits MLP"}
    rows = ["| engine | " + " | ".join(labels.get(m, m) for m in ENGINE_MODELS)
            + f" | files | node cases | ortweb / own JS call ({RATIO_MODEL}) |",
            "|---" * (len(ENGINE_MODELS) + 4) + "|"]
    measured = {k.split("_")[1] for k in figures if k.startswith("engine_")}
    for engine in (e for e in ENGINE_NAMES if e in measured):
        cells = [f"`{engine}`"]
        for model in ENGINE_MODELS:
            ms = figures[f"engine_{engine}_{model}_ms"]["median"]
            reason = skipped.get(f"{engine}/{model}", "")
            op = re.search(r"\(\w+: (\w+)-\d+ ", reason)
            cells.append(f"{ms:.3g} ms" if ms is not None
                         else f"refused ({op.group(1)})" if op else "refused")
        size = figures[f"engine_{engine}_bytes"]["median"]
        passed = figures[f"engine_{engine}_node_pass"]["median"]
        key = f"engine_{engine}_bridge_ratio"
        cells += [f"{size / 1e6:.1f} MB", f"{passed:,.0f}",
                  f"{figures[key]['median']:.3g} ({verdict(key, figures[key])}: goal "
                  f"{GOALS[key].text()})"]
        rows.append("| " + " | ".join(cells) + " |")
    meta = result["meta"]
    return (f"Run of {meta['date']}, {meta['machine']['cpu_count']} CPUs, {meta['browser']} "
            f"(`{meta['command']}`).\n\n" + "\n".join(rows) + "\n")


def generators() -> dict[str, Callable[[str | None, Path], str]]:
    """The generated parts by name."""
    from .live import live_bytes

    return {"cli": _cli_reference, "onnxruntime-compat": _compat_table,
            "offline-packages": _offline_packages, "bench": _bench,
            "engines": _engines, "live-bytes": live_bytes}


def expand(markdown: str, root: Path, where: str) -> str:
    """``markdown`` with each marker replaced by its part.

    Raises
    ------
    GeneratedError
        For a marker of no known part, or a part that cannot be made; the message
        starts with ``where`` and the marker's line.
    """
    table = generators()

    def one(match: re.Match[str]) -> str:
        line = markdown.count("\n", 0, match.start()) + 1
        make = table.get(match.group(1))
        if make is None:
            raise GeneratedError(f"{where}:{line}: no generated part {match.group(1)!r} "
                                 f"(known: {', '.join(table)})")
        try:
            return make(match.group(2), root)
        except GeneratedError as exc:
            raise GeneratedError(f"{where}:{line}: {exc}") from exc

    return MARKER.sub(one, markdown)
