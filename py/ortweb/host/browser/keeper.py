"""One page at a time, booted on first use and replaced when it dies.

A page that crashed, closed, or is stuck (see :mod:`.runs`) is of no more use;
the holder closes it with :meth:`PageKeeper.discard`, and the next use boots a
fresh one the same way as the first.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from ..errors import BrowserError
from .page import PyodidePage

__all__ = ["PageKeeper"]


class PageKeeper:
    """Holds a page made by ``boot``; replaces it after :meth:`discard`.

    Parameters
    ----------
    boot : callable
        Opens and prepares a page (what every new page gets).
    attempts : int
        Tries per boot: a boot can fail for reasons that pass (the browser
        wheel being rebuilt while the page fetches it), and a run of many
        minutes should not end on that.
    log : callable, optional
        Told about each boot that failed and is tried again.
    retry_on : tuple of exception types
        The failures worth another try (default: any :class:`BrowserError`). A holder
        whose boot fails the same way each time for a fault of its input (a wheel
        that does not install) retries only :class:`PageFailure`, a page that
        crashed or closed while booting.

    Attributes
    ----------
    boots : int
        Pages booted so far.
    discarded : list of str
        Why earlier pages were closed.
    """

    def __init__(self, boot: Callable[[], PyodidePage], *, attempts: int = 1,
                 log: Callable[[str], None] | None = None,
                 retry_on: tuple[type[BaseException], ...] = (BrowserError,)):
        self._make = boot
        self._attempts = max(1, attempts)
        self._log = log
        self._retry_on = retry_on
        self._page: PyodidePage | None = None
        self.boots = 0
        self.discarded: list[str] = []

    @property
    def page(self) -> PyodidePage:
        """The live page, booted now if there is none.

        Raises
        ------
        BrowserError
            When the last attempt to boot failed.
        """
        if self._page is None:
            for attempt in range(1, self._attempts + 1):
                try:
                    self._page = self._make()
                    break
                except BrowserError as exc:
                    if attempt == self._attempts or not isinstance(exc, self._retry_on):
                        raise
                    if self._log is not None:
                        self._log(f"a page failed to boot ({str(exc).splitlines()[0]}); "
                                  "retrying")
                    time.sleep(2.0 * attempt)
            self.boots += 1
        assert self._page is not None
        return self._page

    @property
    def alive(self) -> bool:
        """Whether a page is open now (without booting one)."""
        return self._page is not None

    @property
    def current(self) -> PyodidePage | None:
        """The open page, or None (without booting one)."""
        return self._page

    def discard(self, reason: str) -> None:
        """Close the page (it is broken); the next use boots a new one."""
        self.discarded.append(reason)
        self._drop()

    def close(self) -> None:
        """Close the page, if any; the next use boots a new one."""
        self._drop()

    def _drop(self) -> None:
        page, self._page = self._page, None
        if page is not None:
            try:
                page.close()
            except Exception:
                pass  # a crashed page may not close cleanly; the context is gone either way
