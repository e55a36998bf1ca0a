"""Browsers elsewhere that freeze, are killed or go away mid-run: each costs its own
case or test only, is dropped from the pool, and the run ends on the rest.

Frozen, killed and slow browsers are told apart by time (heartbeats, freeze and case
timeouts), so `build.py test` runs this module after the others, alone (its `serial`
phase); the other remote-browser tests run with the rest (``test_remote_browsers.py``).
"""

from __future__ import annotations

import os
import signal
import socket
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from ortweb.host.browser import (
    BrowserPool,
    Runtime,
)
from ortweb.host.build.assets import find_assets
from ortweb.host.conformance.cases import load_cases
from ortweb.host.conformance.runner import run_browser
from ortweb.host.errors import BrowserError
from ortweb.host.serve import StaticServer
from remote_browsers import CdpChromium, PlaywrightServer, Remote, endpoint, free_port

pytest_plugins = ["pytester"]

pytestmark = pytest.mark.serial


def test_tether_relays_until_cut_and_watchdog_sees_silence(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from ortweb.host.browser.watchdog import Tether, Watchdog, freeze_timeout

    # A peer that answers, through the tether; cut, the connection ends at once.
    with socket.create_server(("127.0.0.1", 0)) as peer:
        tether = Tether("127.0.0.1", peer.getsockname()[1])
        client = socket.create_connection(("127.0.0.1", tether.port), timeout=10)
        far, _ = peer.accept()
        client.sendall(b"ping")
        assert far.recv(4) == b"ping"
        far.sendall(b"pong")
        assert client.recv(4) == b"pong"
        tether.cut()
        tether.cut()
        assert client.recv(4) == b""  # closed under the waiting client
        client.close()
        far.close()
        # A peer that accepts but never answers (as a stopped process's socket does).
        frozen: list[str] = []
        t0 = time.monotonic()
        dog = Watchdog(f"http://127.0.0.1:{peer.getsockname()[1]}/", 1.0, frozen.append)
        while not frozen and time.monotonic() - t0 < 10:
            time.sleep(0.05)
        assert frozen and "no answer to a heartbeat" in frozen[0], frozen
        dog.stop()
    # Refused: gone, not frozen (Playwright sees the connection close).
    quiet: list[str] = []
    dog = Watchdog(f"http://127.0.0.1:{free_port()}/", 0.5, quiet.append)
    time.sleep(1.5)  # three heartbeats refused
    with dog.deadline("a quick call"):
        pass
    time.sleep(1.0)
    assert quiet == []
    with dog.deadline("a slow call"):
        time.sleep(1.0)
    assert quiet == ["a slow call did not return in 0.5 s"]
    dog.stop()
    monkeypatch.setenv("ORTWEB_BROWSER_FREEZE_TIMEOUT", "7.5")
    assert freeze_timeout() == 7.5 and freeze_timeout(3) == 3
    monkeypatch.setenv("ORTWEB_BROWSER_FREEZE_TIMEOUT", "soon")
    with pytest.raises(BrowserError, match="ORTWEB_BROWSER_FREEZE_TIMEOUT: expected seconds"):
        freeze_timeout()



@pytest.mark.browser
def test_a_server_killed_mid_run_costs_its_case_only(tmp_path: Path,
                                                     cdp_browser: CdpChromium) -> None:
    doomed = PlaywrightServer(tmp_path / "log")
    cases = load_cases(["node"], r"^test_(abs|relu|neg|sigmoid|tanh|exp|sqrt|floor|ceil|"
                                 r"reciprocal|sign|softsign)$")
    assert len(cases) == 12
    opened: list[Any] = []
    killed = threading.Event()

    def kill_at_first_case(message: Any) -> None:
        # The runner prints "<slot tag>start <i>" as a case begins: killed then, the
        # server dies mid-case however fast the page got there.
        if ":start " in message.text and not killed.is_set():
            killed.set()
            threading.Thread(target=doomed.kill).start()

    def on_page(page: Any) -> None:
        opened.append(page)
        if len(opened) == 2:  # slot 1's page, on the doomed server: kill it while it works
            page.page.on("console", kill_at_first_case)

    logs: list[str] = []
    try:
        with StaticServer(find_assets().mounts()) as srv, \
                BrowserPool([cdp_browser.url, doomed.url], log=logs.append) as pool:
            runtime = Runtime(find_assets(), srv, pool)
            results, pages = run_browser(runtime, cases, "wasm", jobs=2, batch_size=3,
                                         on_page=on_page, log=logs.append)
            # The run may end before slot 1 asks for a browser again, and before
            # Playwright has said that the killed one went away (timing): asking now,
            # as a runtime does once a page fails to open (replace: a round trip), must
            # drop the dead endpoint and move the slot to the live one.
            assert pool.replace(1) is pool.browser(0)
            assert pool.browser(1) is pool.browser(0)
    finally:
        doomed.kill()
    assert set(results) == {c.id for c in cases}, logs
    lost = {k: o for k, o in results.items() if o.error_type == "PageFailure"}
    assert len(lost) == 1, (lost, logs)
    (outcome,) = lost.values()
    assert f"its browser at {doomed.url} went away" in outcome.error, outcome.error
    assert outcome.details["browser"]["endpoint"] == doomed.url
    others = [o for k, o in results.items() if k not in lost]
    assert all(not o.error for o in others), [o.error for o in others if o.error]
    # The rest finished on the pool: the doomed endpoint was dropped, its slot moved.
    assert list(pool.dropped) == [1] and doomed.url in pool.dropped[1], logs
    assert pages >= 2, logs  # a replacement page opens only if slot 1 had cases left


_KILL_TESTS = '''
import os
import shutil
import signal
import time

from ortweb.testing import run_in_browser


@run_in_browser
def one(ortweb_page):
    return 1


def test_before(ortweb_page):
    assert one(ortweb_page) == 1


def test_killed(ortweb_page):
    os.killpg(int(os.environ["DOOMED_PGID"]), signal.SIGKILL)
    time.sleep(2)
    one(ortweb_page)


def test_after(ortweb_page):
    assert one(ortweb_page) == 1
'''


def _plugin_run_losing_a_browser(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch,
                                 tmp_path: Path, cdp_browser: CdpChromium, module: str,
                                 source: str, lost: str, timeout: float) -> tuple[str, str]:
    """Run ``source`` (tests ``test_before``, ``lost``, ``test_after``) with the plugin
    over a pool of a doomed Playwright server (its process group in ``DOOMED_PGID``,
    which ``lost`` kills or stops) and ``cdp_browser``: ``lost`` fails and the others
    pass. Returns pytest's output and the doomed server's URL."""
    doomed = PlaywrightServer(tmp_path / "log")
    try:
        monkeypatch.setenv("DOOMED_PGID", str(doomed.proc.pid))
        pytester.makepyfile(**{module: textwrap.dedent(source)})
        result = pytester.runpytest_subprocess(
            "--ortweb-browser-endpoint", doomed.url, "--ortweb-browser-endpoint",
            cdp_browser.url, "-p", "no:cacheprovider", "-rA", timeout=timeout)
    finally:
        doomed.kill()
    out = result.stdout.str()
    outcomes = result.parseoutcomes()
    assert outcomes.get("passed") == 2 and outcomes.get("failed") == 1, out
    result.stdout.fnmatch_lines([f"PASSED {module}.py::test_before",
                                 f"PASSED {module}.py::test_after",
                                 f"FAILED {module}.py::{lost}*"])
    return out, doomed.url


@pytest.mark.browser
def test_pytest_plugin_replaces_a_browser_that_went_away(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
        cdp_browser: CdpChromium) -> None:
    # The test that ran when its browser went away fails; the next runs on the pool's next.
    out, url = _plugin_run_losing_a_browser(pytester, monkeypatch, tmp_path, cdp_browser,
                                            "test_kill", _KILL_TESTS, "test_killed", 600)
    assert "ortweb: chromium 1" in out and f"@ {url}" in out, out


def _browser_group_of(server: Remote) -> int:
    """The process group of the Chromium a Playwright server launched (its own group)."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        ppid, pgid = (int(v) for v in stat[stat.rindex(")") + 2:].split()[1:3])
        if ppid == server.proc.pid and pgid != server.proc.pid:
            return pgid
    raise AssertionError("the Playwright server launched no browser")


@pytest.mark.browser
@pytest.mark.timeout(600)  # broken, it would wait for ever
@pytest.mark.parametrize("frozen", ["server", "server-browser", "devtools"])
def test_a_browser_frozen_mid_run_costs_its_case_only(
        request: pytest.FixtureRequest, tmp_path: Path, frozen: str) -> None:
    """A remote browser (or its server) stopped whole, its connection open, is cut loose
    within the freeze timeout: its case is reported hung, its endpoint dropped, and the
    run ends on the rest of the pool."""
    if frozen == "devtools":
        doomed: Remote = CdpChromium(tmp_path / "profile")
        healthy = endpoint(request, "playwright")
    else:
        doomed = PlaywrightServer(tmp_path / "log")
        healthy = endpoint(request, "cdp")
    cases = load_cases(["node"], r"^test_(abs|relu|neg|sigmoid|tanh|exp|sqrt|floor|ceil|"
                                 r"reciprocal|sign|softsign)$")
    opened: list[Any] = []
    stopped: list[int] = []

    def freeze() -> None:
        group = _browser_group_of(doomed) if frozen == "server-browser" else doomed.proc.pid
        os.killpg(group, signal.SIGSTOP)
        stopped.append(group)

    def on_page(page: Any) -> None:
        opened.append(page)
        if len(opened) == 2:  # slot 1's page, on the doomed endpoint: freeze it as it works
            threading.Timer(0.5, freeze).start()

    logs: list[str] = []
    t0 = time.monotonic()
    try:
        with StaticServer(find_assets().mounts()) as srv, \
                BrowserPool([healthy, doomed.url], freeze_timeout=5, log=logs.append) as pool:
            runtime = Runtime(find_assets(), srv, pool)
            results, _ = run_browser(runtime, cases, "wasm", jobs=2, batch_size=3,
                                     case_timeout=15, on_page=on_page, log=logs.append)
            assert pool.browser(1) is pool.browser(0)
            elapsed = time.monotonic() - t0
    finally:
        for group in stopped:
            os.killpg(group, signal.SIGKILL)
        doomed.kill()
    assert stopped, logs
    assert set(results) == {c.id for c in cases}, logs
    lost = {k: o for k, o in results.items() if o.error_type == "PageFailure"}
    assert len(lost) == 1, (lost, logs)
    (outcome,) = lost.values()
    assert outcome.error.startswith("the page hung: "), outcome.error
    if frozen != "server-browser":  # the heartbeat noticed; else the case timeout did
        assert f"its browser at {doomed.url} stopped answering (no answer to a heartbeat" \
               in outcome.error, outcome.error
    assert outcome.details["browser"]["endpoint"] == doomed.url
    others = [o for k, o in results.items() if k not in lost]
    assert all(not o.error for o in others), [o.error for o in others if o.error]
    assert list(pool.dropped) == [1] and "stopped answering" in pool.dropped[1], logs
    assert elapsed < 240, (elapsed, logs)


_FREEZE_TESTS = _KILL_TESTS.replace("test_killed", "test_frozen").replace(
    "signal.SIGKILL)\n    time.sleep(2)\n", "signal.SIGSTOP)\n")


@pytest.mark.browser
@pytest.mark.timeout(600)
def test_pytest_plugin_drops_a_browser_that_froze(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
        cdp_browser: CdpChromium) -> None:
    assert "SIGSTOP" in _FREEZE_TESTS and "test_frozen" in _FREEZE_TESTS
    monkeypatch.setenv("ORTWEB_BROWSER_FREEZE_TIMEOUT", "5")
    out, url = _plugin_run_losing_a_browser(pytester, monkeypatch, tmp_path, cdp_browser,
                                            "test_freeze", _FREEZE_TESTS, "test_frozen", 400)
    assert f"the page stopped responding: its browser at {url} stopped answering " \
           "(no answer to a heartbeat" in out, out
