"""The local server with ortweb's assets and a browser, together."""

from __future__ import annotations

import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..build.assets import Assets, find_assets
from ..serve import StaticServer
from .launch import Browser
from .page import PyodidePage

__all__ = ["Runtime", "open_runtime"]


class Runtime:
    """A local server with ortweb's assets, a browser, and a way to share files."""

    def __init__(self, assets: Assets, server: StaticServer, browser: Browser):
        self.assets = assets
        self.server = server
        self.browser = browser

    def new_page(self, **kw: Any) -> PyodidePage:
        """A :class:`~.page.PyodidePage` on the server (keywords as there)."""
        return self.browser.new_page(self.server.url, **kw)

    @contextmanager
    def shared_folder(self) -> Iterator[tuple[Path, str]]:
        """A temporary folder served at a fresh URL prefix: ``(path, prefix)``."""
        with tempfile.TemporaryDirectory(prefix="ortweb-") as tmp:
            prefix = f"/_files/{uuid.uuid4().hex}/"
            self.server.add_mount(prefix, Path(tmp))
            try:
                yield Path(tmp), prefix
            finally:
                self.server.remove_mount(prefix)


@contextmanager
def open_runtime(executable: str | None = None, webgpu: bool = True) -> Iterator[Runtime]:
    """Start a loopback server with ortweb's assets and a headless Chromium."""
    assets = find_assets()
    with StaticServer(assets.mounts()) as server, Browser(executable, webgpu=webgpu) as browser:
        yield Runtime(assets, server, browser)
