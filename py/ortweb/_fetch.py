"""Files fetched by URL, a model or its data: downloaded by the bridge into
JavaScript (never into Python's heap), through ortweb's file cache, with progress."""

from __future__ import annotations

from . import _bridge
from ._progress import Progress
from .errors import OrtWebError

__all__ = ["fetch_url"]


async def fetch_url(
    url: str, *, cache: bool, progress: Progress | None
) -> tuple[int, str, _bridge.JsBuffer | None]:
    """Download ``url``: ``(HTTP status, status text, its bytes or None when not 2xx)``.

    Raises
    ------
    NoSuchFile
        When the download stops short of its Content-Length, or does not match the
        URL's ``#sha256=`` fragment.
    Exception
        What the ``progress`` callback raised (the download is stopped).
    """
    try:
        return await _bridge.fetch_file(
            url, cache=cache, progress=None if progress is None else progress.file(url)
        )
    except OrtWebError:
        if progress is not None:
            progress.check()
        raise
