"""The digits demo: the model, the numpy preprocessing, and the page in real Chromium.

The page is served by the real ``ortweb serve`` command (a child process) and
driven through Playwright; every number it shows is compared with native
onnxruntime on the host. A screenshot of the page is saved under
``artifacts/`` (``$ORTWEB_ARTIFACTS`` overrides).
"""

from __future__ import annotations

import base64
import os
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import onnx
import pytest

from ortweb.host.browser import Browser, Runtime
from ortweb.host.demo import (
    INPUT,
    OUTPUT,
    SEVEN,
    DigitsModel,
    build_demo_site,
    clear_and_draw,
    digits_model,
    native_probabilities,
    serve_site,
    shown_count,
    wait_prediction,
)
from ortweb.host.inpage.digits_features import features_from_ink, features_from_rgba
from ortweb.host.sitepage import SiteContext, SitePage

ARTIFACTS = Path(os.environ.get("ORTWEB_ARTIFACTS",
                                Path(__file__).resolve().parents[1] / "artifacts"))


@pytest.fixture(scope="module")
def model() -> DigitsModel:
    return digits_model()


# -- the model and the preprocessing (no browser) ------------------------------------------


def test_model_is_trained_on_the_bundled_digits(model: DigitsModel) -> None:
    assert model.n_train + len(model.y_test) == 1797  # scikit-learn's digits, all of them
    assert model.accuracy > 0.93
    proto = onnx.load_model_from_string(model.onnx)
    onnx.checker.check_model(proto)
    assert [i.name for i in proto.graph.input] == [INPUT]
    assert [o.name for o in proto.graph.output] == [OUTPUT]
    probabilities = native_probabilities(model.onnx, model.x_test)
    assert probabilities.shape == (len(model.y_test), 10)
    np.testing.assert_allclose(probabilities.sum(axis=1), 1.0, rtol=1e-5)
    assert (probabilities.argmax(axis=1) == model.y_test).mean() == pytest.approx(model.accuracy)


def _as_drawing(pixels: np.ndarray, cell: int = 35) -> np.ndarray:
    """A data-set digit as a canvas would hold it: gray blocks, RGBA bytes."""
    ink = np.kron(pixels.reshape(8, 8) / 16.0, np.ones((cell, cell)))
    gray = np.round(255 * (1 - ink)).astype(np.uint8)
    rgba = np.stack([gray, gray, gray, np.full_like(gray, 255)], axis=-1)
    return rgba


def test_features_of_drawings_classify_like_the_data_set(model: DigitsModel) -> None:
    drawn = np.stack([features_from_rgba(_as_drawing(x).tobytes(), 280, 280)
                      for x in model.x_test])
    assert drawn.dtype == np.float32 and drawn.shape == (len(model.x_test), 64)
    assert drawn.min() >= 0 and drawn.max() <= 16
    same = (native_probabilities(model.onnx, drawn).argmax(axis=1)
            == native_probabilities(model.onnx, model.x_test).argmax(axis=1))
    # Cropping and re-thresholding lose detail, but most digits survive the trip.
    assert same.mean() > 0.8


def test_features_of_simple_strokes() -> None:
    assert not features_from_ink(np.zeros((280, 280), np.float32)).any()
    bar = np.zeros((280, 280), np.float32)
    bar[40:240, 130:152] = 1.0
    grid = features_from_ink(bar).reshape(8, 8)
    # A vertical bar is scaled to the full height and centred: the middle columns only.
    assert grid[:, 3:5].min() > 0 and not grid[:, :3].any() and not grid[:, 5:].any()
    transparent = np.zeros((10, 10, 4), np.uint8)  # untouched canvas: no ink
    assert not features_from_rgba(transparent.tobytes(), 10, 10).any()
    with pytest.raises(ValueError, match="RGBA"):
        features_from_rgba(b"\0" * 10, 2, 2)


# -- the page ---------------------------------------------------------------------------------


@pytest.fixture(scope="module", params=["worker", "main-thread"])
def served(request: pytest.FixtureRequest, model: DigitsModel,
           tmp_path_factory: pytest.TempPathFactory):
    # The demo as people get it (Python in a Web Worker) and with --main-thread.
    site = tmp_path_factory.mktemp("demo") / request.param
    build_demo_site(site, model, worker=request.param == "worker")
    with serve_site(site) as server:
        server.mode = request.param  # type: ignore[attr-defined]
        yield server


@pytest.fixture(scope="module")
def browser(ortweb_runtime: Runtime) -> Browser:
    # The session's Chromium: a second Playwright in the same thread cannot start.
    return ortweb_runtime.browser


@pytest.fixture(scope="module")
def context(browser: Browser, served) -> Iterator[SiteContext]:
    with SiteContext(browser, served.url) as ctx:
        yield ctx
        blocked = ctx.blocked
        requests = list(ctx.log.requests)
    assert not blocked, f"requests left 127.0.0.1: {blocked}"
    assert requests and all(u.startswith((served.url, "blob:", "data:")) for u in requests)


@pytest.fixture(scope="module")
def page(context: SiteContext, served) -> Iterator[SitePage]:
    p = context.open(served.url)
    p.page.wait_for_function("() => window.digits.firstResultMs > 0", timeout=300_000)
    assert p.evaluate("() => window.ortweb.mode") == served.mode
    yield p
    errors = list(p.errors)
    p.close()
    assert not errors, f"uncaught page errors: {errors}"


@pytest.mark.browser
@pytest.mark.parametrize("provider", [
    "wasm", pytest.param("webgpu", marks=pytest.mark.webgpu),
])
def test_held_out_digits_match_native(page: SitePage, model: DigitsModel, provider: str) -> None:
    status = page.call("status")
    if provider not in status["available"]:
        pytest.skip(f"{provider} unavailable: {status['skipped'].get(provider)}")
    result = page.call("predict_features", model.x_test.tolist(), provider)
    assert result["provider"] == provider
    got = np.asarray(result["probabilities"], np.float32)
    expected = native_probabilities(model.onnx, model.x_test)
    np.testing.assert_array_equal(np.asarray(result["labels"]), expected.argmax(axis=1))
    np.testing.assert_allclose(got, expected, rtol=1e-3, atol=1e-5)
    assert result["ms_per_inference"] > 0


@pytest.mark.browser
def test_first_result_is_on_screen(page: SitePage, model: DigitsModel) -> None:
    first = page.evaluate("() => window.digits.firstResultMs")
    timings = page.timings()
    assert timings["ready"] < first == timings["first-result"]
    shown = page.evaluate("() => window.digits.last")
    assert shown["source"] == "sample"
    native = native_probabilities(model.onnx, np.asarray([shown["features"]]))[0]
    assert shown["label"] == int(native.argmax())
    assert page.page.inner_text("#prediction") == str(shown["label"])
    bars = page.page.eval_on_selector_all("#chart .bar", "(bars) => bars.map((b) => +b.dataset.p)")
    np.testing.assert_allclose(bars, native, rtol=1e-3, atol=1e-5)
    status = page.call("status")
    assert page.page.inner_text("#ep-info").startswith(f"EP: {status['default']} · ")


@pytest.mark.browser
def test_mouse_drawing_gives_a_prediction(page: SitePage, model: DigitsModel) -> None:
    shown = clear_and_draw(page, SEVEN)
    assert shown["source"] == "drawing" and not shown.get("empty")
    # The page's numpy preprocessing (in Pyodide) equals the host's on the same pixels.
    pixels = base64.b64decode(page.evaluate("""() => {
        const c = document.getElementById('pad');
        const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
        let s = ''; for (let i = 0; i < d.length; i += 0x8000)
          s += String.fromCharCode.apply(null, d.subarray(i, i + 0x8000));
        return btoa(s); }"""))
    features = features_from_rgba(pixels, 280, 280)
    np.testing.assert_array_equal(np.asarray(shown["features"], np.float32), features)
    native = native_probabilities(model.onnx, features[None])[0]
    assert shown["label"] == int(native.argmax())
    np.testing.assert_allclose(shown["probabilities"], native, rtol=1e-3, atol=1e-5)
    assert page.page.inner_text("#prediction") == str(shown["label"])
    assert page.page.inner_text("#ep-info").startswith(f"EP: {shown['provider']} · ")
    shot = page.screenshot(ARTIFACTS / "digits-drawing.png")
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 10_000


@pytest.mark.browser
def test_the_switch_reruns_on_the_other_provider(page: SitePage, model: DigitsModel) -> None:
    count = shown_count(page)
    page.page.click("#sample")
    shown = wait_prediction(page, count)
    assert shown["source"] == "sample" and shown["truth"] == int(model.y_test[shown["index"]])
    others = [p for p in page.call("status")["available"] if p != shown["provider"]]
    if not others:
        pytest.skip(f"only {shown['provider']} is available in this browser")
    count = shown_count(page)
    page.page.check(f"#ep-{others[0]}")
    again = wait_prediction(page, count)
    assert again["provider"] == others[0] and again["index"] == shown["index"]
    native = native_probabilities(model.onnx, np.asarray([again["features"]]))[0]
    np.testing.assert_allclose(again["probabilities"], native, rtol=1e-3, atol=1e-5)
    assert page.page.inner_text("#ep-info").startswith(f"EP: {others[0]} · ")


@pytest.mark.browser
def test_isolated_and_the_second_visit_uses_the_cached_model(
    context: SiteContext, page: SitePage, served
) -> None:
    assert page.evaluate("() => crossOriginIsolated") is True
    # Fetched from where the site keeps it: its hash-keyed path.
    model_url = served.url + page.evaluate("() => window.ortweb.config.model.at")
    assert model_url.endswith("/app/digits.onnx") and model_url in page.requests
    with context.open(served.url) as again:
        assert model_url not in again.requests
        assert again.evaluate("() => window.ortweb.modelSource") == "cache"
        again.page.wait_for_function("() => window.digits.firstResultMs > 0", timeout=300_000)
        assert not again.errors
