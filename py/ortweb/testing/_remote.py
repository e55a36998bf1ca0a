"""Exceptions raised inside the page, rebuilt on the host with tracebacks pytest can show.

The page reports each frame as (file, line, function, first line); here every
frame becomes a real frame object whose code carries that file and function name,
chained into a real traceback with the page's line numbers. pytest then reads the
host file's source for each frame as it would for a host failure, and cuts the
traceback at the test function as usual.
"""

from __future__ import annotations

import builtins
import pickle
import sys
from collections.abc import Callable
from types import FrameType, TracebackType
from typing import Any

from ..host.errors import HostError

__all__ = ["BrowserTimeout", "InBrowserError", "rebuild"]


class InBrowserError(HostError):
    """An exception from the page whose class cannot be rebuilt on the host.

    The host raises a subclass named after the page's class (for example
    ``pyodide.ffi.JsException``), with the page's message.
    """


class BrowserTimeout(HostError):
    """A test ran past its timeout inside the browser (``ortweb_timeout``)."""


class _Repr:
    """Shows a page-side ``repr`` as is (for ``--showlocals``)."""

    def __init__(self, text: str):
        self._text = text

    def __repr__(self) -> str:
        return self._text


_surrogates: dict[tuple[str, str], type[InBrowserError]] = {}


def _surrogate(module: str, qualname: str) -> type[InBrowserError]:
    key = (module, qualname)
    if key not in _surrogates:
        cls = type(qualname.rsplit(".", 1)[-1], (InBrowserError,), {})
        cls.__module__ = module
        cls.__qualname__ = qualname
        _surrogates[key] = cls
    return _surrogates[key]


def _frame(filename: str, name: str, firstlineno: int, local_reprs: dict[str, str] | None
           ) -> FrameType:
    code = compile("raise SystemError", filename, "exec")
    code = code.replace(co_name=name, co_qualname=name, co_firstlineno=max(firstlineno, 1))
    namespace: dict[str, Any] = {"__builtins__": builtins}
    namespace.update({k: _Repr(v) for k, v in (local_reprs or {}).items()})
    try:
        exec(code, namespace)
    except SystemError:
        tb = sys.exc_info()[2]
        assert tb is not None and tb.tb_next is not None
        return tb.tb_next.tb_frame
    raise AssertionError("unreachable")  # pragma: no cover


def make_traceback(
    frames: list[dict[str, Any]], map_file: Callable[[str, str, int], tuple[str, int]]
) -> TracebackType | None:
    """A real traceback object for the page's ``frames`` (innermost last)."""
    tb = None
    for f in reversed(frames):
        filename, firstlineno = map_file(f["filename"], f["name"], f["firstlineno"])
        frame = _frame(filename, f["name"], firstlineno, f.get("locals"))
        tb = TracebackType(tb, frame, -1, f["lineno"])
    return tb


def _explain(message: str, compares: list[tuple[str, Any, Any]],
             explain: Callable[[str, Any, Any], list[str] | None]) -> str:
    from ._inpage import COMPARE_MARK

    out: list[str] = []
    for line in message.split("\n"):
        for index, (op, left, right) in enumerate(compares):
            mark = COMPARE_MARK.format(index)
            if mark in line:
                indent = line[: line.index(mark)]
                lines = explain(op, left, right) if left is not None else None
                out.extend(indent + extra for extra in (lines or []))
                break
        else:
            out.append(line)
    return "\n".join(out)


def _load_compares(raw: list[tuple[str, bytes | None, bytes | None]]) -> list[tuple[str, Any, Any]]:
    out: list[tuple[str, Any, Any]] = []
    for op, left, right in raw:
        try:
            if left is None or right is None:
                raise ValueError
            out.append((op, pickle.loads(left), pickle.loads(right)))
        except Exception:
            out.append((op, None, None))
    return out


def rebuild(
    desc: dict[str, Any],
    map_file: Callable[[str, str, int], tuple[str, int]],
    compares: list[tuple[str, bytes | None, bytes | None]] | None = None,
    explain: Callable[[str, Any, Any], list[str] | None] | None = None,
    host_globals: dict[str, Any] | None = None,
) -> BaseException:
    """The host exception for the page's description ``desc`` (from ``_inpage._describe``).

    Parameters
    ----------
    desc : dict
        Class, message, pickled exception, frames, cause and context.
    map_file : callable
        ``(page file, function, first line) → (host file, first line)``.
    compares : list, optional
        The operands of failed comparisons in ``assert`` statements.
    explain : callable, optional
        ``(op, left, right) → lines`` of pytest's detailed explanation, or None.
    host_globals : dict, optional
        The host test module's globals, to explain a NameError for one of them.
    """
    exc: BaseException | None = None
    if desc.get("pickled"):
        try:
            exc = pickle.loads(desc["pickled"])
        except Exception:
            exc = None
    # BaseExceptions that are not Exceptions (KeyboardInterrupt, SystemExit) would
    # stop pytest itself when raised on the host.
    if not isinstance(exc, Exception):
        exc = _surrogate(desc["module"], desc["qualname"])(desc["message"])
    if isinstance(exc, AssertionError) and compares and explain is not None:
        loaded = _load_compares(compares)
        text = str(exc.args[0]) if exc.args else ""
        exc.args = (_explain(text, loaded, explain), *exc.args[1:])
    if isinstance(exc, NameError) and host_globals and desc.get("name") in host_globals:
        exc.add_note(
            f"{desc['name']!r} is a global of the test module on the host; the function "
            "body runs inside the page, which sees only its parameters, the names it "
            "imports, and the module's top-level imports the page can import. Pass it "
            "in as a fixture or parameter, or import it inside the function."
        )
    if desc.get("cause"):
        exc.__cause__ = rebuild(desc["cause"], map_file)
    if desc.get("context"):
        exc.__context__ = rebuild(desc["context"], map_file)
    exc.__suppress_context__ = bool(desc.get("suppress_context"))
    return exc.with_traceback(make_traceback(desc["frames"], map_file))
