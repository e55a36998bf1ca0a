"""``ortweb_page``: how a site's script talks to its page (shipped as a file).

In a site built with ``ortweb site`` (worker mode, the default) the script runs in
a Web Worker: it has no ``document`` and cannot touch the page. It tells the page
what it wants shown with this module instead, which works the same in
``--main-thread`` sites::

    import ortweb_page

    ortweb_page.status("warming up…")             # the page's status line
    ortweb_page.post({"step": 3, "of": 10})        # an event for page JS

Page JS receives what :func:`post` sends as an ``ortweb:message`` event::

    addEventListener('ortweb:message', (event) => console.log(event.detail));
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["post", "status"]


def post(data: Any) -> None:
    """Send ``data`` to the page as the ``detail`` of an ``ortweb:message`` event.

    Parameters
    ----------
    data : JSON-like
        ``None``, bools, numbers, strings, lists/tuples, dicts with string keys, and
        numpy arrays or scalars (sent as lists and numbers).

    Raises
    ------
    TypeError
        When ``data`` holds something else (named in the message).
    """
    # The site's runner, imported before the script runs: one conversion for what
    # `window.ortweb.call` returns and what the script posts.
    import js
    from _ortweb_site import _plain  # type: ignore[import-not-found]

    try:
        text = json.dumps(_plain(data), allow_nan=True)
    except TypeError as exc:
        raise TypeError(f"ortweb_page.post(data): data must be JSON-like ({exc})") from None
    js.ortwebPage.post(js.JSON.parse(text))


def status(text: str) -> None:
    """Show ``text`` in the page's status line."""
    import js

    js.ortwebPage.status(str(text))
