"""``@run_in_browser``: a test written on the host whose body runs inside Pyodide."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Coroutine
from typing import Any, ParamSpec, TypeVar, overload

from ._page import OrtwebPage
from ._shipping import ship_function

__all__ = ["run_in_browser"]

P = ParamSpec("P")
R = TypeVar("R")


# An ``async def`` body is awaited in the page: on the host the call returns its
# result, not a coroutine, and the overloads say so to type checkers.
@overload
def run_in_browser(func: Callable[P, Coroutine[Any, Any, R]]) -> Callable[P, R]: ...


@overload
def run_in_browser(func: Callable[P, R]) -> Callable[P, R]: ...


def run_in_browser(func: Callable[P, Any]) -> Callable[P, Any]:
    """Run the decorated function's body inside the page (Pyodide, numpy, ortweb).

    The function's first parameter must be ``ortweb_page`` (the fixture); inside
    the page it is None. Every other parameter is resolved on the host (fixtures,
    ``parametrize`` values, or arguments when the function is called as a helper),
    pickled and passed in; numpy arrays travel as raw bytes when they are large.
    The return value comes back pickled the same way. ``async def`` functions are
    awaited in the page.

    An exception raised in the page is raised on the host with a traceback that
    points at the host file's lines; a failing ``assert`` shows the values, with
    pytest's own explanation (the asserts are rewritten on the host).

    The body sees its parameters, the names it imports, and those top-level imports
    of its module that the page can import (``import numpy as np`` works;
    ``import pytest`` is skipped). Other globals of the module do not exist there.

    Parameters
    ----------
    func : callable
        A function (or ``async def``) whose first parameter is ``ortweb_page``.

    Returns
    -------
    callable
        A host function with the same signature, which pytest collects as the test.

    Raises
    ------
    TypeError
        At decoration, when the first parameter is not ``ortweb_page``.

    Examples
    --------
    >>> @run_in_browser  # doctest: +SKIP
    ... async def test_add(ortweb_page, ortweb_providers, model_path):
    ...     import numpy as np, ortweb
    ...     sess = await ortweb.InferenceSession.create(model_path)
    ...     assert sess.provider == ortweb_providers
    """
    signature = inspect.signature(func)
    names = list(signature.parameters)
    if not names or names[0] != "ortweb_page":
        raise TypeError(
            f"run_in_browser: the first parameter of {func.__qualname__} must be "
            f"'ortweb_page' (the page fixture), not {names[0] if names else 'missing'!r}"
        )

    @functools.wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> Any:
        __tracebackhide__ = True
        bound = signature.bind(*args, **kwargs)
        page = bound.arguments["ortweb_page"]
        if not isinstance(page, OrtwebPage):
            raise TypeError(
                f"run_in_browser: {func.__qualname__} needs the ortweb_page fixture as its "
                f"first argument, got {type(page).__name__}"
            )
        rewrite = page._request.config.getoption("assertmode", "rewrite") != "plain"
        shipped = ship_function(func, rewrite)
        return page.call(shipped, bound.args[1:], bound.kwargs, func.__globals__)

    wrapper.__ortweb_run_in_browser__ = True  # type: ignore[attr-defined]
    return wrapper  # type: ignore[return-value]
