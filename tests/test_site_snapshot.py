"""Pyodide's memory snapshot in a worker-mode site (``web/site/snapshot.js``), in real
Chromium: the first visit stores one once ready, the second and the offline visit boot
from it with the same outputs, a damaged snapshot is dropped for a usual boot (and made
again), and the key changes with Pyodide's core files, so another build's snapshot is
never used."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from ortweb.host.browser import Browser, Runtime
from ortweb.host.serve import StaticServer
from ortweb.host.sitepage import SiteContext, SitePage
from test_site_offline import X, _build, _native

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


def test_second_and_offline_visit_boot_from_the_snapshot(browser: Browser,
                                                          tmp_path: Path) -> None:
    site = _build(tmp_path / "in", tmp_path / "site", 1)
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
    site = _build(tmp_path / "in", tmp_path / "site", 1)
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
    site = _build(tmp_path / "in", tmp_path / "site", 1)
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
