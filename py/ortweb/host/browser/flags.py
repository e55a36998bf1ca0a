"""Chromium's command line for the browsers ortweb launches, or asks a Playwright
server to launch: quiet and offline, real WebGPU on SwiftShader, and the features
they need in one ``--enable-features`` (Chromium keeps only the last of a switch
given twice, so lists of features are merged, never repeated: :func:`merge_features`).
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["BASE_FLAGS", "FEATURES", "WEBGPU_FLAGS", "launch_flags", "merge_features"]

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
    # gc() in the page, so leak meters can read after a collection, not before.
    "--js-flags=--expose-gc",
    # performance.measureUserAgentSpecificMemory() at once, not at the next collection
    # (seconds later): the leak tests measure workers' memory with it.
    "--enable-blink-features=ForceEagerMeasureMemory",
)
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


def launch_flags(webgpu: bool = True) -> list[str]:
    """Chromium's command-line flags for a browser ortweb launches (or asks a
    Playwright server to launch): :data:`BASE_FLAGS`, :data:`WEBGPU_FLAGS` or
    ``--disable-gpu``, and :data:`FEATURES` (with ``Vulkan`` for WebGPU) in one
    ``--enable-features``."""
    gpu = WEBGPU_FLAGS if webgpu else ("--disable-gpu",)
    names = (*FEATURES, "Vulkan") if webgpu else FEATURES
    return [*BASE_FLAGS, *gpu, "--enable-features=" + ",".join(names)]


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
