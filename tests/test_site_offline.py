"""The site's service worker (``ortweb-sw.js``) in real Chromium: an instant second
visit (one request: the manifest), a visit with the network cut, a rebuilt site
picked up on the next visit with the old build's entries removed, two pages of a
site at once, two sites on one origin kept apart, and isolation (online and offline)
on a host that sends no COOP/COEP."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import numpy as np
import onnxruntime as ort
import pytest

from ortweb.host.bench.site import ready_ms
from ortweb.host.browser import Browser, Runtime
from ortweb.host.build.site import MANIFEST_NAME, build_site
from ortweb.host.build.site_hashed import by_name, located
from ortweb.host.serve import StaticServer
from ortweb.host.sitepage import SiteContext, SitePage
from ortweb.testing import samples

pytestmark = pytest.mark.browser

APP = '''\
import json
import os

import numpy as np

import ortweb

sess = await ortweb.InferenceSession.create(os.environ["ORTWEB_MODEL"], providers=["wasm"])
x = np.array([[1.5, -2.0], [0.25, 4.0]], np.float32)
(d,) = await sess.run_async(["double"], {"x": x})
print("VERSION", VERSION, json.dumps(d.tolist()))


def negate(rows):
    (out,) = sess.run(["negated"], {"x": np.asarray(rows, np.float32)})
    return out
'''

X = np.array([[1.5, -2.0], [0.25, 4.0]], np.float32)


@pytest.fixture(scope="module")
def browser(ortweb_runtime: Runtime) -> Browser:
    return ortweb_runtime.browser


def _native() -> list[np.ndarray]:
    sess = ort.InferenceSession(samples.two_outputs_model(), providers=["CPUExecutionProvider"])
    return [np.asarray(v) for v in sess.run(None, {"x": X})]


def _build(folder: Path, out: Path, version: int, **kw: Any) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "two.onnx").write_bytes(samples.two_outputs_model())
    (folder / "app.py").write_text(f"VERSION = {version}\n" + APP)
    build_site(folder / "two.onnx", folder / "app.py", out, providers=["wasm"], **kw)
    return out


def _manifest(site: Path) -> dict:
    return json.loads((site / MANIFEST_NAME).read_text())


def _stored(page: SitePage) -> list[str]:
    """URLs of the entries in the site's cache (the service worker's)."""
    return list(page.evaluate("""async () => {
        const names = (await caches.keys()).filter((n) => n.startsWith('ortweb-site '));
        const urls = [];
        for (const name of names) {
          for (const request of await (await caches.open(name)).keys()) urls.push(request.url);
        }
        return urls;
    }"""))


def _cache_names(page: SitePage) -> list[str]:
    return sorted(page.evaluate("() => caches.keys()"))


def _first_visit(ctx: SiteContext, url: str, site: Path) -> None:
    with ctx.open(url) as first:
        offline = first.evaluate("() => window.ortweb.offline")
        files = _manifest(site)["files"]
        assert offline == {"stored": len(files), "total": len(files), "unstored": 0}, offline
        assert not first.errors


def test_second_visit_and_offline(browser: Browser, tmp_path: Path) -> None:
    site = _build(tmp_path / "in", tmp_path / "site", 1)
    want = _native()
    with StaticServer(site) as server, SiteContext(browser, server.url) as ctx:
        _first_visit(ctx, server.url, site)
        with ctx.open(server.url) as again:
            # The one request of a second visit: the manifest check.
            assert again.requests == [server.url + MANIFEST_NAME]
            assert f"VERSION 1 {json.dumps(want[0].tolist())}" in again.output()
            assert again.evaluate("() => window.ortweb.modelSource") == "cache"
            # Every file the page checks itself came from the service worker's cache.
            rows = again.progress()
            assets = again.evaluate("() => window.ortweb.config.assets.map((a) => a.url)")
            used = [rows[server.url + a] for a in assets if server.url + a in rows]
            assert used and {r["state"] for r in used} == {"cached"}, used
            assert again.evaluate("() => crossOriginIsolated") is True
        # Two pages of the site at once share the cache.
        pages = [ctx.open(server.url, wait=False) for _ in range(2)]
        for page in pages:
            page.wait_ready()
            np.testing.assert_array_equal(np.asarray(page.call("negate", X.tolist())), want[1])
            page.close()
        ctx.context.set_offline(True)
        try:
            with ctx.open(server.url) as offline:
                assert offline.requests == []
                assert f"VERSION 1 {json.dumps(want[0].tolist())}" in offline.output()
                np.testing.assert_array_equal(np.asarray(offline.call("negate", X.tolist())),
                                              want[1])
                assert offline.evaluate("() => crossOriginIsolated") is True
                # A file kept under its hash-keyed path is served by its name too, from
                # the cache (for code that asks without the site's loader:
                # snapshot_maker.js loads Pyodide by its files' names).
                lock = by_name(_manifest(site)["files"])["pyodide/pyodide-lock.json"]
                got = offline.evaluate("""async () => {
                    const r = await fetch('pyodide/pyodide-lock.json');
                    return [r.status, r.headers.get('X-Ortweb-Sha256'),
                            (await r.arrayBuffer()).byteLength];
                }""")
                assert got == [200, lock["sha256"], lock["size"]], got
                assert not offline.errors
        finally:
            ctx.context.set_offline(False)
        assert not ctx.blocked


def test_without_a_service_worker_a_second_visit_takes_hashed_files_from_the_http_cache(
        browser: Browser, tmp_path: Path) -> None:
    """Where no service worker runs (blocked here, as in browsers and windows without
    them), a second visit asks the host for none of the site's hash-keyed files: they
    were sent as immutable, and the browser's HTTP cache answers. The page and the
    modules it imports, which keep their names, are asked for again."""
    site = _build(tmp_path / "in", tmp_path / "site", 1)
    kept = {"/" + path for path, entry in _manifest(site)["files"].items() if "name" in entry}
    want = _native()[1]
    context = browser.new_context(service_workers=False)
    try:
        with StaticServer(site) as server:
            asked = []
            for _ in range(2):
                page = context.new_page()
                with server.watching() as seen:
                    page.goto(server.url)
                    ready_ms(page)
                    got = page.evaluate("(rows) => window.ortweb.call('negate', rows)", X.tolist())
                np.testing.assert_array_equal(np.asarray(got, np.float32), want)
                assert page.evaluate("() => navigator.serviceWorker?.controller ?? null") is None
                page.close()
                asked.append({urlsplit(path).path for path in seen})
    finally:
        context.close()
    first, second = asked
    # The first visit fetched them from their hash-keyed paths (the model included).
    assert {p for p in kept if p.endswith((".onnx", ".wasm", ".whl", "/app.py"))} <= first, first
    assert not second & kept, sorted(second & kept)
    assert {"/", "/ortweb/boot.js"} <= second


#: Trace events of Chromium's wasm code cache (the category DevTools records them in).
_CODE_CACHE_CATEGORIES = "disabled-by-default-devtools.timeline,v8.wasm"


def test_wasm_reaches_the_page_from_the_cache_so_its_compiled_code_is_kept(
        tmp_path: Path) -> None:
    """The service worker stores every ``.wasm`` before giving it, even on the first
    visit, so the page compiles it from a cached response: Chromium keeps the
    optimised code beside it, and the second visit takes ``pyodide.asm.wasm``'s
    compiled code from there instead of compiling it cold (a restored interpreter
    would run at half speed until its hot functions were compiled again)."""
    site = _build(tmp_path / "in", tmp_path / "site", 1)
    # Chromium keeps optimised code only: a browser with V8's default tiers, as visitors'
    # (the suite's own compiles with Liftoff alone, which keeps nothing to take).
    with Browser(tiers="all") as visitors, StaticServer(site) as server, \
            SiteContext(visitors, server.url) as ctx:
        with ctx.open(server.url) as first:
            rows = first.progress()
            wasm = [url for url in rows if url.endswith(".wasm")]
            assert any(url.endswith("/pyodide.asm.wasm") for url in wasm), rows
            assert {rows[url]["state"] for url in wasm} == {"cached"}, wasm
            first.evaluate("() => window.ortweb.offline")
            # The code is kept once enough of it is optimised: give it the time a
            # visitor's page gets.
            first.page.wait_for_timeout(3000)
        # Chromium's tracing records every process, so it is started from a page of
        # the context before the visit opens.
        tracer = ctx.context.new_page()
        cdp = ctx.context.new_cdp_session(tracer)
        events: list[dict[str, Any]] = []
        done: list[bool] = []
        cdp.on("Tracing.dataCollected", lambda params: events.extend(params["value"]))
        cdp.on("Tracing.tracingComplete", lambda params: done.append(True))
        cdp.send("Tracing.start", {"categories": _CODE_CACHE_CATEGORIES,
                                   "transferMode": "ReportEvents"})
        with ctx.open(server.url) as again:
            assert not again.errors
        cdp.send("Tracing.end")
        tracer.wait_for_timeout(100)
        for _ in range(100):
            if done:
                break
            tracer.wait_for_timeout(100)
        tracer.close()
    hits = [e["args"] for e in events if e.get("name") == "v8.wasm.moduleCacheHit"]
    assert any(h["url"].endswith("/pyodide.asm.wasm") and h["consumedCacheSize"] > 0
               for h in hits), hits


def test_a_rebuilt_site_is_picked_up(browser: Browser, tmp_path: Path) -> None:
    site = _build(tmp_path / "in", tmp_path / "site", 1)
    old_files = _manifest(site)["files"]
    old = by_name(old_files)
    with StaticServer(site) as server, SiteContext(browser, server.url) as ctx:
        _first_visit(ctx, server.url, site)
        _build(tmp_path / "in", site, 2)
        new = by_name(_manifest(site)["files"])
        changed = {p for p in new if old.get(p, {}).get("sha256") != new[p]["sha256"]}
        assert "app/app.py" in changed and "pyodide/pyodide.asm.wasm" not in changed
        # The old build's copy of a changed file is gone with it.
        old_app = located(old_files, "app/app.py")
        assert old_app.startswith("hashed/") and not (site / old_app).exists()
        name_of = {path: e.get("name", path) for path, e in _manifest(site)["files"].items()}
        with ctx.open(server.url) as next_visit:
            assert "VERSION 2" in next_visit.output()
            fetched = {name_of.get(path, path) for path in (
                u.removeprefix(server.url) or "index.html" for u in next_visit.requests)}
            # The changed files and the manifest come from the network, nothing else.
            assert fetched <= changed | {MANIFEST_NAME}, fetched - changed
            assert "app/app.py" in fetched
            assert next_visit.evaluate("() => window.ortweb.offline")["stored"] == len(new)
            stored = _stored(next_visit)
        # Only the new build's files are left, each under its sha256.
        hashes = {parse_qs(urlsplit(u).query).get("ortweb-sha256", [""])[0] for u in stored}
        hashes.discard("")
        assert hashes == {f["sha256"] for f in new.values()}
        assert old["app/app.py"]["sha256"] not in hashes


def test_sites_on_one_origin_keep_apart(browser: Browser, tmp_path: Path) -> None:
    root = tmp_path / "root"
    _build(tmp_path / "a-in", root / "a", 1)
    _build(tmp_path / "b-in", root / "b", 2)
    with StaticServer(root) as server, SiteContext(browser, server.url) as ctx:
        for name, version in (("a", 1), ("b", 2)):
            with ctx.open(server.url + f"{name}/") as page:
                assert f"VERSION {version}" in page.output()
                page.evaluate("() => window.ortweb.offline")
                assert page.evaluate("() => window.ortweb.controlled") is True
        with ctx.open(server.url + "a/") as page:
            names = _cache_names(page)
            assert f"ortweb-site {server.url}a/" in names and f"ortweb-site {server.url}b/" in names
            for name in ("a", "b"):
                keys = page.evaluate("""async (name) => (await (await caches.open(name)).keys())
                    .map((r) => r.url)""", f"ortweb-site {server.url}{name}/")
                assert keys and all(k.startswith(f"{server.url}{name}/") for k in keys)


def test_isolated_offline_on_a_host_without_headers(browser: Browser, tmp_path: Path) -> None:
    # The host sends no COOP/COEP: the service worker adds them (one reload), and its
    # stored files keep them, so an offline visit is isolated too.
    from playwright.sync_api import Error as PlaywrightError

    site = _build(tmp_path / "in", tmp_path / "site", 1)
    with StaticServer(site, isolation=False) as server, SiteContext(browser, server.url) as ctx:
        page = ctx.open(server.url, wait=False)
        for _ in range(240):
            try:
                state = page.evaluate("() => document.documentElement.dataset.ortweb ?? ''")
            except PlaywrightError:  # the reload
                state = ""
            if state in ("ready", "failed"):
                break
            page.page.wait_for_timeout(500)
        page.wait_ready()
        assert page.evaluate("() => [crossOriginIsolated, window.ortweb.controlled]") == [
            True, True]
        stored = page.evaluate("() => window.ortweb.offline")
        assert stored["stored"] == stored["total"] > 0
        page.close()
        ctx.context.set_offline(True)
        try:
            with ctx.open(server.url) as offline:
                assert offline.requests == []
                assert "VERSION 1" in offline.output()
                assert offline.evaluate("() => crossOriginIsolated") is True
        finally:
            ctx.context.set_offline(False)
