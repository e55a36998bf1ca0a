"""The terminal's progress bar for ``ortweb run``: what the page reports while the
model and its data files load (``progress=`` of ``InferenceSession.create``)."""

from __future__ import annotations

import json
import sys
from typing import TextIO

__all__ = ["MARK", "PROGRESS_MIN_BYTES", "ProgressBar"]

#: How a line the page prints on stderr says it carries a progress event.
MARK = "ortweb-progress "
#: Files loading together at or above this size get a bar; smaller ones load too
#: fast to watch.
PROGRESS_MIN_BYTES = 4 << 20
_WIDTH = 30


def _mb(n: int) -> str:
    return f"{n / 1e6:.1f}"


class ProgressBar:
    """Draws ``name [#####.....] 12.3/300.0 MB`` per file on ``stream``, on one line
    redrawn in place, ended when the file is complete.

    Parameters
    ----------
    stream : text stream, optional
        Where to draw (default: ``sys.stderr``).
    """

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self._current = ""

    def on_output(self, stream: str, line: str) -> None:
        """``PyodidePage``'s ``on_output``: progress lines are drawn, others ignored."""
        if stream == "stderr" and line.startswith(MARK):
            file, loaded, total = json.loads(line[len(MARK):])
            self.draw(str(file), int(loaded), None if total is None else int(total))

    def draw(self, file: str, loaded: int, total: int | None) -> None:
        name = file.rsplit("/", 1)[-1]
        if total:
            done = min(_WIDTH, _WIDTH * loaded // total)
            bar = "#" * done + "." * (_WIDTH - done)
            text = f"  {name} [{bar}] {_mb(loaded)}/{_mb(total)} MB"
        else:
            text = f"  {name} {_mb(loaded)} MB"
        end = "\n" if total is not None and loaded >= total else ""
        self.stream.write("\r" + text.ljust(len(self._current)) + end)
        self._current = "" if end else text
        self.stream.flush()
