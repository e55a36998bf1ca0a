"""The flags ortweb launches Chromium with, and the renderer crash one of them prevents.

Chromium's heap profiler samples allocations in a tenth of renderers and walks each
sampled allocation's stack by frame pointers up to the thread's stack end; when the
allocation happens on a JSPI stack (Pyodide runs Python on one), the walk runs off
that stack into a guard page and the renderer dies (crbug.com/402542102). Left to
chance it killed about one page in a hundred of the suite's; with the profiler on in
every renderer it kills every page, which is how the test below makes it certain.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ortweb.host.browser import (
    FEATURES,
    Browser,
    BrowserError,
    Runtime,
    flags,
    launch_flags,
    merge_features,
)

GUARD = "StackScanMaxFramePointerToStackEndGap"
#: The heap profiler in every renderer, sampling every 10 kB on average.
PROFILER_EVERYWHERE = ("HeapProfilerReporting:stable-probability/1.0/nonstable-probability/1.0/"
                       "renderer-prob-pct/100/renderer-sampling-rate-bytes/10000")


@pytest.mark.parametrize("webgpu", [True, False])
def test_one_enable_features_carries_every_feature(webgpu: bool) -> None:
    # Chromium keeps only the last --enable-features: a second one would drop the first.
    args = launch_flags(webgpu)
    enables = [f for f in args if f.startswith("--enable-features=")]
    assert len(enables) == 1
    names = enables[0].split("=", 1)[1].split(",")
    assert GUARD in names and set(FEATURES) <= set(names)
    assert ("Vulkan" in names) == webgpu
    assert ("--enable-unsafe-webgpu" in args) == webgpu and ("--disable-gpu" in args) != webgpu


def test_features_given_twice_become_one_list() -> None:
    args = ["--a", "--enable-features=A,B", "--disable-features=X", "--b",
            "--enable-features=B,C,C", "--enable-features=", "--disable-features=Y,X"]
    assert merge_features(args) == ["--a", "--b", "--enable-features=A,B,C",
                                    "--disable-features=X,Y"]
    plain = ["--a", "--enable-features=A", "--enable-blink-features=Z"]
    assert merge_features(plain) == plain
    assert merge_features([*launch_flags(), "--enable-features=Mine"])[-1] == (
        f"--enable-features={','.join(FEATURES)},Vulkan,Mine")


def test_one_js_flags_carries_the_wasm_tiers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(flags.TIERS_ENV_VAR, raising=False)

    def js(args: list[str]) -> list[str]:
        (only,) = [a for a in args if a.startswith("--js-flags=")]
        return only.split("=", 1)[1].split()

    assert js(launch_flags()) == ["--expose-gc"]  # V8's own tiers unless told
    assert js(launch_flags(tiers="baseline")) == ["--expose-gc", "--liftoff-only"]
    monkeypatch.setenv(flags.TIERS_ENV_VAR, "baseline")
    assert js(launch_flags()) == ["--expose-gc", "--liftoff-only"]
    assert js(launch_flags(tiers="all")) == ["--expose-gc"]  # a caller's choice wins
    monkeypatch.setenv(flags.TIERS_ENV_VAR, "turbofan")
    with pytest.raises(BrowserError, match=r"\$ORTWEB_WASM_TIERS: expected one of 'all', "
                                           r"'baseline', got 'turbofan'"):
        launch_flags()
    with pytest.raises(BrowserError, match=r"wasm_tiers: expected one of .* got 'fast'"):
        flags.wasm_tiers("fast")


@pytest.mark.browser
@pytest.mark.parametrize("tiers", ["all", "baseline"])
def test_a_browser_runs_with_the_tiers_it_was_given(ortweb_assets, ortweb_server,
                                                    tiers: str) -> None:
    with Browser(tiers=tiers) as browser:
        with Runtime(ortweb_assets, ortweb_server, browser).new_page() as page:
            assert page.run_python("import numpy as np\nfloat(np.arange(10.0).sum())") == 45.0
            assert page.page.evaluate("() => typeof gc") == "function"
            # What the renderers (where V8 runs) were started with, as Chromium lists them.
            cdp = browser._browser.new_browser_cdp_session()
            processes = cdp.send("SystemInfo.getProcessInfo")["processInfo"]
            cdp.detach()
            renderers = [p["id"] for p in processes if p["type"] == "renderer"]
            assert renderers, processes
            want = "--js-flags=--expose-gc" + (" --liftoff-only" if tiers == "baseline" else "")
            for pid in renderers:
                # A renderer rewrites its title: one space-joined string.
                title = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
                assert f" {want} --" in title, title
                assert title.count("--liftoff-only") == (tiers == "baseline"), title
        assert browser.tiers == tiers


def _boot_pages(assets: Any, server: Any, features: tuple[str, ...], pages: int,
                monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """What each of ``pages`` fresh pages gave ("ok" or the error), one after the other,
    in a Chromium launched with ``features``; stops at the first failure."""
    monkeypatch.setattr(flags, "FEATURES", features)
    seen: list[str] = []
    # V8's default tiers: on Liftoff's code alone (the suite's default, conftest) the
    # walk does not run off the stack, and the unguarded pages would not crash.
    with Browser(webgpu=False, tiers="all") as browser:
        runtime = Runtime(assets, server, browser)
        for _ in range(pages):
            page = runtime.new_page()
            try:
                page.run_python("import numpy as np\nfloat(np.ones(1000).sum())")
                seen.append("ok")
            except Exception as exc:
                seen.append(f"{type(exc).__name__}: {exc}")
                break
            finally:
                page.close()
    return seen


@pytest.mark.browser
def test_the_guard_keeps_a_profiled_renderer_alive(ortweb_assets, ortweb_server, monkeypatch):
    unguarded = (*(f for f in FEATURES if f != GUARD), PROFILER_EVERYWHERE)
    crashed = _boot_pages(ortweb_assets, ortweb_server, unguarded, 2, monkeypatch)
    # Without the guard the profiled page dies: the test can fail. When it no longer
    # does, Chromium has fixed the walk, and the guard (and this test) can go.
    assert crashed[-1] != "ok" and "crashed" in crashed[-1], (
        f"Chromium no longer crashes a profiled JSPI page without {GUARD}: {crashed}")
    guarded = (*FEATURES, PROFILER_EVERYWHERE)
    assert _boot_pages(ortweb_assets, ortweb_server, guarded, 2, monkeypatch) == ["ok", "ok"]
