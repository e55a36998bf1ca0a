"""``--browser-endpoint``: the commands that open a browser can use browsers elsewhere."""

from __future__ import annotations

import argparse
import sys

from ..host.browser import ENV_VAR, Endpoint, endpoints_from_env, parse_endpoints
from ..host.errors import BrowserError

__all__ = ["add_endpoint_argument", "endpoints", "say_dropped"]

_HELP = ("a browser elsewhere to run in instead of launching Chromium here: a Playwright "
         "server (ws://HOST:PORT/…, from `playwright run-server`) or a Chromium's DevTools "
         "endpoint (http://HOST:PORT, ws://…/devtools/browser/…, a Selenium Grid 4 "
         "ws://GRID/session/ID/se/cdp); prefix pw+ or cdp+ to say which. Repeatable: a pool "
         f"(default: ${ENV_VAR}, space- or comma-separated)")


def add_endpoint_argument(parser: argparse.ArgumentParser) -> None:
    """Add ``--browser-endpoint URL`` (repeatable) to ``parser``."""
    parser.add_argument("--browser-endpoint", action="append", default=[], metavar="URL",
                        dest="browser_endpoint", help=_HELP)


def endpoints(args: argparse.Namespace) -> list[Endpoint]:
    """The endpoints of ``--browser-endpoint`` (else ``$ORTWEB_BROWSER_ENDPOINT``).

    Raises
    ------
    UsageError
        When one is not an endpoint URL.
    """
    from . import UsageError

    try:
        given = parse_endpoints(getattr(args, "browser_endpoint", None) or [])
        return given or endpoints_from_env()
    except BrowserError as exc:
        raise UsageError(f"--browser-endpoint: {exc}") from None


def say_dropped(line: str) -> None:
    """Where a pool says an endpoint went away (stderr: stdout may be JSON)."""
    print(f"ortweb: {line}", file=sys.stderr, flush=True)
