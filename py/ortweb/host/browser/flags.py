"""Chromium's command line for the browsers ortweb launches, or asks a Playwright
server to launch: quiet and offline, real WebGPU on SwiftShader, and the features
they need in one ``--enable-features`` (Chromium keeps only the last of a switch
given twice, so lists of features are merged, never repeated: :func:`merge_features`).

How V8 compiles the pages' WebAssembly is a choice (:data:`WASM_TIERS`): V8's own
way, or its baseline compiler only, which starts pages sooner and leaves the CPU to
the work of short runs, such as a test suite's.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from ..errors import BrowserError

__all__ = ["BASE_FLAGS", "FEATURES", "JS_FLAGS", "TIERS_ENV_VAR", "WASM_TIERS", "WEBGPU_FLAGS",
           "launch_flags", "merge_features", "wasm_tiers"]

#: Flags for a quiet, offline headless Chromium (no background traffic).
BASE_FLAGS = (
    "--no-sandbox",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
    "--disable-default-apps",
    "--disable-extensions",
    # performance.measureUserAgentSpecificMemory() at once, not at the next collection
    # (seconds later): the leak tests measure workers' memory with it.
    "--enable-blink-features=ForceEagerMeasureMemory",
)
#: V8's flags in every browser ortweb launches (one ``--js-flags``, with those of
#: :data:`WASM_TIERS`): gc() in the page, so leak meters can read after a
#: collection, not before.
JS_FLAGS = ("--expose-gc",)
#: V8's flags for each way of compiling WebAssembly. ``"all"`` is V8's default: every
#: function compiled by Liftoff, its baseline compiler, as it is first called, and the
#: ones that run hot compiled again by TurboFan in the background. ``"baseline"``
#: stops at Liftoff: a page boots sooner and spends less CPU, since Pyodide's boot
#: makes hundreds of its functions hot and TurboFan recompiles them on other cores,
#: while long computations (a large model's many runs) run slower. Benchmarks always
#: use ``"all"``, what visitors' browsers do.
WASM_TIERS = {"all": (), "baseline": ("--liftoff-only",)}
#: Names the tiers of the browsers ortweb launches when no caller does (default ``all``).
TIERS_ENV_VAR = "ORTWEB_WASM_TIERS"
#: Chromium features on in every browser ortweb launches (see :func:`launch_flags`).
#: ``StackScanMaxFramePointerToStackEndGap`` is Chromium's own guard for
#: crbug.com/402542102, off by default outside ChromeOS: its heap profiler, which
#: samples a tenth of renderers, walks the stack of an allocation by frame pointers up
#: to the thread's stack end, and on a JSPI stack (Pyodide runs Python on one) that
#: walk runs off the stack into a guard page and the renderer dies (SIGSEGV, "the page
#: crashed"). With the guard the walk stops there. The last two are Playwright's own,
#: which a second ``--enable-features`` would drop (Chromium keeps the last one only).
FEATURES = ("StackScanMaxFramePointerToStackEndGap", "CDPScreenshotNewSurface",
            "SkipListAccountsWithoutGaiaCookies")
#: Real WebGPU through SwiftShader (Vulkan on the CPU; :func:`launch_flags` adds the
#: ``Vulkan`` feature).
WEBGPU_FLAGS = ("--enable-unsafe-webgpu",)


def wasm_tiers(given: str | None = None, default: str = "all") -> str:
    """``given``, else ``$ORTWEB_WASM_TIERS``, else ``default``: a name of
    :data:`WASM_TIERS`.

    Raises
    ------
    BrowserError
        When the name is none of :data:`WASM_TIERS`' (the variable's, or ``given``).
    """
    where = "wasm_tiers"
    if given is None:
        given = os.environ.get(TIERS_ENV_VAR, "").strip() or default
        where = f"${TIERS_ENV_VAR}"
    if given not in WASM_TIERS:
        raise BrowserError(f"{where}: expected one of {', '.join(map(repr, WASM_TIERS))}, "
                           f"got {given!r}")
    return given


def launch_flags(webgpu: bool = True, tiers: str | None = None) -> list[str]:
    """Chromium's command-line flags for a browser ortweb launches (or asks a
    Playwright server to launch): :data:`BASE_FLAGS`, :data:`WEBGPU_FLAGS` or
    ``--disable-gpu``, :data:`JS_FLAGS` with those of the WebAssembly ``tiers``
    (see :func:`wasm_tiers`) in one ``--js-flags``, and :data:`FEATURES` (with
    ``Vulkan`` for WebGPU) in one ``--enable-features``."""
    gpu = WEBGPU_FLAGS if webgpu else ("--disable-gpu",)
    names = (*FEATURES, "Vulkan") if webgpu else FEATURES
    js = " ".join((*JS_FLAGS, *WASM_TIERS[wasm_tiers(tiers)]))
    return [*BASE_FLAGS, f"--js-flags={js}", *gpu, "--enable-features=" + ",".join(names)]


def merge_features(args: Iterable[str]) -> list[str]:
    """``args`` with each of ``--enable-features`` and ``--disable-features`` given
    once, listing every feature of all its occurrences in order (a later list's
    features after an earlier one's, each once), where its last occurrence was.

    Chromium honours only the last occurrence of a switch, so ``args`` that append
    their own list to ortweb's (a Playwright server's ``launch-options``) would
    otherwise drop ortweb's features, WebGPU's ``Vulkan`` among them.
    """
    args = list(args)
    merged: dict[str, list[str]] = {}
    last: dict[str, int] = {}
    for i, arg in enumerate(args):
        switch, sep, value = arg.partition("=")
        if sep and switch in ("--enable-features", "--disable-features"):
            names = merged.setdefault(switch, [])
            for name in value.split(","):
                if name and name not in names:
                    names.append(name)
            last[switch] = i
    out = []
    for i, arg in enumerate(args):
        switch = arg.partition("=")[0]
        if switch not in last:
            out.append(arg)
        elif last[switch] == i:
            out.append(f"{switch}={','.join(merged[switch])}")
    return out
