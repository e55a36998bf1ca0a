"""Open a site made by ``ortweb site`` in headless Chromium and talk to it.

Used by ``ortweb demo`` and the tests. Every request of the browser context is
recorded; requests that leave the site's own origin are refused and listed in
:attr:`SiteContext.blocked`, unless a CDN mirror serves them from local files
(to check ``--assets cdn`` pages without the network).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .browser.capture import ConsoleLine, PageLog, watch
from .browser.launch import Browser
from .browser.route import CdnMirror, OfflineRouter, cdn_mirror, origin_of
from .errors import PythonFailure

__all__ = ["CdnMirror", "SiteContext", "SiteFailure", "SitePage", "cdn_mirror"]

#: A site page failed to start (``type`` ``'PageError'``), or a Python call raised.
SiteFailure = PythonFailure


def _failure(type_: str, text: str) -> PythonFailure:
    return PythonFailure(type_, text, f"{type_}: {text}")


class SiteContext:
    """A browser context (own cache and storage) for visits to one site.

    Parameters
    ----------
    browser : Browser
    origin : str
        The site's origin, ``http://127.0.0.1:PORT``; anything else is refused
        unless ``cdn`` serves it.
    cdn, tamper : optional
        A CDN mirror, and what changes its answers; as for
        :class:`~ortweb.host.browser.OfflineRouter`.
    timezone_id : str, optional
        The time zone the site's pages see (an IANA name), instead of the machine's.
    """

    def __init__(
        self,
        browser: Browser,
        origin: str,
        *,
        cdn: CdnMirror | None = None,
        tamper: Callable[[str, bytes], bytes] | None = None,
        timezone_id: str | None = None,
    ):
        self.origin = origin_of(origin)
        self.log = PageLog()
        self.context = browser.new_context(OfflineRouter(origin, self.log, cdn=cdn,
                                                         tamper=tamper), timezone_id=timezone_id)

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
        self._log = PageLog()
        self.requests_before = len(context.log.requests)
        self.page = context.context.new_page()
        watch(self.page, self._log)
        self.page.goto(url)

    @property
    def console(self) -> list[ConsoleLine]:
        """Console messages of this visit, Python's output as ``(stream, line)``."""
        return self._log.console

    @property
    def errors(self) -> list[str]:
        """Uncaught page errors (JavaScript exceptions) of this visit."""
        return self._log.errors

    @property
    def requests(self) -> list[str]:
        """URLs this visit requested (through the context's router)."""
        return self.site.log.requests[self.requests_before:]

    def output(self, stream: str = "stdout") -> str:
        """What Python printed on ``stream``."""
        return self._log.output(stream)

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
            raise _failure(str(result["type"]), str(result["text"]))
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
            raise _failure(str(result["type"]), str(result["traceback"]))
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
