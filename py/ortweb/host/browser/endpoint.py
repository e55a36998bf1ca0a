"""Browsers elsewhere: endpoints of a Playwright server or a Chrome DevTools (CDP) port.

An endpoint is a URL. Two kinds are spoken, both Playwright's own protocols:

``playwright``
    A Playwright server (``playwright run-server``, ``launchServer``, a grid or
    hosted service speaking Playwright's protocol): ``ws://host:port/path``.
    Connected with ``chromium.connect``; the server launches a Chromium for
    each connection. ortweb sends its launch options (headless, WebGPU flags)
    in the ``x-playwright-launch-options`` header, merged with any the URL
    carries in its own ``launch-options`` query parameter; a server applies
    ``args`` and ``executablePath`` only when started with ``--unsafe``.
``cdp``
    A Chromium started with ``--remote-debugging-port`` (``http://host:port``
    or its ``ws://…/devtools/browser/…`` URL), a Selenium Grid 4 node
    (``ws://grid:4444/session/<id>/se/cdp``) or a hosted service's CDP URL.
    Connected with ``chromium.connect_over_cdp``; the browser is the one running
    there, so WebGPU must have been enabled when it was started.

The kind is given by a prefix (``pw+ws://…``, ``cdp+ws://…``, ``cdp+http://…``)
or decided: ``http(s)://`` and DevTools/Grid paths are CDP; for any other
``ws(s)://`` URL, ``/json/version`` is asked over HTTP: a DevTools endpoint
answers it with JSON, a Playwright server does not.
"""

from __future__ import annotations

import json
import os
import re
import urllib.error
import urllib.request
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from ..errors import BrowserError
from .flags import merge_features

__all__ = ["ENV_VAR", "KINDS", "Endpoint", "connect", "endpoints_from_env", "parse_endpoint",
           "parse_endpoints"]

#: The environment variable the pytest plugin (and every host tool) reads endpoints from.
ENV_VAR = "ORTWEB_BROWSER_ENDPOINT"
#: The kinds of endpoint.
KINDS = ("playwright", "cdp")
_PREFIXES = {"pw+": "playwright", "playwright+": "playwright", "cdp+": "cdp"}
_SCHEMES = ("ws", "wss", "http", "https")


@dataclass(frozen=True)
class Endpoint:
    """One remote browser endpoint.

    Attributes
    ----------
    text : str
        As written (with its prefix, if any): how messages name it.
    url : str
        What is connected to (no prefix).
    kind : str or None
        ``'playwright'``, ``'cdp'``, or None while undecided (see :meth:`resolve`).
    """

    text: str
    url: str
    kind: str | None = None

    def resolve(self, timeout: float = 5.0) -> Endpoint:
        """This endpoint with its kind decided (asking ``/json/version`` when needed).

        Raises
        ------
        BrowserError
            When nothing answers there (naming the endpoint and why).
        """
        if self.kind is not None:
            return self
        return Endpoint(self.text, self.url, _detect(self, timeout))


def parse_endpoint(text: str) -> Endpoint:
    """An :class:`Endpoint` from ``text`` (``[pw+|cdp+]ws://…`` or ``[cdp+]http://…``).

    Raises
    ------
    BrowserError
        When ``text`` is not such a URL.
    """
    raw = text.strip()
    kind: str | None = None
    url = raw
    for prefix, name in _PREFIXES.items():
        if raw.lower().startswith(prefix):
            kind, url = name, raw[len(prefix):]
            break
    parts = urlsplit(url)
    if parts.scheme.lower() not in _SCHEMES or not parts.netloc:
        raise BrowserError(
            f"browser endpoint {text!r}: expected ws://HOST:PORT/… (a Playwright server or a "
            "DevTools endpoint) or http://HOST:PORT (a Chromium's --remote-debugging-port), "
            "optionally prefixed pw+ or cdp+"
        )
    if kind == "playwright" and parts.scheme.lower() not in ("ws", "wss"):
        raise BrowserError(f"browser endpoint {text!r}: a Playwright server is a ws:// URL")
    if kind is None:
        path = parts.path
        if parts.scheme.lower() in ("http", "https") or path.startswith("/devtools/browser/") \
                or path.endswith("/se/cdp"):
            kind = "cdp"
    return Endpoint(raw, url, kind)


def parse_endpoints(values: Iterable[str]) -> list[Endpoint]:
    """Endpoints from values that may each hold several (separated by commas or spaces)."""
    out = []
    for value in values:
        for text in re.split(r"[\s,]+", value):
            if text:
                out.append(parse_endpoint(text))
    return out


def endpoints_from_env(environ: dict[str, str] | None = None) -> list[Endpoint]:
    """The endpoints of ``$ORTWEB_BROWSER_ENDPOINT`` (empty when unset)."""
    env = os.environ if environ is None else environ
    return parse_endpoints([env.get(ENV_VAR, "")])


def _detect(endpoint: Endpoint, timeout: float) -> str:
    parts = urlsplit(endpoint.url)
    scheme = "https" if parts.scheme.lower() == "wss" else "http"
    probe = urlunsplit((scheme, parts.netloc, "/json/version", "", ""))
    try:
        with urllib.request.urlopen(probe, timeout=timeout) as response:
            body = response.read(65536)
    except urllib.error.HTTPError:
        return "playwright"  # something answers, but not as DevTools does
    except (OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        raise BrowserError(f"browser endpoint {endpoint.text}: cannot connect ({reason})"
                           ) from None
    try:
        data = json.loads(body)
    except ValueError:
        return "playwright"
    return "cdp" if isinstance(data, dict) and "webSocketDebuggerUrl" in data else "playwright"


def _launch_url(url: str, defaults: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The URL without its ``launch-options`` parameter, and those options over ``defaults``
    (``args`` are appended to the defaults', their features merged into one list)."""
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    options = dict(defaults)
    rest = []
    for key, value in query:
        if key != "launch-options":
            rest.append((key, value))
            continue
        try:
            given = json.loads(value)
        except ValueError:
            raise BrowserError(f"browser endpoint {url}: launch-options is not JSON") from None
        if not isinstance(given, dict):
            raise BrowserError(f"browser endpoint {url}: launch-options must be a JSON object")
        args = merge_features([*options.get("args", []), *given.pop("args", [])])
        options.update(given)
        options["args"] = args
    return urlunsplit(parts._replace(query=urlencode(rest))), options


def _explain(endpoint: Endpoint, exc: BaseException) -> BrowserError:
    """A :class:`BrowserError` naming the endpoint and what went wrong, from Playwright's."""
    from importlib.metadata import version

    client = version("playwright")
    text = str(exc)
    mismatch = re.search(r"server version: v([\d.]+)", text)
    first = next((line.strip() for line in text.splitlines() if line.strip()), text)
    # A refused connection had no server to answer, whatever its call log's numbers say.
    if "ECONNREFUSED" in text or "Connection refused" in text:
        return BrowserError(f"browser endpoint {endpoint.text}: connection refused ({first})")
    # HTTP 428 is how a Playwright server refuses another version (not a port's 428..).
    if "version mismatch" in text or re.search(r"(?<![\d.:])428(?![\d.])", text):
        server = mismatch.group(1) if mismatch else "another version"
        return BrowserError(
            f"browser endpoint {endpoint.text}: the Playwright server runs Playwright "
            f"{server}, this host's client is Playwright {client}; their major.minor versions "
            f"must match (pip install 'playwright=={server}.*' here, or run a server of "
            f"{client})"
        )
    return BrowserError(f"browser endpoint {endpoint.text}: cannot connect ({first})")


def _through(url: str, port: int | None) -> str:
    """``url`` with its host and port replaced by ``127.0.0.1:port`` (a tether)."""
    if port is None:
        return url
    return urlunsplit(urlsplit(url)._replace(netloc=f"127.0.0.1:{port}"))


def _devtools_url(endpoint: Endpoint, timeout: float) -> str:
    """The browser's DevTools WebSocket URL, asked from an ``http://`` endpoint."""
    parts = urlsplit(endpoint.url)
    url = urlunsplit((parts.scheme, parts.netloc, "/json/version", "", ""))
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return str(json.loads(response.read(65536))["webSocketDebuggerUrl"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        reason = getattr(exc, "reason", exc)
        raise BrowserError(f"browser endpoint {endpoint.text}: cannot connect ({reason})"
                           ) from None


def connect(playwright: Any, endpoint: Endpoint, args: Sequence[str], *,
            timeout: float = 30.0, tether: int | None = None) -> tuple[Any, Endpoint]:
    """Connect to ``endpoint``: a Playwright ``Browser`` and the endpoint, its kind decided.

    Parameters
    ----------
    playwright : started sync Playwright
    endpoint : Endpoint
    args : sequence of str
        Chromium flags a Playwright server is asked to launch with (ignored by
        CDP endpoints, whose browser is already running).
    timeout : float
        Seconds for the connection (and, on a Playwright server, its launch).
    tether : int, optional
        The port of a :class:`~.watchdog.Tether` to the endpoint, to connect through
        (a DevTools endpoint's WebSocket URL is asked first, then taken there).

    Raises
    ------
    BrowserError
        Naming the endpoint: refused, timed out, another Playwright version, ...
    """
    from playwright.sync_api import Error as PlaywrightError

    endpoint = endpoint.resolve(min(timeout, 10.0))
    try:
        if endpoint.kind == "cdp":
            url = endpoint.url
            if tether is not None and urlsplit(url).scheme.lower() in ("http", "https"):
                url = _devtools_url(endpoint, min(timeout, 10.0))
            browser = playwright.chromium.connect_over_cdp(_through(url, tether),
                                                           timeout=timeout * 1000)
        else:
            url, options = _launch_url(endpoint.url, {"headless": True, "args": list(args)})
            browser = playwright.chromium.connect(
                _through(url, tether), timeout=timeout * 1000,
                headers={"x-playwright-launch-options": json.dumps(options)},
            )
    except PlaywrightError as exc:
        raise _explain(endpoint, exc) from None
    return browser, endpoint
