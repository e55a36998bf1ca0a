"""Open a site made by ``ortweb site`` in headless Chromium and talk to it.

Used by ``ortweb demo`` and the tests. Every request of the browser context is
recorded; requests that leave the site's own origin are refused and listed in
:attr:`SiteContext.blocked`, unless a CDN mirror serves them from local files
(to check ``--assets cdn`` pages without the network).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from .browser import Browser
from .server import content_type_for

__all__ = ["CdnMirror", "SiteContext", "SiteFailure", "SitePage", "cdn_mirror"]

_TAG = "\u0001ortweb:"

#: A CDN stand-in: absolute URL → local file to answer with, or None (refused).
CdnMirror = Callable[[str], Path | None]


class SiteFailure(RuntimeError):
    """The page failed to start, or a Python call raised.

    Attributes
    ----------
    type : str
        The Python exception class (or ``'PageError'``).
    traceback : str
        The Python traceback, or the error text the page shows.
    """

    def __init__(self, type_: str, traceback: str):
        super().__init__(f"{type_}: {traceback}")
        self.type = type_
        self.traceback = traceback


def cdn_mirror(prefixes: Mapping[str, Path]) -> CdnMirror:
    """A :data:`CdnMirror` answering URL prefixes from folders.

    Parameters
    ----------
    prefixes : mapping of str to Path
        ``"https://cdn.jsdelivr.net/npm/pyodide@0.27.7/"`` → a folder.
    """

    def find(url: str) -> Path | None:
        for prefix, folder in prefixes.items():
            if url.startswith(prefix):
                rel = url[len(prefix):].split("?")[0].split("#")[0]
                path = (folder / rel).resolve()
                if path.is_relative_to(folder.resolve()) and path.is_file():
                    return path
        return None

    return find


@dataclass
class _Log:
    requests: list[str] = field(default_factory=list)
    blocked: list[str] = field(default_factory=list)
    mirrored: list[str] = field(default_factory=list)


class SiteContext:
    """A browser context (own cache and storage) for visits to one site.

    Parameters
    ----------
    browser : Browser
    origin : str
        The site's origin, ``http://127.0.0.1:PORT``; anything else is refused
        unless ``cdn`` serves it.
    cdn : CdnMirror, optional
        Answers CDN URLs from local files, with the CORS and CORP headers
        jsDelivr sends.
    tamper : callable, optional
        ``tamper(url, body) -> body``: changes what the CDN mirror answers (to
        check that the page refuses it).
    """

    def __init__(
        self,
        browser: Browser,
        origin: str,
        *,
        cdn: CdnMirror | None = None,
        tamper: Callable[[str, bytes], bytes] | None = None,
    ):
        parts = urlsplit(origin)
        self.origin = f"{parts.scheme}://{parts.netloc}"
        self.log = _Log()
        self._cdn = cdn
        self._tamper = tamper
        self.context = browser._browser.new_context()
        try:
            self.context.route("**/*", self._route)
        except BaseException:
            self.context.close()
            raise

    def _route(self, route: Any) -> None:
        url = route.request.url
        self.log.requests.append(url)
        if url.startswith(("data:", "blob:")) or urlsplit(url)._replace(
            path="", query="", fragment=""
        ).geturl() == self.origin:
            route.continue_()
            return
        local = self._cdn(url) if self._cdn is not None else None
        if local is None:
            self.log.blocked.append(url)
            route.abort()
            return
        body = local.read_bytes()
        if self._tamper is not None:
            body = self._tamper(url, body)
        self.log.mirrored.append(url)
        route.fulfill(status=200, body=body, headers={
            "Content-Type": content_type_for(local),
            "Access-Control-Allow-Origin": "*",
            "Cross-Origin-Resource-Policy": "cross-origin",
        })

    @property
    def blocked(self) -> list[str]:
        """Requests that tried to leave the site's origin (all refused)."""
        return list(self.log.blocked)

    def open(self, url: str, *, wait: bool = True, timeout: float = 300.0) -> SitePage:
        """Visit ``url``; with ``wait``, return once the script has run (or raise)."""
        page = SitePage(self, url)
        if wait:
            try:
                page.wait_ready(timeout)
            except BaseException:
                page.close()
                raise
        return page

    def close(self) -> None:
        self.context.close()

    def __enter__(self) -> SiteContext:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class SitePage:
    """One visit of a site page; see :meth:`SiteContext.open`."""

    def __init__(self, context: SiteContext, url: str):
        self.site = context
        self.console: list[tuple[str, str]] = []
        self.errors: list[str] = []
        self.requests_before = len(context.log.requests)
        self.page = context.context.new_page()
        self.page.on("console", self._on_console)
        self.page.on("pageerror", lambda err: self.errors.append(str(err)))
        self.page.goto(url)

    def _on_console(self, msg: Any) -> None:
        text = msg.text
        if text.startswith(_TAG):
            stream, _, line = text[len(_TAG):].partition("\u0001")
            self.console.append((stream, line))
        else:
            self.console.append((msg.type, text))

    @property
    def requests(self) -> list[str]:
        """URLs this visit requested (through the context's router)."""
        return self.site.log.requests[self.requests_before:]

    def output(self, stream: str = "stdout") -> str:
        """What Python printed on ``stream``."""
        return "".join(line + "\n" for s, line in self.console if s == stream)

    def wait_ready(self, timeout: float = 300.0) -> dict[str, Any]:
        """Wait until the script has run; returns ``{timings, functions}``.

        Raises
        ------
        SiteFailure
            With the text the page shows, when it failed to start.
        """
        self.page.wait_for_function(
            "() => ['ready', 'failed'].includes(document.documentElement.dataset.ortweb)",
            timeout=timeout * 1000,
        )
        result = self.page.evaluate(
            """() => window.ortweb.ready.then(
                (value) => ({ok: true, value}),
                (err) => ({
                  ok: false, type: err.name,
                  text: document.getElementById('ortweb-error')?.innerText ?? String(err)}))"""
        )
        if not result["ok"]:
            raise SiteFailure(str(result["type"]), str(result["text"]))
        return dict(result["value"])

    def call(self, name: str, *args: Any, timeout: float = 300.0) -> Any:
        """``window.ortweb.call(name, ...args)``; JSON-like values both ways.

        Raises
        ------
        SiteFailure
            With the Python traceback, when the function raised.
        """
        self.page.set_default_timeout(timeout * 1000)
        result = self.page.evaluate(
            """([name, args]) => window.ortweb.call(name, ...args).then(
                (value) => ({ok: true, value}),
                (err) => ({
                  ok: false, type: err.name, traceback: err.pythonTraceback ?? String(err)}))""",
            [name, list(args)],
        )
        if not result["ok"]:
            raise SiteFailure(str(result["type"]), str(result["traceback"]))
        return result["value"]

    def evaluate(self, expression: str, arg: Any = None) -> Any:
        """Evaluate JS in the page (Playwright's ``page.evaluate``)."""
        return self.page.evaluate(expression, arg)

    def progress(self) -> dict[str, dict[str, Any]]:
        """The page's download list: URL → ``{state, loaded, total, text}``."""
        rows = self.page.evaluate(
            """() => [...document.querySelectorAll('.ortweb-asset')].map((li) => ({
                url: li.dataset.url, state: li.dataset.state, loaded: Number(li.dataset.loaded),
                total: Number(li.dataset.total), text: li.innerText}))"""
        )
        return {row["url"]: row for row in rows}

    def screenshot(self, path: str | os.PathLike[str], full_page: bool = True) -> Path:
        """Save a PNG of the page; returns its path."""
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        self.page.screenshot(path=str(target), full_page=full_page)
        return target

    def timings(self) -> dict[str, float]:
        """``window.ortweb.timings``: ms since navigation start per mark."""
        return {k: float(v) for k, v in json.loads(
            self.page.evaluate("() => JSON.stringify(window.ortweb.timings)")).items()}

    def close(self) -> None:
        self.page.close()

    def __enter__(self) -> SitePage:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
