"""Browsers elsewhere, for the tests: a real Playwright server and a real Chromium
DevTools endpoint, each in its own process (and profile) with its own network to the
host cut (:data:`CUT`), and the pytest fixtures that start them once per module.

A pytest plugin (``conftest.py``'s ``pytest_plugins``) of ``test_remote_browsers.py``
and ``test_remote_browsers_lost.py``; each module that asks starts its own.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from ortweb.host.browser import find_chromium, launch_flags
from ortweb.host.build.assets import find_assets
from ortweb.host.serve import StaticServer

#: The remote browsers' own network: every connection (loopback too) to a dead proxy.
CUT = ("--proxy-server=127.0.0.1:9", "--proxy-bypass-list=<-loopback>")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait(check: Any, proc: subprocess.Popen[bytes], what: str, timeout: float = 60) -> Any:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {proc.returncode}")
        value = check()
        if value:
            return value
        time.sleep(0.1)
    raise RuntimeError(f"{what} did not start in {timeout:.0f} s")


class Remote:
    """A process group (a server or a browser and its children), killed as a whole."""

    proc: subprocess.Popen[bytes]
    url: str

    def kill(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()


class PlaywrightServer(Remote):
    """``playwright run-server`` (the driver's own), launching Debian's Chromium.

    ``--unsafe`` lets the client's launch options (args, executablePath) through;
    the endpoint URL carries the Chromium to launch and the network cut, as a farm's
    URL would carry its own options.
    """

    def __init__(self, log: Path, env: dict[str, str] | None = None):
        from playwright._impl._driver import compute_driver_executable

        node, cli = compute_driver_executable()
        self.port = free_port()
        self.proc = subprocess.Popen(
            [node, cli, "run-server", "--port", str(self.port), "--host", "127.0.0.1",
             "--unsafe"], stdout=log.open("wb"), stderr=subprocess.STDOUT,
            env={**os.environ, **(env or {})}, start_new_session=True)

        def listening() -> bool:
            with socket.socket() as s:
                return s.connect_ex(("127.0.0.1", self.port)) == 0

        _wait(listening, self.proc, "playwright run-server")
        options = {"executablePath": find_chromium(), "args": list(CUT)}
        self.url = (f"ws://127.0.0.1:{self.port}/?launch-options="
                    + quote(json.dumps(options), safe=""))


class CdpChromium(Remote):
    """A headless Chromium of its own with ``--remote-debugging-port`` and WebGPU."""

    def __init__(self, profile: Path):
        self.proc = subprocess.Popen(
            [find_chromium(), "--headless", "--remote-debugging-port=0",
             f"--user-data-dir={profile}", *launch_flags(webgpu=True), *CUT, "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        active = profile / "DevToolsActivePort"

        def port() -> str:
            lines = active.read_text().splitlines() if active.exists() else []
            return lines[0] if lines else ""

        self.url = f"http://127.0.0.1:{_wait(port, self.proc, 'chromium')}"


@pytest.fixture(scope="module")
def pw_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PlaywrightServer]:
    server = PlaywrightServer(tmp_path_factory.mktemp("pw") / "server.log")
    yield server
    server.kill()


@pytest.fixture(scope="module")
def cdp_browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CdpChromium]:
    browser = CdpChromium(tmp_path_factory.mktemp("cdp-profile"))
    yield browser
    browser.kill()


@pytest.fixture(scope="module")
def assets_server() -> Iterator[StaticServer]:
    with StaticServer(find_assets().mounts()) as s:
        yield s


def endpoint(request: pytest.FixtureRequest, kind: str) -> str:
    """The URL of the module's remote browser of ``kind`` (``playwright`` or ``cdp``)."""
    remote = request.getfixturevalue("pw_server" if kind == "playwright" else "cdp_browser")
    return str(remote.url)
