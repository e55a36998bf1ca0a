"""Pyodide's memory snapshot in a site (``web/site/snapshot.js``), in real Chromium.

Made at build time (:mod:`ortweb.host.build.pyodide_snapshot`, with Node.js): a first
visit neither downloads nor uses it (on a real link its bytes cost more than the boot
they save), the service worker stores it, and later visits boot from it, in worker and
main-thread mode, with the visitor's LANG and the same outputs; one that does not
restore gives a usual boot; a changed file is never stored nor used. Made in the
browser (a worker-mode site built with ``snapshot=False``): the first visit stores one
once ready, the second and the offline visit boot from it with the same outputs, a
damaged snapshot is dropped for a usual boot (and made again), and the key changes with
Pyodide's core files, so another build's snapshot is never used."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from ortweb.host.browser import Browser, Runtime
from ortweb.host.build import site as site_module
from ortweb.host.build.assets import find_assets
from ortweb.host.build.pyodide_snapshot import Snapshot, make_snapshot, runtime_id
from ortweb.host.build.site_hashed import by_name, located
from ortweb.host.serve import StaticServer
from ortweb.host.sitepage import SiteContext, SiteFailure, SitePage
from test_site_offline import APP, X, _build, _native

pytestmark = pytest.mark.browser

#: The page's place for the snapshot, as the worker computes it (snapshot.js).
_PLACE = """async (config) => {
  const { snapshotPlace } = await import('./ortweb/snapshot.js');
  const absolute = (url) => new URL(url, document.baseURI).href;
  return snapshotPlace(config ?? window.ortweb.config, absolute, document.baseURI);
}"""


#: The stored snapshot with one byte of its build id changed.
_FOREIGN_BUILD = """async (place) => {
  const cache = await caches.open(place.cacheName);
  const bytes = new Uint8Array(await (await cache.match(place.key)).arrayBuffer());
  bytes[20] ^= 0xff;
  await cache.put(place.key, new Response(bytes));
}"""


@pytest.fixture(scope="module")
def browser(ortweb_runtime: Runtime) -> Browser:
    return ortweb_runtime.browser


def _check(page: SitePage, want: list[np.ndarray]) -> None:
    assert f"VERSION 1 {json.dumps(want[0].tolist())}" in page.output()
    np.testing.assert_array_equal(np.asarray(page.call("negate", X.tolist())), want[1])
    assert not page.errors


def _stored_snapshots(page: SitePage) -> list[str]:
    return list(page.evaluate("""async () => {
        const urls = [];
        for (const name of (await caches.keys()).filter((n) => n.startsWith('ortweb-snapshot '))) {
          for (const request of await (await caches.open(name)).keys()) urls.push(request.url);
        }
        return urls;
    }"""))


#: What a fresh boot in a browser gives (Emscripten's defaults there).
_FACTS = """
def facts():
    import os
    import random
    import sys
    import time
    return {"lang": os.environ["LANG"], "executable": sys.executable,
            "random": random.random(),
            "time_zone": [time.timezone, time.altzone, time.daylight, list(time.tzname),
                          time.strftime("%Z", time.localtime(0))]}
"""

#: The LANG Emscripten gives a fresh boot in this browser.
_BROWSER_LANG = "() => `${(navigator.languages?.[0] ?? 'C').replace('-', '_')}.UTF-8`"


def _facts_site(tmp_path: Path, **kw) -> Path:
    folder = tmp_path / "in"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "two.onnx").write_bytes(_two_outputs())
    (folder / "app.py").write_text("VERSION = 1\n" + APP + _FACTS)
    out = tmp_path / "site"
    site_module.build_site(folder / "two.onnx", folder / "app.py", out, providers=["wasm"], **kw)
    return out


def _first_visit(ctx: SiteContext, url: str) -> dict:
    """A first visit: a usual boot that fetches neither the snapshot nor the bytecode;
    returns what the service worker stored once the page was ready."""
    with ctx.open(url) as first:
        assert first.evaluate("() => window.ortweb.pythonBoot") == "fresh"
        rows = first.progress()
        assert rows and not [u for u in rows if u.endswith(("/pyodide-snapshot.gz",
                                                             "/pyodide-bytecode.zip"))], rows
        return dict(first.evaluate("() => window.ortweb.offline"))


def _two_outputs() -> bytes:
    from ortweb.testing import samples

    return samples.two_outputs_model()


@pytest.mark.parametrize("worker", [True, False], ids=["worker", "main-thread"])
def test_later_visits_boot_from_the_build_snapshot(browser: Browser, tmp_path: Path,
                                                   worker: bool) -> None:
    site = _facts_site(tmp_path, worker=worker)
    files = by_name(json.loads((site / "ortweb-manifest.json").read_text())["files"])
    assert files["ortweb/pyodide-snapshot.gz"]["first_visit"] is False
    assert files["ortweb/pyodide-bytecode.zip"]["first_visit"] is False
    want = _native()
    with StaticServer(site) as server, SiteContext(browser, server.url) as ctx:
        offline = _first_visit(ctx, server.url)
        assert offline["stored"] == offline["total"], offline
        with ctx.open(server.url) as first:
            assert first.evaluate("() => window.ortweb.pythonBoot") == "snapshot"
            _check(first, want)
            # From the service worker's cache, and the bytecode with it.
            rows = first.progress()
            assert [u for u in rows if u.endswith("/pyodide-snapshot.gz")], rows
            assert [u for u in rows if u.endswith("/pyodide-bytecode.zip")], rows
            timings = first.timings()
            assert timings["boot"] <= timings["interpreter"] <= timings["pyodide"]
            facts = first.call("facts")
            # Node made it, yet Python sees what a fresh boot in this browser sees.
            lang = first.evaluate(_BROWSER_LANG)
            assert lang != "C.UTF-8" and facts["lang"] == lang, facts
            assert facts["executable"] == "/home/pyodide/this.program", facts
            place = first.evaluate(_PLACE)
            # The build's id of Pyodide's core files is the browser's.
            assert place["key"].endswith("runtime=" + runtime_id(find_assets().pyodide))
            built = first.evaluate("() => window.ortweb.config.snapshot.sha256")
            kept = f"{place['key']}&built={built}"
            if worker:
                # The build shipped one: the page makes none, it keeps the build's unpacked.
                made = first.evaluate("() => window.ortweb.snapshot")
                assert made["stored"] is True and made["kept"] is True, made
                assert made["bytes"] > 16 * 65536, made
            first.page.wait_for_function("""async ([name, kept]) => {
                return Boolean(await (await caches.open(name)).match(kept));
            }""", arg=[place["cacheName"], kept])
            assert _stored_snapshots(first) == [kept]
        with ctx.open(server.url) as again:
            assert again.evaluate("() => window.ortweb.pythonBoot") == "snapshot"
            _check(again, want)
            # Restored from the unpacked copy: the shipped file is not even fetched.
            assert not [u for u in again.progress() if u.endswith("/pyodide-snapshot.gz")]
            if worker:
                assert again.evaluate("() => window.ortweb.snapshot")["stored"] is False
            # `random` is seeded again on every restore.
            assert again.call("facts")["random"] != facts["random"]
        assert not ctx.blocked


@pytest.mark.parametrize("zone", ["America/New_York", "Asia/Tokyo"])
def test_a_restored_interpreter_has_the_visitors_time_zone(browser: Browser, tmp_path: Path,
                                                           zone: str) -> None:
    # The snapshot was made in this machine's zone; the visitor is elsewhere.
    facts = {}
    for snapshot in (True, False):
        site = _facts_site(tmp_path / str(snapshot), snapshot=snapshot)
        with StaticServer(site) as server, SiteContext(browser, server.url,
                                                       timezone_id=zone) as ctx:
            if snapshot:  # a later visit restores it
                _first_visit(ctx, server.url)
            with ctx.open(server.url) as page:
                boot = page.evaluate("() => window.ortweb.pythonBoot")
                assert boot == ("snapshot" if snapshot else "fresh")
                facts[boot] = page.call("facts")["time_zone"]
    assert facts["snapshot"] == facts["fresh"], facts
    assert facts["fresh"][0] in (18000, -32400), facts


@pytest.mark.parametrize("worker", [True, False], ids=["worker", "main-thread"])
def test_a_snapshot_of_another_jspi_api_is_neither_fetched_nor_used(
        browser: Browser, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, worker: bool) -> None:
    """A snapshot records the JSPI API of the engine that made it: a site whose config
    names one this browser lacks (Node's old ``Suspender``) boots as usual, without
    the page downloading the file."""
    monkeypatch.setattr(site_module, "SNAPSHOT_JSPI", "Suspender")
    site = _facts_site(tmp_path, worker=worker)
    want = _native()
    with StaticServer(site) as server, SiteContext(browser, server.url) as ctx:
        with ctx.open(server.url) as page:
            assert page.evaluate("() => 'Suspender' in WebAssembly") is False
            assert page.evaluate("() => window.ortweb.pythonBoot") == "fresh"
            _check(page, want)
            # The page never downloaded it (the service worker may still keep it for
            # offline visits, with every file of the manifest).
            rows = page.progress()
            assert rows and not [u for u in rows if u.endswith("/pyodide-snapshot.gz")], rows
            can = page.evaluate("""async () => {
                const { canRestoreBuilt } = await import('./ortweb/snapshot.js');
                return [{}, {snapshot: null}, {snapshot: {jspi: 'Suspender'}},
                        {snapshot: {jspi: 'Suspending'}}].map(canRestoreBuilt);
            }""")
            assert can == [False, False, False, True]


def test_a_browser_without_jspi_runs_the_async_api(browser: Browser, tmp_path: Path) -> None:
    """Firefox and Safari have no JSPI: the build's snapshot is not used, the script's
    async API works, and the sync API says what it needs (on the main thread; an init
    script cannot reach a worker)."""
    site = _facts_site(tmp_path, worker=False)
    want = _native()
    with StaticServer(site) as server, SiteContext(browser, server.url) as ctx:
        ctx.context.add_init_script("delete WebAssembly.Suspending")
        with ctx.open(server.url) as page:
            assert page.evaluate("() => 'Suspending' in WebAssembly") is False
            assert page.evaluate("() => window.ortweb.pythonBoot") == "fresh"
            assert f"VERSION 1 {json.dumps(want[0].tolist())}" in page.output()
            with pytest.raises(SiteFailure, match=r"SyncUnavailable(.|\n)*JSPI\), which this "
                                                  "browser does not have"):
                page.call("negate", X.tolist())
            assert not page.errors


def _foreign(tmp_path: Path) -> Path:
    """The real snapshot with one byte of its build id changed, gzipped."""
    real = make_snapshot(find_assets().pyodide, find_assets().root / "build" / "snapshots")
    assert real.path is not None, real.reason
    raw = bytearray(gzip.decompress(real.path.read_bytes()))
    raw[20] ^= 0xFF
    out = tmp_path / "foreign.snapshot.gz"
    out.write_bytes(gzip.compress(bytes(raw)))
    return out


@pytest.mark.parametrize("worker", [True, False], ids=["worker", "main-thread"])
def test_a_build_snapshot_that_does_not_restore_boots_as_usual(
        browser: Browser, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, worker: bool) -> None:
    junk = tmp_path / "junk.snapshot.gz"
    junk.write_bytes(gzip.compress(bytes(4096)))
    want = _native()
    # What the build ships: not a snapshot at all, then one of another Pyodide build.
    for shipped, warning in ((junk, "is not a whole Pyodide snapshot"),
                             (_foreign(tmp_path), "did not restore")):
        monkeypatch.setattr(site_module, "make_snapshot", lambda *a, f=shipped, **k: Snapshot(f))
        site = _facts_site(tmp_path / shipped.stem, worker=worker)
        with StaticServer(site) as server, SiteContext(browser, server.url) as ctx:
            _first_visit(ctx, server.url)
            with ctx.open(server.url) as page:
                assert page.evaluate("() => window.ortweb.pythonBoot") == "fresh"
                _check(page, want)
                warned = [c.text for c in page.console if warning in c.text]
                assert warned, [c.text for c in page.console][-10:]


def test_a_changed_build_snapshot_is_never_stored_nor_used(browser: Browser,
                                                           tmp_path: Path) -> None:
    site = _facts_site(tmp_path)
    shipped = site / located(json.loads((site / "ortweb-manifest.json").read_text())["files"],
                             "ortweb/pyodide-snapshot.gz")
    body = shipped.read_bytes()
    # Changed after the build: still a gzip of a snapshot, but not the manifest's.
    shipped.write_bytes(body[:-1] + bytes([body[-1] ^ 1]))
    for copy in shipped.parent.glob("pyodide-snapshot.gz.*"):  # its .br/.gz, if any
        copy.unlink()
    want = _native()
    with StaticServer(site) as server, SiteContext(browser, server.url) as ctx:
        offline = _first_visit(ctx, server.url)
        # The service worker checks each file before it stores it.
        assert offline["stored"] == offline["total"] - 1, offline
        with ctx.open(server.url) as again:
            assert again.evaluate("() => window.ortweb.pythonBoot") == "fresh"
            _check(again, want)


def test_second_and_offline_visit_boot_from_the_snapshot(browser: Browser,
                                                          tmp_path: Path) -> None:
    site = _build(tmp_path / "in", tmp_path / "site", 1, snapshot=False)
    want = _native()
    with StaticServer(site) as server, SiteContext(browser, server.url) as ctx:
        with ctx.open(server.url) as first:
            assert first.evaluate("() => window.ortweb.pythonBoot") == "fresh"
            _check(first, want)
            made = first.evaluate("() => window.ortweb.snapshot")
            assert made["stored"] is True and made["bytes"] > 1_000_000, made
            place = first.evaluate(_PLACE)
            assert _stored_snapshots(first) == [place["key"]]
            first.evaluate("() => window.ortweb.offline")
        with ctx.open(server.url) as again:
            assert again.evaluate("() => window.ortweb.pythonBoot") == "snapshot"
            timings = again.timings()
            assert timings["boot"] <= timings["interpreter"] <= timings["pyodide"]
            _check(again, want)
            # A visit that booted from it does not make another.
            assert again.evaluate("() => window.ortweb.snapshot")["stored"] is False
        ctx.context.set_offline(True)
        try:
            with ctx.open(server.url) as offline:
                assert offline.requests == []
                assert offline.evaluate("() => window.ortweb.pythonBoot") == "snapshot"
                _check(offline, want)
        finally:
            ctx.context.set_offline(False)
        assert not ctx.blocked


def test_a_damaged_snapshot_is_dropped_and_made_again(browser: Browser,
                                                       tmp_path: Path) -> None:
    site = _build(tmp_path / "in", tmp_path / "site", 1, snapshot=False)
    want = _native()
    with StaticServer(site) as server, SiteContext(browser, server.url) as ctx:
        with ctx.open(server.url) as first:
            assert first.evaluate("() => window.ortweb.snapshot")["stored"] is True
            first.evaluate("() => window.ortweb.offline")
            place = first.evaluate(_PLACE)
            # Same key, other bytes: what a truncated or foreign file would look like.
            first.evaluate("""async (place) => {
                const junk = new Uint8Array(4096).fill(7);
                await (await caches.open(place.cacheName)).put(place.key, new Response(junk));
            }""", place)
        with ctx.open(server.url) as again:
            assert again.evaluate("() => window.ortweb.pythonBoot") == "fresh"
            _check(again, want)
            warned = [c.text for c in again.console if "did not restore" in c.text]
            assert warned, [c.text for c in again.console][-10:]
            remade = again.evaluate("() => window.ortweb.snapshot")
            assert remade["stored"] is True, remade
            # A whole snapshot of another Pyodide build (its build id differs): Pyodide
            # refuses it, and the site boots as usual.
            again.evaluate(_FOREIGN_BUILD, place)
        with ctx.open(server.url) as third:
            assert third.evaluate("() => window.ortweb.pythonBoot") == "fresh"
            _check(third, want)
            assert [c.text for c in third.console if "did not restore" in c.text]
            assert third.evaluate("() => window.ortweb.snapshot")["stored"] is True
        with ctx.open(server.url) as fourth:
            assert fourth.evaluate("() => window.ortweb.pythonBoot") == "snapshot"
            _check(fourth, want)


def test_the_key_follows_pyodide_core_files(browser: Browser, tmp_path: Path) -> None:
    site = _build(tmp_path / "in", tmp_path / "site", 1, snapshot=False)
    with StaticServer(site) as server, SiteContext(browser, server.url) as ctx:
        with ctx.open(server.url) as page:
            config = page.evaluate("() => window.ortweb.config")
            place = page.evaluate(_PLACE, config)
            assert place["cacheName"] == f"ortweb-snapshot {server.url}"
            # The script changes with every rebuild: the snapshot (Pyodide alone) stays.
            config["script"]["sha256"] = "0" * 64
            assert page.evaluate(_PLACE, config) == place
            for name in ("pyodide.asm.wasm", "python_stdlib.zip", "pyodide.asm.js"):
                other = json.loads(json.dumps(config))
                entries = [e for e in other["assets"] + other["modules"]
                           if e["url"].endswith("/" + name)]
                assert entries, name
                for entry in entries:
                    entry["sha256"] = "f" * 64
                changed = page.evaluate(_PLACE, other)
                assert changed["key"] != place["key"], name
            # A config that does not list a core file's sha256: no snapshot at all.
            other = json.loads(json.dumps(config))
            other["assets"] = [e for e in other["assets"]
                               if not e["url"].endswith("/python_stdlib.zip")]
            assert page.evaluate(_PLACE, other) is None
