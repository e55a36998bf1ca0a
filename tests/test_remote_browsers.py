"""Browsers elsewhere: a real Playwright server and a real Chromium DevTools endpoint.

Both run here, each in its own process (and profile), but with their own network
to the host cut: every connection they would open goes to a proxy on port 9,
where nothing listens, loopback included (``remote_browsers.py``). So pages, assets
and models reach them only through the host's request routing (``OfflineRouter``
relaying), as they would reach a browser on another machine. The host-only tests
check parsing, the launch options, adapter-scoped known failures and the report lines.
Browsers that freeze, are killed or go away mid-run: ``test_remote_browsers_lost.py``.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

import numpy as np
import pytest

from ortweb.host.browser import (
    Browser,
    parse_endpoint,
    parse_endpoints,
    where_line,
)
from ortweb.host.browser.endpoint import _launch_url
from ortweb.host.browser.where import describe
from ortweb.host.build.assets import find_assets
from ortweb.host.conformance.cases import load_cases
from ortweb.host.conformance.report import KnownFailures
from ortweb.host.errors import BrowserError
from ortweb.host.inputs import load_npz
from ortweb.host.serve import StaticServer
from ortweb.testing import samples
from remote_browsers import PlaywrightServer, endpoint, free_port

pytest_plugins = ["pytester"]

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
    # A list of features of the URL's joins ortweb's instead of dropping it.
    given = {"args": ["--enable-features=Mine", "--x"]}
    _, options = _launch_url(f"ws://h:1/?launch-options={quote(json.dumps(given))}",
                             {"args": ["--a", "--enable-features=Vulkan,Guard"]})
    assert options["args"] == ["--a", "--enable-features=Vulkan,Guard,Mine", "--x"]


def _where(vendor: str, architecture: str, description: str = "",
           fallback: bool = False) -> dict[str, Any]:
    class _B:
        endpoint = parse_endpoint("ws://farm:3000/")
        version = "156.0.1"
        tiers = "all"

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
    # V8's default tiers go unsaid; Liftoff only is said last.
    assert swift["wasm_tiers"] == "all"
    assert where_line({**swift, "wasm_tiers": "baseline"}) == (
        where_line(swift) + ", wasm tiers: baseline")


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



# -- the remote browsers ------------------------------------------------------------------


@pytest.mark.browser
@pytest.mark.parametrize("kind", ["playwright", "cdp"])
def test_remote_browser_has_no_route_to_the_host(request: pytest.FixtureRequest,
                                                 assets_server: StaticServer, kind: str) -> None:
    """Without the relay the page cannot load; with it, it boots isolated and offline."""
    with Browser(endpoint=endpoint(request, kind), tiers="baseline") as browser:
        assert browser.endpoint is not None and browser.endpoint.kind == kind
        # A Playwright server launches with ortweb's flags; a DevTools browser has its own.
        assert browser.tiers == ("baseline" if kind == "playwright" else "")
        context = browser._browser.new_context()  # no router: the browser's own network
        try:
            with pytest.raises(Exception, match="ERR_PROXY_CONNECTION_FAILED"):
                context.new_page().goto(assets_server.url + "runner.html", timeout=20000)
        finally:
            context.close()
        with browser.new_page(assets_server.url) as page:
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
        where = [] if kind == "local" else ["--browser-endpoint", endpoint(request, kind)]
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
                         "--browser-endpoint", endpoint(request, kind), "--", "x", "y")
        assert result.returncode == 0, result.stdout + result.stderr
        assert result.stdout == "argv ['x', 'y'] 6\na file from the host\n", result.stdout
    # The demo's site (a Web Worker runs Python there): its requests are relayed too.
    url = endpoint(request, "playwright")
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
    for url in (f"ws://127.0.0.1:{free_port()}/", f"pw+ws://127.0.0.1:{free_port()}/",
                f"http://127.0.0.1:{free_port()}"):
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
    pool = [endpoint(request, "playwright"), endpoint(request, "cdp")]
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
def test_bench_on_a_playwright_server(request: pytest.FixtureRequest, tmp_path: Path) -> None:
    url = endpoint(request, "playwright")
    out = tmp_path / "bench.json"
    # The transfer section: its pages reach the browser elsewhere as every section's
    # do, in seconds (the bridge section's resnet50 rounds kept this test over a minute).
    result = _ortweb("bench", "--quick", "--sections", "transfer", "--json", str(out),
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
    pool = [endpoint(request, "playwright"), endpoint(request, "cdp")]
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
    url = endpoint(request, "cdp")
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


def test_relay_gzips_a_file_once_per_version(tmp_path: Path) -> None:
    import gzip
    import os

    from ortweb.host.browser import route

    wasm = tmp_path / "m.wasm"
    wasm.write_bytes(bytes(range(256)) * 1024)
    with StaticServer(tmp_path) as srv:
        url = srv.url + "m.wasm"
        status, headers, body = route.gzipped_from_host(url)
        assert status == 200 and headers[route.GZIP_HEADER] == "gzip"
        assert "content-length" not in {k.lower() for k in headers}
        assert gzip.decompress(body) == wasm.read_bytes() and len(body) < wasm.stat().st_size
        assert route.gzipped_from_host(url)[2] is body  # compressed once
        wasm.write_bytes(bytes(range(255, -1, -1)) * 1024)  # a rebuilt file
        os.utime(wasm, (1, 1))
        assert gzip.decompress(route.gzipped_from_host(url)[2]) == wasm.read_bytes()
        assert route.gzipped_from_host(srv.url + "missing.wasm")[0] == 404


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
    browser's context only, the WebAssembly gzipped; a file changed on the host is
    relayed again (by sha256)."""
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
    with StaticServer(mounts) as srv, Browser(endpoint=endpoint(request, kind)) as browser:
        _, shared = browser.shared_context(srv.url)
        for n in range(3):
            if n == 2:  # a rebuilt file: new bytes, new digest
                lock.write_text(lock.read_text() + "\n")
            before = dict(shared.log.relayed)
            with browser.new_page(srv.url) as page:
                results.append(json.loads(page.run_python(code)))
                assert page.blocked_requests == [] and shared.log.blocked == []
                # The wheels are unzipped here: their record would cross the relay.
                assert page.packages_from == "wheels"
                relayed = {u: n - before.get(u, 0) for u, n in shared.log.relayed.items()}
                for url, size in page.capture.relayed.items():
                    relayed[url] = relayed.get(url, 0) + size
            large.append({u.removeprefix(srv.url.rstrip("/")): size for u, size in relayed.items()
                          if size >= DIGEST_MIN_BYTES})
        # A page timed cold against an anchor (the bench's) stays cold: its own context.
        with browser.new_page(srv.url, routed=False) as cold:
            assert "/pyodide/pyodide.asm.wasm" in {
                u.removeprefix(srv.url.rstrip("/")) for u in cold.capture.relayed}
    assert {"/pyodide/pyodide.asm.wasm", "/pyodide/python_stdlib.zip",
            "/pyodide/numpy-2.0.2-cp312-cp312-pyodide_2024_0_wasm32.whl"} <= set(large[0]), large[0]
    assert any(u.startswith("/ort/") and u.endswith(".wasm") for u in large[0]), large[0]
    # What crossed the relay for the interpreter's wasm: gzipped, a third of the file.
    assert large[0]["/pyodide/pyodide.asm.wasm"] < (pyodide / "pyodide.asm.wasm").stat().st_size / 2
    assert not any(u.startswith("/snapshot/unpacked") for u in large[0]), large[0]
    assert large[1] == {}, large[1]
    assert set(large[2]) == {"/pyodide/pyodide-lock.json"}, large[2]
    x = np.arange(4, dtype=np.float32).reshape(2, 2) - 1.5
    want = [(x * 2).tolist(), (-x).tolist()]
    assert results == [[want, want]] * 3
