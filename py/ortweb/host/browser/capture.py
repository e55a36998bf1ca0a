"""What a page says: its console, Python's output in it, and its uncaught errors.

Python's stdout and stderr reach the host as console messages that start with
:data:`TAG` (written by ``bridge_js/console_tag.js``, which the runner page and
every site page import): ``TAG + stream + "\\u0001" + line``. Messages on the
stream :data:`CONTROL` are the host's own signals (the end of a background run)
and never show as output.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

__all__ = ["CONTROL", "TAG", "ConsoleLine", "PageLog", "parse_console", "watch"]

#: The prefix of a console message that carries a line Python printed.
TAG = "\u0001ortweb:"
#: The stream of the host's own signals (see :mod:`.runs`).
CONTROL = "control"


class ConsoleLine(NamedTuple):
    """One console message of the page: ``type`` is the stream Python printed
    on (``stdout``, ``stderr``) or the console method (``log``, ``error``)."""

    type: str
    text: str


def parse_console(kind: str, text: str) -> ConsoleLine:
    """The line a console message carries: Python's output untagged, else as is."""
    if text.startswith(TAG):
        stream, _, line = text[len(TAG):].partition("\u0001")
        return ConsoleLine(stream, line)
    return ConsoleLine(kind, text)


@dataclass
class PageLog:
    """Everything recorded about a page (or a browser context's pages).

    Attributes
    ----------
    console : list of ConsoleLine
    errors : list of str
        Uncaught page errors (JavaScript exceptions).
    requests : list of str
        Every URL requested through the router.
    blocked : list of str
        Requests that tried to leave the local server (all refused).
    mirrored : list of str
        Requests a CDN mirror answered from local files.
    relayed : dict of str to int
        Bytes of response bodies relayed from the host to a remote browser, by URL.
    """

    console: list[ConsoleLine] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)
    blocked: list[str] = field(default_factory=list)
    mirrored: list[str] = field(default_factory=list)
    relayed: dict[str, int] = field(default_factory=dict)

    def output(self, stream: str = "stdout", start: int = 0) -> str:
        """What Python printed on ``stream``, from console message ``start`` on."""
        return "".join(line.text + "\n" for line in self.console[start:] if line.type == stream)


def watch(page: Any, log: PageLog, on_output: Callable[[str, str], None] | None = None,
          on_control: Callable[[str], None] | None = None) -> None:
    """Record ``page``'s console and uncaught errors in ``log``.

    Parameters
    ----------
    page : playwright Page
    log : PageLog
    on_output : callable, optional
        Called with ``(stream, line)`` for each line Python prints, as it comes.
    on_control : callable, optional
        Called with the text of each :data:`CONTROL` message.
    """

    def on_console(msg: Any) -> None:
        line = parse_console(msg.type, msg.text)
        if line.type == CONTROL and msg.text.startswith(TAG):
            if on_control is not None:
                on_control(line.text)
            return
        if on_output is not None and msg.text.startswith(TAG):
            on_output(line.type, line.text)
        log.console.append(line)

    page.on("console", on_console)
    page.on("pageerror", lambda err: log.errors.append(str(err)))
