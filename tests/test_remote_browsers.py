"""Browsers elsewhere: a real Playwright server and a real Chromium DevTools endpoint.

Both run here, each in its own process (and profile), but with their own network
to the host cut: every connection they would open goes to a proxy on port 9,
where nothing listens, loopback included. So pages, assets and models reach them
only through the host's request routing (``OfflineRouter`` relaying), as they
would reach a browser on another machine. The host-only tests check parsing,
the launch options, adapter-scoped known failures and the report lines.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import numpy as np
import pytest

from ortweb.host.browser import (
    BASE_FLAGS,
    WEBGPU_FLAGS,
    Browser,
    BrowserPool,
    Runtime,
    find_chromium,
    parse_endpoint,
    parse_endpoints,
    where_line,
)
from ortweb.host.browser.endpoint import _launch_url
from ortweb.host.browser.where import describe
from ortweb.host.build.assets import find_assets
from ortweb.host.conformance.cases import load_cases
from ortweb.host.conformance.report import KnownFailures
from ortweb.host.conformance.runner import run_browser
from ortweb.host.errors import BrowserError
from ortweb.host.inputs import load_npz
from ortweb.host.serve import StaticServer
from ortweb.testing import samples

pytest_plugins = ["pytester"]

# Frozen, killed and slow browsers are told apart by time: `build.py test` runs this
# module after the others, alone (see its `serial` phase).
pytestmark = pytest.mark.serial

#: The remote browsers' own network: every connection (loopback too) to a dead proxy.
CUT = ("--proxy-server=127.0.0.1:9", "--proxy-bypass-list=<-loopback>")

# -- host-only --------------------------------------------------------------------------


def test_a_refused_connection_is_not_read_as_a_version_mismatch() -> None:
    from ortweb.host.browser.endpoint import _explain

    endpoint = parse_endpoint("pw+ws://127.0.0.1:42891/")
    refused = _explain(endpoint, RuntimeError(
        "BrowserType.connect: connect ECONNREFUSED 127.0.0.1:42891\nCall log:\n"
        "  - <ws connecting> ws://127.0.0.1:42891/\n  - <ws error> error connect "
        "ECONNREFUSED 127.0.0.1:42891\n  - <ws connect error> after 4286ms"))
    assert "connection refused" in str(refused) and "version" not in str(refused), refused
    old = _explain(endpoint, RuntimeError(
        "BrowserType.connect: WebSocket error: ws://127.0.0.1:42891/ 428 Precondition "
        "Required\n<ws unexpected response> 428 Precondition Required"))
    assert "the Playwright server runs Playwright another version" in str(old), old


def test_endpoint_kinds_and_prefixes() -> None:
    assert parse_endpoint("http://h:9222").kind == "cdp"
    assert parse_endpoint("ws://h:9222/devtools/browser/abc").kind == "cdp"
    assert parse_endpoint("ws://grid:4444/session/42/se/cdp").kind == "cdp"
    assert parse_endpoint("ws://h:3000/").kind is None  # asked on connect
    pw = parse_endpoint("pw+ws://h:3000/x")
    assert (pw.kind, pw.url, pw.text) == ("playwright", "ws://h:3000/x", "pw+ws://h:3000/x")
    assert parse_endpoint("cdp+wss://host/token").kind == "cdp"
    for bad in ("h:3000", "ftp://h/", "pw+http://h:1"):
        with pytest.raises(BrowserError, match="browser endpoint"):
            parse_endpoint(bad)
    texts = [e.text for e in parse_endpoints(["ws://a:1/, http://b:2", "ws://c:3/"])]
    assert texts == ["ws://a:1/", "http://b:2", "ws://c:3/"]


def test_launch_options_of_the_url_go_over_ortweb_s() -> None:
    given = {"executablePath": "/opt/chrome", "args": ["--x"]}
    url, options = _launch_url(
        f"ws://h:1/p?token=t&launch-options={quote(json.dumps(given))}",
        {"headless": True, "args": ["--a"]})
    assert url == "ws://h:1/p?token=t"
    assert options == {"headless": True, "executablePath": "/opt/chrome", "args": ["--a", "--x"]}
    with pytest.raises(BrowserError, match="not JSON"):
        _launch_url("ws://h:1/?launch-options=%7Bnope", {})


def _where(vendor: str, architecture: str, description: str = "",
           fallback: bool = False) -> dict[str, Any]:
    class _B:
        endpoint = parse_endpoint("ws://farm:3000/")
        version = "156.0.1"

    return describe(_B(), {"available": True, "vendor": vendor,  # type: ignore[arg-type]
                           "architecture": architecture, "description": description,
                           "fallback": fallback, "features": ["shader-f16"]})


def test_where_names_software_adapters() -> None:
    swift = _where("google", "swiftshader")
    assert swift["software"] and swift["endpoint"] == "ws://farm:3000/"
    assert where_line(swift) == ("chromium 156.0.1 @ ws://farm:3000/, adapter: google "
                                 "swiftshader, software")
    gpu = _where("nvidia", "ada", "NVIDIA GeForce RTX 4090")
    assert not gpu["software"] and gpu["features"] == ["shader-f16"]
    assert where_line(gpu).endswith("adapter: nvidia ada (NVIDIA GeForce RTX 4090)")
    assert _where("mesa", "", "llvmpipe (LLVM 15.0.6, 256 bits)")["software"]


def test_known_failure_scoped_to_an_adapter(tmp_path: Path) -> None:
    path = tmp_path / "known.toml"
    path.write_text(textwrap.dedent('''
        [[fail]]
        suite = "node"
        ep = "webgpu"
        cases = ["test_abs"]
        reason = "SwiftShader rounds it"
        adapter = "swiftshader"
    '''))
    known = KnownFailures.load(path)
    case = load_cases(["node"], names=["test_abs"])[0]
    swift, gpu = _where("google", "swiftshader"), _where("nvidia", "ada")
    assert known.lookup(case, "webgpu", swift) == "upstream: SwiftShader rounds it " \
                                                  "[adapter swiftshader]"
    assert known.lookup(case, "webgpu", gpu) is None  # not excused on a real GPU
    assert known.lookup(case, "webgpu") is None  # nor where it ran is unknown
    # Stale only where it would hold: a pass on the GPU says nothing about SwiftShader.
    assert known.stale([case], ["webgpu"], set(), {(case.id, "webgpu"): gpu}) == []
    assert known.stale([case], ["webgpu"], set(), {(case.id, "webgpu"): swift}) == [
        "node/test_abs [webgpu]"]


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
    dog = Watchdog(f"http://127.0.0.1:{_free_port()}/", 0.5, quiet.append)
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


# -- the remote browsers ------------------------------------------------------------------


def _free_port() -> int:
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


class _Remote:
    """A process group (a server or a browser and its children), killed as a whole."""

    proc: subprocess.Popen[bytes]
    url: str

    def kill(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()


class PlaywrightServer(_Remote):
    """``playwright run-server`` (the driver's own), launching Debian's Chromium.

    ``--unsafe`` lets the client's launch options (args, executablePath) through;
    the endpoint URL carries the Chromium to launch and the network cut, as a farm's
    URL would carry its own options.
    """

    def __init__(self, log: Path, env: dict[str, str] | None = None):
        from playwright._impl._driver import compute_driver_executable

        node, cli = compute_driver_executable()
        self.port = _free_port()
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


class CdpChromium(_Remote):
    """A headless Chromium of its own with ``--remote-debugging-port`` and WebGPU."""

    def __init__(self, profile: Path):
        self.proc = subprocess.Popen(
            [find_chromium(), "--headless", "--remote-debugging-port=0",
             f"--user-data-dir={profile}", *BASE_FLAGS, *WEBGPU_FLAGS, *CUT, "about:blank"],
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
def server() -> Iterator[StaticServer]:
    with StaticServer(find_assets().mounts()) as s:
        yield s


def _endpoint(request: pytest.FixtureRequest, kind: str) -> str:
    remote = request.getfixturevalue("pw_server" if kind == "playwright" else "cdp_browser")
    return str(remote.url)


@pytest.mark.browser
@pytest.mark.parametrize("kind", ["playwright", "cdp"])
def test_remote_browser_has_no_route_to_the_host(request: pytest.FixtureRequest,
                                                 server: StaticServer, kind: str) -> None:
    """Without the relay the page cannot load; with it, it boots isolated and offline."""
    with Browser(endpoint=_endpoint(request, kind)) as browser:
        assert browser.endpoint is not None and browser.endpoint.kind == kind
        context = browser._browser.new_context()  # no router: the browser's own network
        try:
            with pytest.raises(Exception, match="ERR_PROXY_CONNECTION_FAILED"):
                context.new_page().goto(server.url + "runner.html", timeout=20000)
        finally:
            context.close()
        with browser.new_page(server.url) as page:
            assert page.run_python("import js; bool(js.crossOriginIsolated)") is True
            assert page.run_python("import ortweb, numpy; 'ok'") == "ok"
            # A request that is not ortweb's is still refused, and reported.
            page.page.evaluate("() => fetch('https://example.com/x').catch(() => null)")
            assert page.blocked_requests == ["https://example.com/x"]


def _ortweb(*args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ortweb.cli", *args], capture_output=True,
                          text=True, timeout=timeout)


@pytest.mark.browser
def test_run_compare_native_equals_the_local_run(request: pytest.FixtureRequest,
                                                 tmp_path: Path) -> None:
    model = tmp_path / "m.onnx"
    model.write_bytes(samples.two_outputs_model())
    outs = {}
    for kind in ("local", "playwright", "cdp"):
        where = [] if kind == "local" else ["--browser-endpoint", _endpoint(request, kind)]
        result = _ortweb("run", str(model), "--compare-native", "--json", "--seed", "3",
                         "-o", str(tmp_path / f"{kind}.npz"), *where)
        assert result.returncode == 0, result.stdout + result.stderr
        report = json.loads(result.stdout)
        assert report["ok"] and report["blocked_requests"] == []
        assert all(c["ok"] for c in report["compare_native"])
        browser = report["browser"]
        assert browser["kind"] == kind and browser["browser"].startswith("chromium ")
        assert browser["endpoint"] == ("local" if kind == "local" else where[1])
        assert browser["adapter"]["architecture"] == "swiftshader" and browser["software"]
        outs[kind] = load_npz(tmp_path / f"{kind}.npz")
    for kind in ("playwright", "cdp"):
        assert outs[kind].keys() == outs["local"].keys()
        for name, value in outs["local"].items():
            np.testing.assert_array_equal(outs[kind][name], value)


@pytest.mark.browser
def test_exec_and_demo_on_remote_browsers(request: pytest.FixtureRequest,
                                          tmp_path: Path) -> None:
    script = tmp_path / "s.py"
    script.write_text("import sys, ortweb, numpy as np\n"
                      "print('argv', sys.argv[1:], int(np.arange(4).sum()))\n"
                      "print(open('data.txt').read())\n")
    (tmp_path / "data.txt").write_text("a file from the host")
    for kind in ("playwright", "cdp"):
        result = _ortweb("exec", str(script), "--file", str(tmp_path / "data.txt"),
                         "--browser-endpoint", _endpoint(request, kind), "--", "x", "y")
        assert result.returncode == 0, result.stdout + result.stderr
        assert result.stdout == "argv ['x', 'y'] 6\na file from the host\n", result.stdout
    # The demo's site (a Web Worker runs Python there): its requests are relayed too.
    url = _endpoint(request, "playwright")
    demo = _ortweb("demo", "--json", "--out", str(tmp_path / "site"), "--browser-endpoint", url)
    assert demo.returncode == 0, demo.stdout + demo.stderr
    checks = json.loads(demo.stdout[:demo.stdout.rindex("}") + 1])
    for mode, check in checks.items():
        assert check["ok"] and check["blocked"] == [], (mode, check)
        assert check["browser"]["endpoint"] == url


@pytest.mark.browser
def test_refused_endpoint_is_a_clear_error(tmp_path: Path) -> None:
    model = tmp_path / "m.onnx"
    model.write_bytes(samples.two_outputs_model())
    for url in (f"ws://127.0.0.1:{_free_port()}/", f"pw+ws://127.0.0.1:{_free_port()}/",
                f"http://127.0.0.1:{_free_port()}"):
        t0 = time.monotonic()
        result = _ortweb("run", str(model), "--browser-endpoint", url, timeout=120)
        assert result.returncode == 1, result.stdout + result.stderr
        assert f"browser endpoint {url}" in result.stderr, result.stderr
        assert "refused" in result.stderr or "cannot connect" in result.stderr, result.stderr
        assert time.monotonic() - t0 < 60
    bad = _ortweb("run", str(model), "--browser-endpoint", "localhost:3000")
    assert bad.returncode == 2 and "--browser-endpoint" in bad.stderr


@pytest.mark.browser
def test_playwright_version_mismatch_is_a_clear_error(tmp_path: Path) -> None:
    from importlib.metadata import version

    other = PlaywrightServer(tmp_path / "log", env={"PW_VERSION_OVERRIDE": "1.40.0"})
    try:
        with pytest.raises(BrowserError) as info:
            Browser(endpoint=other.url, connect_timeout=30)
    finally:
        other.kill()
    message = str(info.value)
    assert "Playwright server runs Playwright 1.40" in message, message
    assert f"client is Playwright {version('playwright')}" in message, message
    assert other.url in message


@pytest.mark.browser
def test_conformance_over_the_pool_equals_the_local_run(request: pytest.FixtureRequest,
                                                        tmp_path: Path) -> None:
    pool = [_endpoint(request, "playwright"), _endpoint(request, "cdp")]
    args = ["conformance", "--providers", "wasm,webgpu", "--filter",
            r"^test_(abs|relu|add_bcast|sigmoid|matmul_2d)$",
            "--batch-size", "1"]
    local = _ortweb(*args, "--json", str(tmp_path / "local.json"))
    assert local.returncode == 0, local.stdout + local.stderr
    remote = _ortweb(*args, "--jobs", "2", "--json", str(tmp_path / "remote.json"),
                     *[a for url in pool for a in ("--browser-endpoint", url)])
    assert remote.returncode == 0, remote.stdout + remote.stderr
    want = json.loads((tmp_path / "local.json").read_text())
    got = json.loads((tmp_path / "remote.json").read_text())
    assert got["meta"]["browser_endpoints"] == pool
    statuses = {(r["name"], r["ep"]): r["status"] for r in want["cases"]}
    assert len(statuses) == 10 and set(statuses.values()) == {"pass"}, statuses
    assert {(r["name"], r["ep"]): r["status"] for r in got["cases"]} == statuses
    used = {r["browser"]["endpoint"] for r in got["cases"]}
    assert used == set(pool), used  # both browsers of the pool took batches
    for record in got["cases"]:
        assert record["browser"]["adapter"]["architecture"] == "swiftshader"
        assert record["browser"]["software"] is True
    for record in want["cases"]:
        assert record["browser"]["endpoint"] == "local"


@pytest.mark.browser
def test_a_server_killed_mid_run_costs_its_case_only(tmp_path: Path,
                                                     cdp_browser: CdpChromium) -> None:
    doomed = PlaywrightServer(tmp_path / "log")
    cases = load_cases(["node"], r"^test_(abs|relu|neg|sigmoid|tanh|exp|sqrt|floor|ceil|"
                                 r"reciprocal|sign|softsign)$")
    assert len(cases) == 12
    opened: list[Any] = []

    def on_page(page: Any) -> None:
        opened.append(page)
        if len(opened) == 2:  # slot 1's page, on the doomed server: kill it while it works
            threading.Timer(2.0, doomed.kill).start()

    logs: list[str] = []
    try:
        with StaticServer(find_assets().mounts()) as srv, \
                BrowserPool([cdp_browser.url, doomed.url], log=logs.append) as pool:
            runtime = Runtime(find_assets(), srv, pool)
            results, pages = run_browser(runtime, cases, "wasm", jobs=2, batch_size=3,
                                         on_page=on_page, log=logs.append)
            # The run may end before slot 1 asks for a browser again (timing); asking
            # now must drop the dead endpoint and move the slot to the live one.
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


@pytest.mark.browser
def test_bench_bridge_on_a_playwright_server(request: pytest.FixtureRequest,
                                             tmp_path: Path) -> None:
    url = _endpoint(request, "playwright")
    out = tmp_path / "bench.json"
    result = _ortweb("bench", "--quick", "--sections", "bridge", "--json", str(out),
                     "--browser-endpoint", url)
    assert result.returncode == 0, result.stdout + result.stderr
    bench = json.loads(out.read_text())
    where = bench["meta"]["where"]
    assert where["endpoint"] == url and where["kind"] == "playwright" and where["software"]
    measured = {k: v for k, v in bench["figures"].items() if v["n"]}
    assert measured and all(v["median"] > 0 for v in measured.values()), bench["figures"]


_PLUGIN_TESTS = '''
import numpy as np
import pytest

from ortweb.testing import run_in_browser, samples


@pytest.fixture
def model_path(ortweb_page, tmp_path):
    path = tmp_path / "m.onnx"
    path.write_bytes(samples.two_outputs_model())
    return ortweb_page.put_file("m.onnx", path)


@run_in_browser
def square(ortweb_page, x):
    return x * x


@pytest.mark.parametrize("i", range(3))
def test_square(ortweb_page, i):
    assert square(ortweb_page, np.arange(i + 2)).tolist() == [k * k for k in range(i + 2)]


@run_in_browser
async def test_eps(ortweb_page, ortweb_providers, model_path):
    import ortweb
    sess = await ortweb.InferenceSession.create(model_path)
    assert sess.provider == ortweb_providers
    await sess.close_async()


@pytest.mark.browser
@run_in_browser
def test_fails_with_values(ortweb_page):
    assert [1, 2, 3] == [1, 2, 4]
'''


@pytest.mark.browser
def test_pytest_plugin_over_two_endpoints_with_xdist(request: pytest.FixtureRequest,
                                                     pytester: pytest.Pytester,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    pool = [_endpoint(request, "playwright"), _endpoint(request, "cdp")]
    pytester.makepyfile(test_remote_project=textwrap.dedent(_PLUGIN_TESTS))
    # From the environment variable, space-separated; one worker per endpoint.
    monkeypatch.setenv("ORTWEB_BROWSER_ENDPOINT", " ".join(pool))
    result = pytester.runpytest_subprocess("-n", "2", "-p", "no:cacheprovider", "-rA",
                                           timeout=900)
    result.assert_outcomes(passed=5, failed=1)
    result.stdout.fnmatch_lines(["E       *assert [[]1, 2, 3[]] == [[]1, 2, 4[]]"])
    out = result.stdout.str()
    for worker, url in (("gw0", pool[0]), ("gw1", pool[1])):
        assert f"ortweb: {worker}: chromium " in out and f" @ {url}, adapter: google " \
               "swiftshader, software" in out, out


@pytest.mark.browser
def test_pytest_plugin_header_names_the_browser(request: pytest.FixtureRequest,
                                                pytester: pytest.Pytester) -> None:
    url = _endpoint(request, "cdp")
    pytester.makepyfile(test_one=textwrap.dedent('''
        from ortweb.testing import run_in_browser

        @run_in_browser
        def test_in_page(ortweb_page):
            import sys
            assert sys.platform == "emscripten"
    '''))
    result = pytester.runpytest_subprocess("--ortweb-browser-endpoint", url,
                                           "-p", "no:cacheprovider", timeout=600)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([f"ortweb: chromium 1* @ {url}, adapter: google swiftshader*"])
    bad = pytester.runpytest_subprocess("--ortweb-browser-endpoint", "nowhere:1",
                                        "-p", "no:cacheprovider", timeout=120)
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    bad.stderr.fnmatch_lines(["*--ortweb-browser-endpoint: browser endpoint 'nowhere:1'*"])


def test_relay_cuts_byte_ranges() -> None:
    from ortweb.host.browser.route import _byte_range

    assert _byte_range({"Range": "bytes=0-9"}, 100) == (0, 9)
    assert _byte_range({"range": "bytes=90-"}, 100) == (90, 99)
    assert _byte_range({"Range": "bytes=90-200"}, 100) == (90, 99)
    assert _byte_range({"Range": "bytes=100-"}, 100) is None
    assert _byte_range({"Range": "bytes=1-2,5-6"}, 100) is None  # one range only
    assert _byte_range({}, 100) is None


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


@pytest.mark.browser
def test_browsers_of_one_thread_share_one_playwright() -> None:
    # A second sync_playwright() in a thread where one runs raises ("Sync API inside
    # the asyncio loop"): a test's own remote browser failed so in CI after the
    # session's browser had started in the same worker.
    from ortweb.host.browser import launch

    before = getattr(launch._thread, "playwright", None)  # the session's, if it runs
    held = before[1] if before else 0
    first = Browser()
    try:
        with Browser() as second:
            assert second._pw is first._pw
            assert launch._thread.playwright[1] == held + 2
        assert first.connected
    finally:
        first.close()
    after = getattr(launch._thread, "playwright", None)
    assert (after[1] if after else 0) == held  # the last release stopped it


_TWO_EPS = '''
import json, numpy as np, ortweb
x = np.arange(4, dtype=np.float32).reshape(2, 2) - 1.5
outs = []
for ep in ("wasm", "webgpu"):
    sess = await ortweb.InferenceSession.create(bytes.fromhex(MODEL), providers=[ep])
    assert sess.provider == ep, sess.provider
    outs.append([o.tolist() for o in await sess.run_async(None, {"x": x})])
    await sess.close_async()
json.dumps(outs)
'''


@pytest.mark.browser
@pytest.mark.parametrize("kind", ["playwright", "cdp"])
def test_later_pages_of_a_context_take_large_assets_from_its_cache(
        request: pytest.FixtureRequest, tmp_path: Path, kind: str) -> None:
    """Pyodide, numpy and ORT-web's wasm are relayed for the first page of a remote
    browser's context only; a file changed on the host is relayed again (by sha256)."""
    from ortweb.host.browser.route import DIGEST_MIN_BYTES

    # A copy of Pyodide's folder (the server refuses links that leave a mount), whose
    # lock is changed below.
    mounts = dict(find_assets().mounts())
    pyodide = tmp_path / "pyodide"
    shutil.copytree(mounts["/pyodide/"], pyodide)
    lock = pyodide / "pyodide-lock.json"
    mounts["/pyodide/"] = pyodide
    code = f"MODEL = {samples.two_outputs_model().hex()!r}\n" + _TWO_EPS
    results, large = [], []
    with StaticServer(mounts) as srv, Browser(endpoint=_endpoint(request, kind)) as browser:
        _, shared = browser.shared_context(srv.url)
        for n in range(3):
            if n == 2:  # a rebuilt file: new bytes, new digest
                lock.write_text(lock.read_text() + "\n")
            before = dict(shared.log.relayed)
            with browser.new_page(srv.url) as page:
                results.append(json.loads(page.run_python(code)))
                assert page.blocked_requests == [] and shared.log.blocked == []
                relayed = {u: n - before.get(u, 0) for u, n in shared.log.relayed.items()}
                for url, size in page.capture.relayed.items():
                    relayed[url] = relayed.get(url, 0) + size
            large.append({u.removeprefix(srv.url.rstrip("/")) for u, size in relayed.items()
                          if size >= DIGEST_MIN_BYTES})
        # A page timed cold against an anchor (the bench's) stays cold: its own context.
        with browser.new_page(srv.url, routed=False) as cold:
            assert "/pyodide/pyodide.asm.wasm" in {
                u.removeprefix(srv.url.rstrip("/")) for u in cold.capture.relayed}
    assert {"/pyodide/pyodide.asm.wasm", "/pyodide/python_stdlib.zip",
            "/pyodide/numpy-2.0.2-cp312-cp312-pyodide_2024_0_wasm32.whl"} <= large[0], large[0]
    assert any(u.startswith("/ort/") and u.endswith(".wasm") for u in large[0]), large[0]
    assert large[1] == set(), large[1]
    assert large[2] == {"/pyodide/pyodide-lock.json"}, large[2]
    x = np.arange(4, dtype=np.float32).reshape(2, 2) - 1.5
    want = [(x * 2).tolist(), (-x).tolist()]
    assert results == [[want, want]] * 3


def _browser_group_of(server: _Remote) -> int:
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
        doomed: _Remote = CdpChromium(tmp_path / "profile")
        healthy = _endpoint(request, "playwright")
    else:
        doomed = PlaywrightServer(tmp_path / "log")
        healthy = _endpoint(request, "cdp")
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
                BrowserPool([healthy, doomed.url], freeze_timeout=10, log=logs.append) as pool:
            runtime = Runtime(find_assets(), srv, pool)
            results, _ = run_browser(runtime, cases, "wasm", jobs=2, batch_size=3,
                                     case_timeout=30, on_page=on_page, log=logs.append)
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
    monkeypatch.setenv("ORTWEB_BROWSER_FREEZE_TIMEOUT", "10")
    out, url = _plugin_run_losing_a_browser(pytester, monkeypatch, tmp_path, cdp_browser,
                                            "test_freeze", _FREEZE_TESTS, "test_frozen", 400)
    assert f"the page stopped responding: its browser at {url} stopped answering " \
           "(no answer to a heartbeat" in out, out
