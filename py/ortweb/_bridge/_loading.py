"""Finding the bridge: ``globalThis.ortwebBridge``, imported and installed if need be.

Where no page installed the bridge (a JupyterLite kernel runs Python in a Web Worker
that ortweb's page code never touches), it is imported from the URL given by
``globalThis.ortwebConfig.bridgeURL`` or the ``ORTWEB_BRIDGE_URL`` environment
variable: see :func:`ensure_bridge`.
"""

from __future__ import annotations

import os
from typing import Any

from ..errors import OrtWebError
from . import _waiting
from ._ffi import GLOBAL, IN_BROWSER, can_run_sync, js, require_browser, run_js, run_sync

__all__ = [
    "BRIDGE_URL_ENV",
    "bridge_url",
    "ensure_bridge",
    "get_bridge",
    "installed",
    "last_seen",
    "peek",
    "start_loading",
]

#: Environment variable naming the URL of ``bridge_js/index.js`` for Pythons that no
#: page set up (``ortweb lite`` sets it through Pyodide's ``env`` option).
BRIDGE_URL_ENV = "ORTWEB_BRIDGE_URL"

# `import()` is syntax, not a function, so Python can only reach it through a tiny JS
# function. The bridge is installed in JS as soon as the module arrives, so it is ready
# even if Python never awaits this; the no-op catch keeps an unused failure from being
# reported as an unhandled rejection (awaiting the promise still raises it).
_LOADER_JS = """(url) => {
  const p = import(url).then((m) => { globalThis.ortwebBridge ?? m.installBridge(); return m; });
  p.catch(() => {});
  return p;
}"""
_loading: Any = None  # the JS promise of the bridge's module, shared by all callers


def bridge_url() -> str | None:
    """The absolute URL to import the bridge from when none is installed, or None.

    ``globalThis.ortwebConfig.bridgeURL`` wins over ``$ORTWEB_BRIDGE_URL``; a relative
    URL is resolved against ``location.href``, which in a Web Worker is the URL of the
    worker's script, not of the page.
    """
    if not IN_BROWSER:
        return None
    config = getattr(js.globalThis, "ortwebConfig", None)
    url = getattr(config, "bridgeURL", None) if config is not None else None
    url = url or os.environ.get(BRIDGE_URL_ENV)
    if not url:
        return None
    return str(js.URL.new(str(url), js.location.href).href)


def start_loading() -> Any:
    """Start importing the bridge from :func:`bridge_url` (once); the JS promise or None."""
    global _loading
    url = bridge_url()
    if _loading is None and url is not None:
        _loading = run_js(_LOADER_JS)(url)
    return _loading


async def ensure_bridge() -> Any:
    """The bridge, imported from :func:`bridge_url` and installed first if needed.

    Raises
    ------
    OrtWebError
        Outside a browser, when no bridge is installed and no URL is configured, or
        when the import fails (the next call tries again).
    """
    global _loading
    if not IN_BROWSER:
        return get_bridge()
    bridge = installed()
    if bridge is not None:
        return bridge
    loading = start_loading()
    if loading is None:
        return get_bridge()  # nothing configured: says how to install the bridge
    try:
        module = await loading
    except Exception as exc:
        _loading = None
        raise OrtWebError(f"cannot import the ortweb bridge from {bridge_url()}: {exc}") from None
    if installed() is None:  # the loader installed it, unless something removed it since
        module.installBridge()
    return installed()


def get_bridge() -> Any:
    """The page's ``ortwebBridge`` object, or a clear error when there is none.

    When the bridge is not installed but a URL is configured (see :func:`bridge_url`),
    it is imported first, waiting synchronously through JSPI.
    """
    if not IN_BROWSER:
        require_browser()
    bridge = installed()
    if bridge is None and bridge_url() is not None:
        if run_sync is None or (can_run_sync is not None and not can_run_sync()):
            raise OrtWebError(
                f"the ortweb bridge is still loading from {bridge_url()} and Python cannot "
                "wait for it here: run `await ortweb._bridge.ensure_bridge()` first"
            )
        return _waiting.block_on(ensure_bridge())
    if bridge is None:
        raise OrtWebError(
            "the ortweb bridge is not loaded in this page: import "
            "bridge_js/index.js and call installBridge() before importing ortweb, or set "
            f"globalThis.ortwebConfig.bridgeURL or ${BRIDGE_URL_ENV} to its URL"
        )
    return bridge


#: The bridge :func:`installed` saw last, for the per-run path: reading a property of
#: ``globalThis`` makes a new proxy each time, a cost a tiny run feels.
_last_seen: Any = None


def last_seen() -> Any:
    """The bridge :func:`installed` returned last (None before, or when there was none)."""
    return _last_seen


def installed() -> Any:
    """``globalThis.ortwebBridge`` or None; the first time one is there, the event loop
    is sped up (:func:`._waiting.notice_bridge`)."""
    global _last_seen
    bridge = _last_seen = getattr(GLOBAL, "ortwebBridge", None)
    if bridge is not None:
        _waiting.notice_bridge(bridge)
    return bridge


def peek() -> Any:
    """``globalThis.ortwebBridge`` or None, with no side effect: for finalizers and
    fire-and-forget calls, which must neither import the bridge nor raise."""
    return getattr(GLOBAL, "ortwebBridge", None)


if IN_BROWSER and peek() is None:  # pragma: no cover
    # Start importing the bridge at `import ortweb`, so that in a notebook it is
    # installed by the time the next cell runs and nothing has to block on it.
    start_loading()
