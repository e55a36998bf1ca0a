"""Where a page runs: the browser, its endpoint and its WebGPU adapter.

Every result of a host tool names it (conformance and bench JSON, the pytest
report header), so that a figure or a failure measured on SwiftShader is never
taken for one of a real GPU.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .launch import Browser

__all__ = ["SOFTWARE_ADAPTERS", "adapter_text", "describe", "probe", "where_line"]

#: Adapters that are the CPU pretending (matched in the adapter's vendor,
#: architecture, device and description).
SOFTWARE_ADAPTERS = re.compile(r"swiftshader|llvmpipe|lavapipe|softpipe|\bwarp\b|"
                               r"microsoft basic render", re.IGNORECASE)

#: The page the probe runs in (never fetched: the probe's route answers it).
_PROBE_URL = "http://127.0.0.1:9/ortweb-probe.html"
_PROBE_JS = r"""
async () => {
  const gpu = navigator.gpu;
  if (!gpu) return { available: false, reason: 'navigator.gpu is missing' };
  let adapter = null;
  try { adapter = await gpu.requestAdapter(); } catch (err) {
    return { available: false, reason: `requestAdapter() failed: ${err}` };
  }
  if (!adapter) return { available: false, reason: 'requestAdapter() returned null' };
  const i = adapter.info || {};
  return {
    available: true, reason: '',
    vendor: String(i.vendor ?? ''), architecture: String(i.architecture ?? ''),
    device: String(i.device ?? ''), description: String(i.description ?? ''),
    fallback: Boolean(i.isFallbackAdapter ?? adapter.isFallbackAdapter ?? false),
    features: [...adapter.features].sort(),
  };
}
"""


def adapter_text(where: dict[str, Any] | None) -> str:
    """The adapter's vendor, architecture, device and description in one string
    (what ``adapter = "…"`` of a known failure is matched against)."""
    adapter = (where or {}).get("adapter") or {}
    return " ".join(str(adapter.get(k, "")) for k in ("vendor", "architecture", "device",
                                                     "description")).strip()


def describe(browser: Browser, probed: dict[str, Any]) -> dict[str, Any]:
    """The record of where pages of ``browser`` run, from :func:`probe`'s answer."""
    adapter = None
    if probed.get("available"):
        adapter = {k: probed.get(k, "") for k in ("vendor", "architecture", "device",
                                                 "description")}
    where: dict[str, Any] = {
        "endpoint": browser.endpoint.text if browser.endpoint is not None else "local",
        "kind": browser.endpoint.kind if browser.endpoint is not None else "local",
        "browser": f"chromium {browser.version}",
        "adapter": adapter,
        "adapter_reason": "" if adapter else str(probed.get("reason", "")),
        "features": list(probed.get("features", [])),
        "fallback": bool(probed.get("fallback", False)),
        "wasm_tiers": browser.tiers,
    }
    where["software"] = bool(adapter) and (
        where["fallback"] or bool(SOFTWARE_ADAPTERS.search(adapter_text(where))))
    return where


def probe(browser: Browser) -> dict[str, Any]:
    """Ask ``browser`` for its WebGPU adapter; returns :func:`describe`'s record.

    The page asking is a blank one at a loopback URL (a secure context, which
    WebGPU needs) that Playwright answers itself: nothing is fetched, and no
    server is needed; every other request of it is refused.
    """
    context = browser.new_context()
    try:
        context.route("**/*", lambda route: route.fulfill(body="", content_type="text/html")
                      if route.request.url == _PROBE_URL else route.abort())
        page = context.new_page()
        page.goto(_PROBE_URL)
        probed = page.evaluate(_PROBE_JS)
    finally:
        context.close()
    return describe(browser, probed)


def where_line(where: dict[str, Any]) -> str:
    """``chromium 156.0.… @ ws://…, adapter: google swiftshader (…), software``, and
    ``, wasm tiers: baseline`` when V8 compiles WebAssembly with Liftoff only."""
    line = f"{where['browser']} @ {where['endpoint']}"
    tiers = where.get("wasm_tiers", "")
    tail = f", wasm tiers: {tiers}" if tiers and tiers != "all" else ""
    adapter = where.get("adapter")
    if not adapter:
        return f"{line}, adapter: none ({where.get('adapter_reason', '')}){tail}"
    names = " ".join(v for v in (adapter["vendor"], adapter["architecture"]) if v) or "?"
    text = f"{line}, adapter: {names}"
    if adapter.get("description"):
        text += f" ({adapter['description']})"
    if where.get("software"):
        text += ", software"
    return text + tail
