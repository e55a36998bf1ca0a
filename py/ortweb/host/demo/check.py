"""The headless check of the demo site: held-out digits per provider, a drawn digit."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import numpy as np

from ..browser import Browser
from ..sitepage import SiteContext, SitePage
from .model import DigitsModel, native_probabilities

__all__ = [
    "SEVEN",
    "DemoCheck",
    "ProviderCheck",
    "check_demo",
    "check_provider",
    "clear_and_draw",
    "draw_digit",
    "measure_first_visit",
    "shown_count",
    "wait_prediction",
]


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
    mode: str = ""
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
    #: A first visit in a fresh context with nothing between the page and the server
    #: (the check above goes through the offline router): over loopback, and on the
    #: network bench's ``broadband`` link (50 Mbit/s, 20 ms; Chromium's emulation on the
    #: page, its worker and its service worker), to the first result on the page.
    loopback_first_result_ms: float = float("nan")
    broadband_first_result_ms: float = float("nan")
    #: The compressed bytes the broadband visit downloaded before its first result.
    first_visit_bytes: int = 0
    network_skipped: str = ""

    def network_line(self) -> str:
        """The first visit on ``broadband`` next to loopback, as the demo prints it."""
        if self.network_skipped:
            return f"first visit on a 50 Mbit/s, 20 ms link: not measured ({self.network_skipped})"
        return (f"first visit: {self.first_visit_bytes / 1e6:.1f} MB compressed; first result "
                f"{self.broadband_first_result_ms / 1000:.2f} s on a 50 Mbit/s, 20 ms link "
                f"(Chromium's emulation), {self.loopback_first_result_ms / 1000:.2f} s over "
                "loopback")

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
    from ..sitepage import SiteFailure

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


#: In the page: ms from navigation start to the first result shown, once there is one.
_FIRST_RESULT: Final = "() => window.digits && window.digits.firstResultMs"


def measure_first_visit(check: DemoCheck, url: str, browser: Browser) -> None:
    """Fill ``check``'s first-visit figures: fresh contexts over loopback and on the
    ``broadband`` profile of ``ortweb bench --sections network``."""
    from ..bench.network import PROFILES, first_visit, on_the_link

    if browser.remote:
        # A browser elsewhere reaches the server only through a router, which would
        # be timed with the visit.
        check.network_skipped = "the browser is elsewhere"
        return
    loopback = first_visit(browser, url, PROFILES["loopback"], _FIRST_RESULT)
    # A visit some of whose files beat the link was not made on it: made again.
    broadband = on_the_link(
        lambda: first_visit(browser, url, PROFILES["broadband"], _FIRST_RESULT),
        PROFILES["broadband"], [])
    check.loopback_first_result_ms = loopback["s"] * 1000
    check.broadband_first_result_ms = broadband["s"] * 1000
    check.first_visit_bytes = int(broadband["bytes"])


def check_demo(url: str, model: DigitsModel, *, browser: Browser | None = None,
               screenshot: Path | None = None, skip_network: str = "") -> DemoCheck:
    """Open the demo site at ``url`` headless and check it (see :mod:`ortweb.host.demo`),
    then time two more first visits (:func:`measure_first_visit`) unless
    ``skip_network`` says why not (kept as ``network_skipped``)."""
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
            check.mode = str(page.evaluate("() => window.ortweb.mode"))
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
        if skip_network:
            check.network_skipped = skip_network
        else:
            measure_first_visit(check, url, browser)
    finally:
        if own:
            browser.close()
    return check
