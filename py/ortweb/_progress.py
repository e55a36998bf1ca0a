"""Loading progress: bytes loaded / total for a model and each of its data files,
reported to the caller's ``progress=`` callback."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .errors import InvalidArgument

__all__ = ["Progress", "ProgressCallback"]

#: ``progress(file, loaded, total)``: ``file`` the URL or path (``'model bytes'``,
#: ``"external_data['…']"`` for bytes given), ``total`` None while unknown.
ProgressCallback = Callable[[str, int, "int | None"], Any]


class Progress:
    """The caller's callback, kept monotonic per file; an exception it raises stops
    the load and is raised by it (:meth:`check`).

    Parameters
    ----------
    callback : callable
        ``callback(file, loaded, total)``.

    Raises
    ------
    InvalidArgument
        When ``callback`` is not callable.
    """

    def __init__(self, callback: ProgressCallback) -> None:
        if not callable(callback):
            raise InvalidArgument(
                f"progress: expected a function progress(file, loaded, total), got "
                f"{type(callback).__name__}"
            )
        self._callback = callback
        self._last: dict[str, tuple[int, int | None]] = {}
        self.error: BaseException | None = None

    def _emit(self, name: str, loaded: int, total: int | None) -> None:
        if self.error is not None:
            raise self.error
        # A cached copy found damaged is downloaded afresh: its count starts again
        # at 0, and is reported again once it passes what was shown.
        last = self._last.get(name)
        if last is not None and (loaded < last[0] or (loaded, total) == last):
            return
        self._last[name] = (loaded, total)
        try:
            self._callback(name, loaded, total)
        except BaseException as exc:
            self.error = exc
            raise

    def file(self, name: str) -> Callable[[int, int], None]:
        """The reporter the bridge calls while it downloads ``name``:
        ``report(loaded, total)``, total -1 while unknown."""

        def report(loaded: int, total: int) -> None:
            self._emit(name, int(loaded), None if total < 0 else int(total))

        return report

    def whole(self, name: str, size: int) -> None:
        """Report a file read at once (a path, bytes)."""
        self._emit(name, size, size)

    def check(self) -> None:
        """Raise what the callback raised, if it did."""
        if self.error is not None:
            raise self.error
