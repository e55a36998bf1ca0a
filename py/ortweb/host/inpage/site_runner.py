"""Runs inside the page of a static site made by ``ortweb site`` (shipped as a file).

The site's bootstrap (``web/site/boot.js``) imports this module in Pyodide, runs
the user's script with :func:`run_script` and routes ``window.ortweb.call(name,
...args)`` to :func:`call`. Nothing here is imported on the host: it only needs
the standard library and Pyodide.
"""

from __future__ import annotations

import inspect
import json
import os
import sys
import traceback
from typing import Any

__all__ = ["call", "functions", "run_script"]

#: The script's global namespace: the functions page JS may call live here.
_NAMESPACE: dict[str, Any] = {}
_STATE: dict[str, str] = {"script": ""}


def _user_traceback(exc: BaseException) -> str:
    """The traceback of ``exc``, starting at the first frame of user code.

    Frames of this runner and of Pyodide's ``eval_code_async`` come first and
    mean nothing to the author of the script, as with ``python script.py``.
    """
    tb = exc.__traceback__
    here = __file__
    while tb is not None and (
        tb.tb_frame.f_code.co_filename == here
        or tb.tb_frame.f_code.co_filename.startswith("/lib/python")
    ):
        tb = tb.tb_next
    if tb is None:
        # Raised by the runner itself (an unknown function): no user frame to show.
        return "".join(traceback.format_exception_only(type(exc), exc))
    return "".join(traceback.format_exception(type(exc), exc, tb))


def _failure(exc: BaseException) -> dict[str, Any]:
    return {"ok": False, "type": type(exc).__name__, "message": str(exc),
            "traceback": _user_traceback(exc)}


def functions() -> list[str]:
    """Public functions the script defined (what ``window.ortweb.call`` accepts)."""
    return sorted(
        name for name, value in _NAMESPACE.items()
        if not name.startswith("_") and inspect.isfunction(value)
        and getattr(value, "__module__", None) == "__main__"
    )


async def run_script(spec_json: str) -> str:
    """Run the user's script as ``__main__`` with top-level ``await``.

    Parameters
    ----------
    spec_json : str
        JSON object: ``path`` of the script, ``cwd`` (the folder holding the
        model and files), ``argv`` and ``env`` (added to ``os.environ``).

    Returns
    -------
    str
        JSON ``{"ok": true, "functions": [...]}``, or ``{"ok": false, "type",
        "message", "traceback"}`` when the script raised (``sys.exit(0)`` and
        ``sys.exit(None)`` count as success).
    """
    from pyodide.code import eval_code_async

    spec = json.loads(spec_json)
    os.chdir(spec["cwd"])
    # As `python script.py` does: modules next to the script are importable.
    if spec["cwd"] not in sys.path:
        sys.path.insert(0, spec["cwd"])
    sys.argv = list(spec["argv"])
    os.environ.update(spec["env"])
    with open(spec["path"], encoding="utf-8") as f:
        source = f.read()
    _NAMESPACE.clear()
    _NAMESPACE.update({"__name__": "__main__", "__file__": spec["path"]})
    _STATE["script"] = spec["path"]
    result: dict[str, Any]
    try:
        await eval_code_async(source, globals=_NAMESPACE, filename=spec["path"])
        result = {"ok": True}
    except SystemExit as exc:
        code = exc.code
        if code is None or code == 0:
            result = {"ok": True}
        else:
            result = {"ok": False, "type": "SystemExit", "message": str(code),
                      "traceback": f"SystemExit: {code}\n"}
    except BaseException as exc:
        result = _failure(exc)
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
    result["functions"] = functions()
    return json.dumps(result)


def _from_js(value: Any) -> Any:
    # JS arrays and objects become lists and dicts, typed arrays memoryviews.
    to_py = getattr(value, "to_py", None)
    return to_py() if callable(to_py) else value


def _plain(value: Any) -> Any:
    """``value`` with numpy arrays/scalars and tuples made JSON-like for JS."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    tolist = getattr(value, "tolist", None)
    if callable(tolist) and type(value).__module__ == "numpy":
        return _plain(tolist())
    return value


async def call(name: str, args: Any) -> Any:
    """Call the script's function ``name`` with JS ``args``; an envelope for JS.

    Returns
    -------
    JS object
        ``{ok: true, value}`` with the result converted to plain JS values, or
        ``{ok: false, type, message, traceback}``.
    """
    import js
    from pyodide.ffi import to_js

    try:
        function = _NAMESPACE.get(name)
        if name.startswith("_") or not inspect.isfunction(function):
            raise NameError(
                f"{os.path.basename(_STATE['script']) or 'the script'} defines no function "
                f"{name!r}; page JS can call: {', '.join(functions()) or '(none)'}"
            )
        values = [_from_js(arg) for arg in args]
        result = function(*values)
        if inspect.isawaitable(result):
            result = await result
        envelope: dict[str, Any] = {"ok": True, "value": _plain(result)}
    except BaseException as exc:
        envelope = _failure(exc)
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
    return to_js(envelope, dict_converter=js.Object.fromEntries)
