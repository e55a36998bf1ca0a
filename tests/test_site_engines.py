"""Engines at packing time: ``ortweb site --providers tract,...`` ships the engine, its
manifest says so, and the page's sessions run on it; a site that names no other
engine ships none (tests/test_site.py), and a model the engine is refused for
fetches none of its files."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from onnx import TensorProto, helper

from ortweb.host.browser import Browser, Runtime
from ortweb.host.build.site import build_site
from ortweb.host.build.site_hashed import by_name
from ortweb.host.serve import StaticServer
from ortweb.host.sitepage import SiteContext
from test_site import affine_model, native

pytestmark = pytest.mark.browser

APP = '''\
import json
import os

import js
import numpy as np

import ortweb

x = np.array([[1.5, -2.0, 0.25]], np.float32)
for name in ("affine.onnx", "int64.onnx"):
    try:
        sess = await ortweb.InferenceSession.create(name)  # the site's providers
    except ortweb.OrtWebError as exc:
        print("REFUSED", name, type(exc).__name__, str(exc))
        continue
    feeds = {"x": x if name == "affine.onnx" else x.astype(np.int64)}
    (y,) = await sess.run_async(None, feeds)
    print("RESULT", name, sess.provider, json.dumps(y.tolist()),
          json.dumps(sess.skipped_providers), sep="\t")
    await sess.close_async()
files = [e.name for e in js.performance.getEntriesByType("resource")]
engine_files = sorted(f.split("/engines/")[1] for f in files if "/engines/" in f)
print("ENGINE_FILES", json.dumps(engine_files))
'''


def _int64_model() -> bytes:
    """``y = x + 1`` on int64: a type tract's engine does not pass, refused before it loads."""
    x = helper.make_tensor_value_info("x", TensorProto.INT64, ["batch", 3])
    y = helper.make_tensor_value_info("y", TensorProto.INT64, ["batch", 3])
    graph = helper.make_graph([helper.make_node("Add", ["x", "one"], ["y"])], "int64", [x], [y],
                              [helper.make_tensor("one", TensorProto.INT64, [], [1])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                             ir_version=8).SerializeToString()


@pytest.fixture(scope="module")
def browser(ortweb_runtime: Runtime) -> Browser:
    return ortweb_runtime.browser


@pytest.fixture(scope="module")
def tract_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("tract_inputs")
    (folder / "affine.onnx").write_bytes(affine_model())
    (folder / "int64.onnx").write_bytes(_int64_model())
    (folder / "app.py").write_text(APP)
    site = tmp_path_factory.mktemp("sites") / "tract"
    build_site(folder / "affine.onnx", folder / "app.py", site, files=[folder / "int64.onnx"],
               providers=["tract", "wasm"])
    return site


def test_a_site_packed_with_tract_ships_tract_and_nothing_it_does_not_need(tract_site):
    manifest = json.loads((tract_site / "ortweb-manifest.json").read_text())
    assert manifest["providers"] == ["tract", "wasm"] and manifest["engines"] == ["tract"]
    engine_files = sorted(p for p in manifest["files"] if p.startswith("ortweb/engines/"))
    assert engine_files == ["ortweb/engines/tract/tract-worker.js"]
    pins = json.loads((Path(__file__).parents[1] / "assets.lock.json").read_text())["engines"]
    assert manifest["files"][engine_files[0]]["sha256"] == pins["tract/tract-worker.js"]
    # wasm's build only: no WebGPU build, no wonnx.
    named = by_name(manifest["files"])
    assert sorted(n.split("/", 1)[1] for n in named if n.startswith("ort/")) == sorted(
        ["ort.wasm.min.mjs", "ort-wasm-simd-threaded.mjs", "ort-wasm-simd-threaded.wasm"])
    # The first session tries tract: its code is part of the first visit, wonnx's is not.
    first = {p for p, meta in named.items() if meta["first_visit"]}
    assert {"ortweb/bridge/tract_session.js", "ortweb/engines/tract/tract-worker.js"} <= first
    assert "ortweb/bridge/wonnx_session.js" not in first


def test_the_page_runs_on_the_packed_engine_and_falls_back_where_it_cannot(
        browser: Browser, tract_site: Path) -> None:
    with StaticServer(tract_site) as server:
        with SiteContext(browser, server.url) as ctx, ctx.open(server.url) as page:
            lines = page.output().splitlines()
            assert not page.errors and not ctx.blocked
    results = {line.split("\t")[1]: line.split("\t")[2:] for line in lines
               if line.startswith("RESULT")}
    provider, values, skipped = results["affine.onnx"]
    x = np.array([[1.5, -2.0, 0.25]], np.float32)
    assert provider == "tract" and json.loads(skipped) == {}
    np.testing.assert_allclose(np.asarray(json.loads(values), np.float32),
                               native(affine_model(), x), rtol=1e-6)
    provider, values, skipped = results["int64.onnx"]
    assert provider == "wasm", results
    assert "tensor(int64) is not a type the tract engine" in json.loads(skipped)["tract"]
    engine_files = json.loads(next(line for line in lines if line.startswith("ENGINE_FILES"))
                              .split(" ", 1)[1])
    assert engine_files == ["tract/tract-worker.js"]


#: A session that names tract at inference time on a site whose first provider is wasm.
LATER_APP = """\
import json

import numpy as np

import ortweb

sess = await ortweb.InferenceSession.create("affine.onnx", providers=["tract", "wasm"])
(y,) = await sess.run_async(None, {"x": np.array([[1.5, -2.0, 0.25]], np.float32)})
print("RESULT", sess.provider, json.dumps(y.tolist()), json.dumps(sess.skipped_providers),
      sep="\t")
await sess.close_async()
"""


@pytest.fixture(scope="module", params=["worker", "main-thread"])
def wasm_first_site(request: pytest.FixtureRequest,
                    tmp_path_factory: pytest.TempPathFactory) -> Path:
    # In the worker the loader checks the engine's code before the import; on the main
    # thread the import map's integrity does (bridge_js/lazy_engine.js: and why that
    # code must not reach builds.json there).
    folder = tmp_path_factory.mktemp("later_inputs")
    (folder / "affine.onnx").write_bytes(affine_model())
    (folder / "app.py").write_text(LATER_APP)
    site = tmp_path_factory.mktemp("sites") / "wasm_first"
    build_site(folder / "affine.onnx", folder / "app.py", site, providers=["wasm", "tract"],
               worker=request.param == "worker")
    return site


def _run_later_app(browser: Browser, site: Path) -> tuple[str, np.ndarray, dict[str, str]]:
    with StaticServer(site) as server:
        with SiteContext(browser, server.url) as ctx, ctx.open(server.url) as page:
            line = next(x for x in page.output().splitlines() if x.startswith("RESULT"))
            assert not ctx.blocked
    _, provider, values, skipped = line.split("\t")
    return provider, np.asarray(json.loads(values), np.float32), json.loads(skipped)


def test_an_engine_named_at_inference_time_imports_its_code_then(
        browser: Browser, wasm_first_site: Path) -> None:
    files = json.loads((wasm_first_site / "ortweb-manifest.json").read_text())["files"]
    assert files["ortweb/bridge/tract_session.js"]["first_visit"] is False
    provider, y, skipped = _run_later_app(browser, wasm_first_site)
    assert provider == "tract" and skipped == {}
    x = np.array([[1.5, -2.0, 0.25]], np.float32)
    np.testing.assert_allclose(y, native(affine_model(), x), rtol=1e-6)


def test_a_changed_engine_module_is_refused_by_name_and_the_policy_falls_back(
        browser: Browser, wasm_first_site: Path, tmp_path: Path) -> None:
    site = tmp_path / "site"
    shutil.copytree(wasm_first_site, site)
    code = site / "ortweb" / "bridge" / "tract_session.js"
    code.write_text(code.read_text().replace("tract could not load", "tract cannot load"))
    for copy in code.parent.glob("tract_session.js.*"):  # the .br/.gz beside it
        copy.unlink()
    provider, y, skipped = _run_later_app(browser, site)
    assert provider == "wasm", (provider, skipped)
    assert "tract_session.js" in skipped["tract"], skipped
    x = np.array([[1.5, -2.0, 0.25]], np.float32)
    np.testing.assert_allclose(y, native(affine_model(), x), rtol=1e-6)
