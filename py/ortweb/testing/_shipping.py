"""What ``run_in_browser`` sends to the page: the function's AST and its pickled arguments.

The function is taken from its source file, not from its code object, so that the
page compiles it with the host file's name and line numbers: a traceback in the
page then already points at the host's lines. Its ``assert`` statements are
rewritten on the host with pytest's own rewriter (pytest is not installed in the
page); the rewritten code calls helpers that ``_inpage.py`` provides.
"""

from __future__ import annotations

import ast
import copy
import inspect
import pickle
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["INLINE_LIMIT", "ShippedFunction", "dumps", "ship_function"]

#: Buffers at least this large travel as raw bytes, outside the pickle (also in the page).
INLINE_LIMIT = 1 << 20

# The module pytest's rewritten asserts import, and the page's stand-in for it.
_PYTEST_HELPERS = "_pytest.assertion.rewrite"
_PAGE_HELPERS = "_ortweb_testing"


@dataclass(frozen=True)
class ShippedFunction:
    """A test function ready to be compiled inside the page.

    Attributes
    ----------
    filename : str
        The host source file (the page compiles under this name).
    name : str
        The function's name.
    modname : str
        ``__name__`` of the host module (the page's namespace gets it too).
    firstlineno : int
        The host code object's first line (its first decorator), which pytest
        uses to find where a test's traceback starts.
    module : bytes
        The pickled ``ast.Module`` holding only the function, decorators removed.
    imports : bytes
        The pickled list of the host module's top-level imports, one module each;
        the page runs those it can.
    """

    filename: str
    name: str
    modname: str
    firstlineno: int
    module: bytes
    imports: bytes


_cache: dict[tuple[Callable[..., Any], bool], ShippedFunction] = {}


def _find_def(
    tree: ast.Module, name: str, firstlineno: int
) -> ast.FunctionDef | ast.AsyncFunctionDef:
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == name:
            first = node.decorator_list[0].lineno if node.decorator_list else node.lineno
            if firstlineno in (first, node.lineno):
                return node
    raise TypeError(f"run_in_browser: cannot find the source of {name}() (line {firstlineno})")


def _fix_end(node: ast.AST) -> None:
    # The rewriter's nodes carry a start but no end (fix_missing_locations then
    # copies line 1 from the module); compile() wants the end after the start.
    lineno: int | None = getattr(node, "lineno", None)
    if lineno is None:
        return
    col: int = getattr(node, "col_offset", 0) or 0
    end: int | None = getattr(node, "end_lineno", None)
    end_col: int = getattr(node, "end_col_offset", None) or 0
    if end is None or end < lineno or (end == lineno and end_col < col):
        node.end_lineno = lineno  # type: ignore[attr-defined]
        node.end_col_offset = col  # type: ignore[attr-defined]


def ship_function(func: Callable[..., Any], rewrite: bool = True) -> ShippedFunction:
    """The AST of ``func`` (asserts rewritten when ``rewrite``) and its module's imports.

    Raises
    ------
    TypeError
        When the function's source file cannot be read or parsed.
    """
    key = (func, rewrite)
    if key in _cache:
        return _cache[key]
    filename = inspect.getsourcefile(func)
    if filename is None or not Path(filename).is_file():
        raise TypeError(f"run_in_browser: the source of {func.__qualname__} is not in a file")
    source = Path(filename).read_bytes()
    tree = ast.parse(source, filename)
    found = copy.deepcopy(_find_def(tree, func.__name__, func.__code__.co_firstlineno))
    found.decorator_list = []
    module = ast.Module(body=[found], type_ignores=[])
    docstring = ast.get_docstring(tree) or ""
    if rewrite and "PYTEST_DONT_REWRITE" not in docstring:
        from _pytest.assertion.rewrite import rewrite_asserts

        rewrite_asserts(module, source, filename, None)
        for stmt in module.body:
            if isinstance(stmt, ast.Import):
                for alias in stmt.names:
                    if alias.name == _PYTEST_HELPERS:
                        alias.name = _PAGE_HELPERS
    ast.fix_missing_locations(module)
    for node in ast.walk(module):
        _fix_end(node)
    imports = [
        ast.Module(body=[stmt], type_ignores=[])
        for stmt in tree.body
        if isinstance(stmt, ast.Import)
        or (isinstance(stmt, ast.ImportFrom) and stmt.module != "__future__")
    ]
    shipped = ShippedFunction(
        filename=str(Path(filename).resolve()),
        name=func.__name__,
        modname=getattr(func, "__module__", None) or "__main__",
        firstlineno=func.__code__.co_firstlineno,
        module=pickle.dumps(module, protocol=4),
        imports=pickle.dumps(imports, protocol=4),
    )
    _cache[key] = shipped
    return shipped


def dumps(value: Any, what: str) -> tuple[bytes, list[memoryview]]:
    """Pickle ``value``; buffers of :data:`INLINE_LIMIT` bytes or more are returned apart.

    Raises
    ------
    TypeError
        Naming ``what`` when the value cannot be pickled.
    """
    buffers: list[memoryview] = []

    def out_of_band(buffer: pickle.PickleBuffer) -> bool:
        raw = buffer.raw()
        if raw.nbytes < INLINE_LIMIT:
            return True
        buffers.append(raw)
        return False

    try:
        data = pickle.dumps(value, protocol=5, buffer_callback=out_of_band)
    except Exception as exc:
        raise TypeError(
            f"run_in_browser: {what} ({type(value).__name__}) cannot be pickled for the "
            f"page: {exc}"
        ) from None
    return data, buffers
