"""Pyodide's JavaScript FFI, imported only inside a browser.

The rest of the package takes ``js`` and the ``pyodide.ffi`` helpers from here, so
that it imports on the host too (unit tests, type checks, the CLI), where every
name below is None and :func:`require_browser` says why a call cannot run.
"""

from __future__ import annotations

import sys
from typing import Any, NoReturn

from ..errors import OrtWebError

__all__ = [
    "GLOBAL",
    "IN_BROWSER",
    "can_run_sync",
    "create_once_callable",
    "create_proxy",
    "js",
    "js_object",
    "require_browser",
    "run_js",
    "run_sync",
    "to_js",
]

IN_BROWSER = sys.platform == "emscripten"

if IN_BROWSER:  # pragma: no cover - exercised by the browser tests
    import js
    from pyodide.code import run_js
    from pyodide.ffi import create_once_callable, create_proxy, to_js

    try:
        from pyodide.ffi import can_run_sync, run_sync
    except ImportError:  # older Pyodide: no JSPI support in the API
        can_run_sync = None
        run_sync = None
    GLOBAL = js.globalThis  # one proxy, looked up per call otherwise
else:
    js = None
    GLOBAL = None
    run_js = None
    create_once_callable = None
    create_proxy = None
    to_js = None
    can_run_sync = None
    run_sync = None


def require_browser() -> NoReturn:
    """Raise the error every browser-only call gives on the host.

    Raises
    ------
    OrtWebError
        Always: ortweb's runtime needs Pyodide in a browser.
    """
    raise OrtWebError(
        "ortweb's runtime runs inside Pyodide in a browser; on the host use "
        "`ortweb run` / `ortweb exec`, or onnxruntime itself"
    )


def js_object(value: Any) -> Any:
    """Python lists/dicts → JS Arrays/Objects, so nothing borrowed dies mid-call.

    Parameters
    ----------
    value : Any
        Plain Python data (dicts, lists, numbers, strings, None).

    Returns
    -------
    Any
        The JS value; dicts become plain Objects, not Maps.
    """
    return to_js(value, dict_converter=js.Object.fromEntries)
