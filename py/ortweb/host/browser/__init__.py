"""The one page driver of ortweb's host tools (Playwright's sync API, headless Chromium).

Every host tool that opens a browser goes through this package: ``ortweb run``,
``exec``, ``soak``, ``bench`` and ``conformance``, the pytest plugin
(``ortweb.testing``), and the checks of sites (``ortweb.host.sitepage``,
``ortweb demo``). Its modules, each with one job:

=============  ===========================================================================
``flags``      Chromium's command line (quiet, offline, WebGPU, features in one list)
``launch``     find the system's Chromium and launch it; a fresh on-disk profile
               (:class:`Profile`)
``endpoint``   browsers elsewhere: a Playwright server or a DevTools (CDP) endpoint
``pool``       the browsers of a run's slots, from endpoints (round robin, replaced)
``watchdog``   notice a browser elsewhere that froze (heartbeat, deadlines) and cut it loose
``where``      where pages run: endpoint, browser version, WebGPU adapter
``route``      keep a browser context offline: only the local server (or a CDN mirror),
               relayed from the host to a remote browser
``capture``    the console tag, Python's output, console messages and page errors
``page``       :class:`PyodidePage`: ``web/runner.html`` with Pyodide, numpy and ortweb
``runs``       Python runs the host does not wait inside: deadline, interrupt, hang
``keeper``     :class:`PageKeeper`: one page at a time, replaced when it dies
``runtime``    :class:`Runtime`: the local server, the browsers and shared folders
=============  ===========================================================================

Errors are :class:`~ortweb.host.errors.HostError`\\ s (see :mod:`ortweb.host.errors`).
"""

from __future__ import annotations

from ..errors import BrowserError, PageFailure, PageUnresponsive, PythonFailure
from .capture import TAG, ConsoleLine, PageLog
from .endpoint import ENV_VAR, Endpoint, endpoints_from_env, parse_endpoint, parse_endpoints
from .flags import BASE_FLAGS, FEATURES, WEBGPU_FLAGS, launch_flags, merge_features
from .keeper import PageKeeper
from .launch import Browser, Profile, find_chromium
from .page import PyodidePage
from .pool import BrowserPool
from .route import CdnMirror, OfflineRouter, cdn_mirror
from .runs import GUARD_S, HARD_S
from .runtime import Runtime, open_runtime
from .where import adapter_text, where_line

__all__ = [
    "BASE_FLAGS",
    "ENV_VAR",
    "FEATURES",
    "GUARD_S",
    "HARD_S",
    "TAG",
    "WEBGPU_FLAGS",
    "Browser",
    "BrowserError",
    "BrowserPool",
    "CdnMirror",
    "ConsoleLine",
    "Endpoint",
    "OfflineRouter",
    "PageFailure",
    "PageKeeper",
    "PageLog",
    "PageUnresponsive",
    "Profile",
    "PyodidePage",
    "PythonFailure",
    "Runtime",
    "adapter_text",
    "cdn_mirror",
    "endpoints_from_env",
    "find_chromium",
    "launch_flags",
    "merge_features",
    "open_runtime",
    "parse_endpoint",
    "parse_endpoints",
    "where_line",
]
