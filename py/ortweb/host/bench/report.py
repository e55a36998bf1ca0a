"""The bench result as a plain-text table, as Markdown, and written to files."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .figures import FIXED_KEYS, GOALS, summarize, verdict

__all__ = ["render_markdown", "render_table", "write_outputs"]

_HEAD = ["figure", "median", "min", "max", "n", "unit", "goal", "verdict"]


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3g}" if abs(value) < 1000 else f"{value:.0f}"
    return str(value)


def _rows(result: Mapping[str, Any]) -> list[list[str]]:
    rows = []
    for key in FIXED_KEYS:
        s = result["figures"].get(key) or summarize([])
        goal = GOALS[key]
        rows.append([key, _fmt(s["median"]), _fmt(s["min"]), _fmt(s["max"]), str(s["n"]),
                     goal.unit, goal.text(), verdict(key, s)])
    return rows


def _detail_rows(result: Mapping[str, Any]) -> list[list[str]]:
    return [[key, _fmt(s["median"]), _fmt(s["min"]), _fmt(s["max"]), str(s["n"])]
            for key, s in result.get("details", {}).items()]


def render_table(result: Mapping[str, Any]) -> str:
    """The fixed figures with their goals as a plain-text table, then the details."""
    def block(head: list[str], rows: list[list[str]]) -> list[str]:
        widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
        return ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
                for r in [head, *rows]]

    lines = block(_HEAD, _rows(result))
    details = _detail_rows(result)
    if details:
        lines += ["", "details (anchors and parts):"]
        lines += block(["detail", "median", "min", "max", "n"], details)
    return "\n".join(lines)


def render_markdown(result: Mapping[str, Any]) -> str:
    """The same as :func:`render_table`, as Markdown tables with a header of facts."""
    meta = result["meta"]
    out = [
        f"Date: {meta['date']}; machine: {meta['machine']['platform']}, "
        f"{meta['machine']['cpu_count']} CPUs; {meta['browser']}; "
        + ", ".join(f"{k} {v}" for k, v in meta["versions"].items())
        + f"; command: `{meta['command']}` ({meta['wall_s']:.0f} s).",
        "",
        "| " + " | ".join(_HEAD) + " |",
        "|" + "---|" * len(_HEAD),
    ]
    out += ["| " + " | ".join(r) + " |" for r in _rows(result)]
    details = _detail_rows(result)
    if details:
        out += ["", "| detail | median | min | max | n |", "|---|---|---|---|---|"]
        out += ["| " + " | ".join(r) + " |" for r in details]
    return "\n".join(out) + "\n"


def write_outputs(result: Mapping[str, Any], json_out: Path | None,
                  markdown_out: Path | None) -> None:
    """Write the JSON and/or Markdown report (folders created as needed)."""
    if json_out is not None:
        json_out.parent.mkdir(parents=True, exist_ok=True)
        json_out.write_text(json.dumps(result, indent=2) + "\n")
    if markdown_out is not None:
        markdown_out.parent.mkdir(parents=True, exist_ok=True)
        markdown_out.write_text(render_markdown(result))
