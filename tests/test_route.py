"""The offline router's pattern of requests that leave the local server: the browser's
side of Playwright matches it (a JavaScript RegExp), so it must agree with
``OfflineRouter.allows`` there as in Python."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from ortweb.host.browser.capture import PageLog
from ortweb.host.browser.route import OfflineRouter

_URLS = [
    "http://127.0.0.1:8123/", "http://127.0.0.1:8123/runner.html?x=1",
    "http://127.0.0.1:8123", "http://127.0.0.1:8123?q", "http://127.0.0.1:8123#top",
    "http://127.0.0.1:81234/x", "http://127.0.0.1:812/x", "http://127.0.0.1/x",
    "https://127.0.0.1:8123/x", "http://localhost:8123/x", "ws://127.0.0.1:8123/",
    "http://127.0.0.1:8123.example.com/", "http://127.0.0.1:8123@example.com/",
    "https://cdn.jsdelivr.net/pyodide/v0.27.7/full/pyodide.mjs",
    "data:text/plain,hi", "blob:http://127.0.0.1:8123/0b1c", "blob:null/0b1c",
]


def _router() -> OfflineRouter:
    return OfflineRouter("http://127.0.0.1:8123/", PageLog(), passive=True)


def test_the_pattern_routes_what_leaves_the_local_server_in_python() -> None:
    router = _router()
    pattern = router.leaving()
    for url in _URLS:
        assert bool(pattern.search(url)) is not router.allows(url), url


def test_the_pattern_routes_the_same_urls_as_a_javascript_regexp() -> None:
    node = shutil.which("node")
    if node is None:
        pytest.skip("no node on PATH")
    pattern = _router().leaving()
    script = ("const [source, urls] = JSON.parse(process.argv[1]);"
              "const re = new RegExp(source);"
              "console.log(JSON.stringify(urls.map((u) => re.test(u))));")
    done = subprocess.run([node, "-e", script, json.dumps([pattern.pattern, _URLS])],
                          capture_output=True, text=True, timeout=60, check=True)
    assert json.loads(done.stdout) == [bool(pattern.search(u)) for u in _URLS]
