"""The digits demo: train, export, build the site, check it headless.

``python3 build.py demo`` (``ortweb demo``) trains a small classifier on
scikit-learn's bundled handwritten digits (no download), exports it to ONNX
with ``onnx.helper``, builds a static site with ``ortweb site`` where a person
draws a digit, then opens the site in headless Chromium and checks it: the
held-out digits fed through the page on wasm and on WebGPU give native
onnxruntime's predictions, strokes drawn with the mouse give a prediction on
screen, no request leaves 127.0.0.1, and time to first inference is measured
in the browser.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import numpy as np

from .browser import Browser
from .build.assets import Assets, find_assets
from .sitepage import SiteContext, SitePage

__all__ = [
    "DemoCheck",
    "DigitsModel",
    "ProviderCheck",
    "build_demo_site",
    "check_demo",
    "clear_and_draw",
    "demo_inputs",
    "digits_model",
    "draw_digit",
    "export_mlp",
    "native_probabilities",
    "serve_site",
    "shown_count",
    "train_digits",
    "wait_prediction",
]

INPUT: Final = "pixels"
OUTPUT: Final = "probabilities"
#: Held-out digits shipped with the page for its "sample" button.
PAGE_SAMPLES: Final = 40
# Bump when the training or the export changes, so cached models are rebuilt.
_RECIPE: Final = {"version": 1, "hidden": 32, "max_iter": 200, "tol": 1e-3, "seed": 0,
                  "test_size": 0.25}


@dataclass(frozen=True)
class DigitsModel:
    """The trained classifier, exported, with its held-out digits.

    Attributes
    ----------
    onnx : bytes
        ``pixels`` float32 [batch, 64] (the data set's values, 0..16) →
        ``probabilities`` float32 [batch, 10].
    x_test, y_test : numpy.ndarray
        Held-out digits (float32 [n, 64]) and their labels (int64 [n]).
    accuracy : float
        Native onnxruntime's accuracy on the held-out digits.
    n_train : int
        Digits the classifier was trained on.
    """

    onnx: bytes
    x_test: np.ndarray
    y_test: np.ndarray
    accuracy: float
    n_train: int


def export_mlp(weights: list[np.ndarray], biases: list[np.ndarray], scale: float) -> bytes:
    """An ONNX model of a ReLU MLP with a softmax output (opset 17, IR 8).

    Parameters
    ----------
    weights, biases : list of numpy.ndarray
        Per layer: weights ``(n_in, n_out)`` and biases ``(n_out,)``, as
        scikit-learn's ``coefs_`` and ``intercepts_``.
    scale : float
        Input scaling the classifier was trained with (``x * scale``); folded
        into the first layer's weights.
    """
    from onnx import TensorProto, helper, numpy_helper

    from ..testing.samples import IR_VERSION, OPSET

    nodes, inits = [], []
    current = INPUT
    for i, (w, b) in enumerate(zip(weights, biases, strict=True)):
        w = np.asarray(w, np.float64) * (scale if i == 0 else 1.0)
        inits += [numpy_helper.from_array(w.astype(np.float32), f"W{i}"),
                  numpy_helper.from_array(np.asarray(b, np.float32), f"B{i}")]
        out = f"h{i}" if i < len(weights) - 1 else "logits"
        nodes.append(helper.make_node("Gemm", [current, f"W{i}", f"B{i}"], [out], name=f"dense{i}"))
        current = out
        if i < len(weights) - 1:
            nodes.append(helper.make_node("Relu", [out], [f"r{i}"], name=f"relu{i}"))
            current = f"r{i}"
    nodes.append(helper.make_node("Softmax", [current], [OUTPUT], axis=-1, name="softmax"))
    n_in, n_out = int(weights[0].shape[0]), int(weights[-1].shape[1])
    graph = helper.make_graph(
        nodes, "digits_mlp",
        [helper.make_tensor_value_info(INPUT, TensorProto.FLOAT, ["batch", n_in])],
        [helper.make_tensor_value_info(OUTPUT, TensorProto.FLOAT, ["batch", n_out])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                              ir_version=IR_VERSION, producer_name="ortweb demo")
    model.doc_string = "ortweb demo: scikit-learn MLPClassifier on the bundled digits data set"
    return bytes(model.SerializeToString())


def native_probabilities(model: bytes, x: np.ndarray) -> np.ndarray:
    """The model's probabilities from native onnxruntime (CPU)."""
    import onnxruntime as ort

    sess = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    (probabilities,) = sess.run(None, {INPUT: np.asarray(x, np.float32)})
    return np.asarray(probabilities)


def train_digits() -> DigitsModel:
    """Train the classifier on scikit-learn's bundled digits and export it."""
    from sklearn.datasets import load_digits
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.model_selection import train_test_split
    from sklearn.neural_network import MLPClassifier

    data = load_digits()
    x = data.data.astype(np.float32)
    y = data.target.astype(np.int64)
    x_train, x_test, y_train, y_test = train_test_split(
        x, y, test_size=_RECIPE["test_size"], random_state=_RECIPE["seed"], stratify=y
    )
    clf = MLPClassifier(hidden_layer_sizes=(_RECIPE["hidden"],), max_iter=_RECIPE["max_iter"],
                        tol=_RECIPE["tol"], random_state=_RECIPE["seed"])
    with warnings.catch_warnings():
        # A few hundred iterations are plenty for 97 %; sklearn would still warn.
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf.fit(x_train / 16.0, y_train)
    onnx_bytes = export_mlp(list(clf.coefs_), list(clf.intercepts_), 1.0 / 16.0)
    native = native_probabilities(onnx_bytes, x_test)
    expected = clf.predict_proba(x_test / 16.0)
    if not np.allclose(native, expected, rtol=1e-4, atol=1e-5):
        raise RuntimeError("the exported ONNX model disagrees with scikit-learn's predict_proba")
    accuracy = float((native.argmax(axis=1) == y_test).mean())
    return DigitsModel(onnx_bytes, x_test, y_test, accuracy, len(x_train))


def _recipe_key() -> str:
    import sklearn

    recipe = {**_RECIPE, "sklearn": sklearn.__version__, "numpy": np.__version__}
    return hashlib.sha256(json.dumps(recipe, sort_keys=True).encode()).hexdigest()[:16]


def digits_model(cache: Path | None = None) -> DigitsModel:
    """The trained model, from ``cache`` when it holds one of the same recipe.

    Parameters
    ----------
    cache : Path, optional
        Folder for ``digits.onnx`` and the held-out digits (default
        ``build/demo`` of the checkout); None-existent folders are created.
    """
    cache = cache or find_assets().root / "build" / "demo"
    meta_path, model_path, data_path = (cache / "digits.json", cache / "digits.onnx",
                                        cache / "digits-heldout.npz")
    try:
        meta = json.loads(meta_path.read_text())
        if meta["key"] == _recipe_key():
            with np.load(data_path) as data:
                return DigitsModel(model_path.read_bytes(), data["x"], data["y"],
                                   float(meta["accuracy"]), int(meta["n_train"]))
    except (OSError, ValueError, KeyError):
        pass
    model = train_digits()
    cache.mkdir(parents=True, exist_ok=True)
    model_path.write_bytes(model.onnx)
    np.savez(data_path, x=model.x_test, y=model.y_test)
    meta_path.write_text(json.dumps({"key": _recipe_key(), "accuracy": model.accuracy,
                                     "n_train": model.n_train}))
    return model


def demo_inputs(model: DigitsModel, folder: Path) -> dict[str, Path]:
    """Write the site's inputs into ``folder``: model, app script, its files."""
    from . import inpage

    inpage_dir = Path(inpage.__file__).parent
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "digits.onnx").write_bytes(model.onnx)
    samples = [{"pixels": [int(v) for v in x], "label": int(y)}
               for x, y in zip(model.x_test[:PAGE_SAMPLES], model.y_test[:PAGE_SAMPLES],
                               strict=True)]
    (folder / "digits_samples.json").write_text(json.dumps(samples))
    for name in ("digits_app.py", "digits_features.py"):
        shutil.copyfile(inpage_dir / name, folder / name)
    return {"model": folder / "digits.onnx", "script": folder / "digits_app.py",
            "features": folder / "digits_features.py",
            "samples": folder / "digits_samples.json"}


def build_demo_site(out: Path, model: DigitsModel, *,
                    providers: tuple[str, ...] = ("webgpu", "wasm"),
                    work: Path | None = None, assets: Assets | None = None) -> Any:
    """Build the digits site into ``out`` (replacing an earlier demo site there).

    Parameters
    ----------
    out : Path
        The site's folder.
    model : DigitsModel
    providers : tuple of str
        Default providers of the page (its switch offers these).
    work : Path, optional
        Where the site's inputs are written first (default: next to ``out``).
    assets : Assets, optional

    Returns
    -------
    ortweb.host.build.site.SiteReport
    """
    from .build.site import build_site

    assets = assets or find_assets()
    inputs = demo_inputs(model, work or out.parent / f".{out.name}-inputs")
    return build_site(
        inputs["model"], inputs["script"], out,
        title="ortweb · handwritten digits",
        providers=providers,
        template="digits",
        files=[inputs["features"], inputs["samples"]],
        force=False,
        assets=assets,
        extra_context={"accuracy": model.accuracy, "n_train": model.n_train,
                       "n_test": len(model.y_test)},
    )


# -- the headless check -----------------------------------------------------------------


@dataclass
class ProviderCheck:
    """Held-out digits through the page on one provider, against native onnxruntime."""

    requested: str
    provider: str = ""
    n: int = 0
    agree: int = 0
    max_abs: float = float("nan")
    accuracy: float = float("nan")
    ms_per_inference: float = float("nan")
    median_ms: float = float("nan")
    first_row: list[float] = field(default_factory=list)
    error: str = ""
    skipped: str = ""

    @property
    def ok(self) -> bool:
        return bool(self.skipped) or (not self.error and self.n > 0 and self.agree == self.n
                                      and self.max_abs <= 1e-4)


@dataclass
class DemoCheck:
    """What the headless check of the demo site found."""

    url: str
    cross_origin_isolated: bool = False
    ready_ms: float = float("nan")
    first_result_ms: float = float("nan")
    default_provider: str = ""
    providers: list[ProviderCheck] = field(default_factory=list)
    drawing_label: int | None = None
    drawing_native: int | None = None
    drawing_max_abs: float = float("nan")
    screenshot: Path | None = None
    blocked: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return (self.cross_origin_isolated and not self.blocked and not self.errors
                and bool(self.providers) and all(p.ok for p in self.providers)
                and not all(p.skipped for p in self.providers)
                and self.drawing_label is not None and self.drawing_label == self.drawing_native
                and self.drawing_max_abs <= 1e-4)


def draw_digit(page: SitePage, strokes: list[list[tuple[float, float]]]) -> None:
    """Draw ``strokes`` on the page's canvas with the mouse.

    Parameters
    ----------
    strokes : list of list of (x, y)
        Points in canvas fractions (0..1), one list per pen-down stroke.
    """
    box = page.page.locator("#pad").bounding_box()
    assert box is not None, "the page has no #pad canvas"
    mouse = page.page.mouse
    for stroke in strokes:
        x0, y0 = stroke[0]
        mouse.move(box["x"] + x0 * box["width"], box["y"] + y0 * box["height"])
        mouse.down()
        for x, y in stroke[1:]:
            mouse.move(box["x"] + x * box["width"], box["y"] + y * box["height"], steps=8)
        mouse.up()


#: A "7": a bar, then a long diagonal.
SEVEN: Final = [[(0.25, 0.2), (0.75, 0.2), (0.45, 0.85)]]


def shown_count(page: SitePage) -> int:
    """How many results the page has shown so far (``#prediction[data-seq]``)."""
    return int(page.evaluate("() => Number(document.getElementById('prediction').dataset.seq)"))


def wait_prediction(page: SitePage, after: int, timeout: float = 120.0) -> dict[str, Any]:
    """Wait until the page shows a result after the ``after``-th; returns it."""
    page.page.wait_for_function(
        "(n) => Number(document.getElementById('prediction')?.dataset.seq ?? 0) > n",
        arg=after, timeout=timeout * 1000,
    )
    return dict(page.evaluate("() => window.digits.last"))


def clear_and_draw(page: SitePage, strokes: list[list[tuple[float, float]]]) -> dict[str, Any]:
    """Clear the pad, draw ``strokes`` with the mouse; returns the result shown for them."""
    count = shown_count(page)
    page.page.click("#clear")
    # Clearing shows its own (empty) result first; wait for it, so that the
    # next result is the drawing's and not a stale one.
    wait_prediction(page, count)
    count = shown_count(page)
    draw_digit(page, strokes)
    return wait_prediction(page, count)


def check_provider(page: SitePage, model: DigitsModel, provider: str,
                   native: np.ndarray) -> ProviderCheck:
    """Feed every held-out digit through the page on ``provider``; compare with native."""
    from .sitepage import SiteFailure

    check = ProviderCheck(provider)
    status = page.call("status")
    if provider not in status["available"]:
        check.skipped = status["skipped"].get(provider, "not available in this browser")
        return check
    try:
        result = page.call("predict_features", model.x_test.tolist(), provider)
        bench = page.call("benchmark", provider, 20)
    except SiteFailure as exc:
        check.error = exc.traceback.strip().splitlines()[-1]
        return check
    got = np.asarray(result["probabilities"], np.float32)
    check.provider = result["provider"]
    check.n = len(got)
    check.agree = int((got.argmax(axis=1) == native.argmax(axis=1)).sum())
    check.max_abs = float(np.abs(got - native).max())
    check.accuracy = float((got.argmax(axis=1) == model.y_test).mean())
    check.ms_per_inference = float(result["ms_per_inference"])
    check.median_ms = float(bench["median_ms"])
    check.first_row = [float(v) for v in got[0]]
    return check


def check_demo(url: str, model: DigitsModel, *, browser: Browser | None = None,
               screenshot: Path | None = None) -> DemoCheck:
    """Open the demo site at ``url`` headless and check it (see module docstring)."""
    check = DemoCheck(url)
    own = browser is None
    browser = browser or Browser()
    try:
        with SiteContext(browser, url) as ctx, ctx.open(url) as page:
            check.ready_ms = page.timings()["ready"]
            page.page.wait_for_function("() => window.digits && window.digits.firstResultMs > 0",
                                        timeout=300_000)
            check.first_result_ms = float(page.evaluate("() => window.digits.firstResultMs"))
            check.cross_origin_isolated = bool(page.evaluate("() => crossOriginIsolated"))
            check.default_provider = str(page.call("status")["default"])
            native = native_probabilities(model.onnx, model.x_test)
            for provider in ("wasm", "webgpu"):
                check.providers.append(check_provider(page, model, provider, native))
            shown = clear_and_draw(page, SEVEN)
            if shown.get("source") == "drawing" and shown.get("label") is not None:
                check.drawing_label = int(shown["label"])
                expected = native_probabilities(model.onnx, np.asarray([shown["features"]]))[0]
                check.drawing_native = int(expected.argmax())
                check.drawing_max_abs = float(np.abs(np.asarray(shown["probabilities"])
                                                     - expected).max())
            if screenshot is not None:
                check.screenshot = page.screenshot(screenshot)
            check.errors = list(page.errors)
        check.blocked = ctx.blocked
    finally:
        if own:
            browser.close()
    return check


# -- serving -----------------------------------------------------------------------------


class ServedSite:
    """``ortweb serve DIR`` running in a child process; ``url`` once it listens."""

    def __init__(self, folder: Path, host: str = "127.0.0.1", port: int = 0):
        # The request log goes to a file: an unread pipe would fill and stall the server.
        self.log = tempfile.TemporaryFile(mode="w+")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "ortweb.cli", "serve", str(folder), "--host", host,
             "--port", str(port)],
            stdout=subprocess.PIPE, stderr=self.log, text=True,
        )
        assert self.proc.stdout is not None
        deadline = time.monotonic() + 60
        self.url = ""
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                break
            if " at http" in line:
                self.url = line.rsplit(" at ", 1)[1].strip()
                break
        if not self.url:
            log = self.requests_log()
            self.close()
            raise RuntimeError(f"`ortweb serve {folder}` did not start: {log}")

    def requests_log(self) -> str:
        """What the server logged so far (one line per request)."""
        self.log.flush()
        self.log.seek(0)
        return self.log.read()

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        self.log.close()

    def __enter__(self) -> ServedSite:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def serve_site(folder: Path, host: str = "127.0.0.1", port: int = 0) -> ServedSite:
    """Start ``ortweb serve folder`` in a child process (see :class:`ServedSite`)."""
    return ServedSite(folder, host, port)
