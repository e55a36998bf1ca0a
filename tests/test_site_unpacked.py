"""The wheels a site's first visit unpacked, and its packages' bytecode, kept for the
next (``web/site/unpacked.js``), in real Chromium: the second and the offline visit write
the very files Pyodide wrote (every file of site-packages has the same bytes) with the
same outputs, in worker and main-thread mode; a damaged copy is unpacked again and
replaced; the key follows Pyodide's core files, the lock and the packages."""

from __future__ import annotations

from pathlib import Path

import pytest

from ortweb.host.browser import Browser, Runtime
from ortweb.host.build.site import build_site
from ortweb.host.serve import StaticServer
from ortweb.host.sitepage import SiteContext
from ortweb.testing import samples
from test_site_offline import APP, _native
from test_site_snapshot import _check

pytestmark = pytest.mark.browser

#: Every file in site-packages with its sha256.
_FILES = '''

def site_files():
    import hashlib
    import os
    import sysconfig

    root = sysconfig.get_paths()["purelib"]
    found = {}
    for folder, _, files in os.walk(root):
        for name in files:
            path = os.path.join(folder, name)
            with open(path, "rb") as f:
                found[path] = hashlib.sha256(f.read()).hexdigest()
    return found
'''

#: In the page: the place of the kept wheels for the page's config, changed by `change`.
_PLACE = """async ([lock, packages]) => {
  const { snapshotPlace } = await import('./ortweb/snapshot.js');
  const { unpackedPlace } = await import('./ortweb/unpacked.js');
  const config = structuredClone(window.ortweb.config);
  const absolute = (url) => new URL(url, document.baseURI).href;
  if (lock) {
    const url = absolute(config.pyodide.lockURL);
    config.assets.find((a) => absolute(a.url) === url).sha256 = lock;
  }
  if (packages) config.packages = packages;
  const site = await snapshotPlace(config, absolute, document.baseURI);
  return unpackedPlace(site, config, absolute);
}"""

#: The kept copy at `place`, replaced by bytes that are not one.
_DAMAGE = """async (place) => {
  const cache = await caches.open(place.cacheName);
  await cache.put(place.key, new Response(new Uint8Array([200, 0, 0, 0, 123, 34])));
}"""


@pytest.fixture(scope="module")
def browser(ortweb_runtime: Runtime) -> Browser:
    return ortweb_runtime.browser


@pytest.fixture
def site(tmp_path: Path, request: pytest.FixtureRequest) -> Path:
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "app.py").write_text("VERSION = 1\n" + APP + _FILES)
    (folder / "two.onnx").write_bytes(samples.two_outputs_model())
    out = tmp_path / "site"
    build_site(folder / "two.onnx", folder / "app.py", out, providers=["wasm"],
               worker=getattr(request, "param", True))
    return out


@pytest.mark.parametrize("site", [True, False], ids=["worker", "main-thread"], indirect=True)
def test_later_visits_write_the_files_the_first_unpacked(browser: Browser, site: Path) -> None:
    want = _native()
    with StaticServer(site) as server, SiteContext(browser, server.url) as ctx:
        with ctx.open(server.url) as first:
            _check(first, want)
            kept = first.evaluate("() => window.ortweb.packages")
            assert kept["from"] == "wheels" and kept["stored"] is True, kept
            assert kept["bytes"] > 5_000_000, kept  # numpy's files, its shared libraries too
            unpacked = first.call("site_files")
            first.evaluate("() => window.ortweb.offline")
        assert any("/numpy/" in p for p in unpacked) and any("/ortweb/" in p for p in unpacked)
        assert any(p.endswith(".dist-info/INSTALLER") for p in unpacked)
        # The packages' bytecode the site ships is for later visits: the second adds it
        # to the kept files.
        assert not any(p.endswith(".cpython-312.pyc") for p in unpacked)
        with ctx.open(server.url) as second:
            packages = second.evaluate("() => window.ortweb.packages")
            assert packages["from"] == "kept" and packages["stored"] is True, packages
            _check(second, want)
            unpacked = second.call("site_files")
        assert any(p.endswith(".cpython-312.pyc") and "/numpy/" in p for p in unpacked)
        for offline in (False, True):
            ctx.context.set_offline(offline)
            with ctx.open(server.url) as again:
                assert again.evaluate("() => window.ortweb.packages") == {"from": "kept"}
                _check(again, want)
                assert again.call("site_files") == unpacked
        ctx.context.set_offline(False)
        assert not ctx.blocked


def test_a_damaged_copy_is_unpacked_again_and_replaced(browser: Browser, site: Path) -> None:
    want = _native()
    with StaticServer(site) as server, SiteContext(browser, server.url) as ctx:
        with ctx.open(server.url) as first:
            assert first.evaluate("() => window.ortweb.packages")["stored"] is True
            place = first.evaluate(_PLACE, [None, None])
            first.evaluate(_DAMAGE, place)
        with ctx.open(server.url) as again:
            packages = again.evaluate("() => window.ortweb.packages")
            assert packages["from"] == "wheels" and packages["stored"] is True, packages
            _check(again, want)
            assert [c.text for c in again.console if "kept unpacked wheels are damaged" in c.text]
        with ctx.open(server.url) as third:
            assert third.evaluate("() => window.ortweb.packages")["from"] == "kept"
            _check(third, want)


def test_the_key_follows_the_lock_and_the_packages(browser: Browser, site: Path) -> None:
    with StaticServer(site) as server, SiteContext(browser, server.url) as ctx:
        with ctx.open(server.url) as page:
            place = page.evaluate(_PLACE, [None, None])
            assert place["cacheName"] == f"ortweb-unpacked {server.url}"
            # Pyodide's core files, as the snapshot's key.
            assert "runtime=" in place["key"]
            assert page.evaluate(_PLACE, [None, None]) == place
            assert page.evaluate(_PLACE, ["0" * 64, None])["key"] != place["key"]
            packages = page.evaluate("() => window.ortweb.config.packages")
            assert page.evaluate(_PLACE, [None, [*packages, "pandas"]])["key"] != place["key"]
            assert page.evaluate(_PLACE, [None, list(reversed(packages))])["key"] == place["key"]
