"""The large-model section: a model of about 1 GB of float32 weights in external data.

Per round, in rotating order, each side in a fresh browser profile on disk (empty
HTTP cache and storage, a renderer of its own; an off-the-record context keeps its
storage in memory, where a user's browser reads the file cache from disk, see
:class:`~ortweb.host.browser.Profile`): plain onnxruntime-web loading the model by URL
(``web/large_plain.js``), ortweb loading the same URL, and ortweb loading it from
Pyodide's file system. Each page starts ORT-web's runtime on a tiny model first, so
only the large model's load is timed, in the page, from the call to the ready
session. No side goes through a request router (Playwright's interception slows a
download of this size noticeably, and the plain page has none). Memory is the
renderer process's peak resident memory during that load, read from the OS
(``VmHWM``, reset just before the load, :mod:`.procmem`).

The ortweb page then loads the URL a second time, from ortweb's file cache (the
Origin Private File System): ``large_warm_ratio`` is that load over the first,
recorded only when the second load made no request for the model's files. A fourth
side loads the URL with ``cache=False`` (what keeping the files costs a first load).
The >2 GB model (detail rows) and WebGPU loads run once each.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from .. import inpage
from ..browser import Profile, PyodidePage, Runtime
from .figures import Recorder
from .models import large_model
from .pages import call
from .plan import Plan
from .procmem import peak_bytes, reset_peak

__all__ = ["large"]

Say = Callable[[str], None]


class _Measured:
    """One load in a fresh browser profile: the page opened and prepared by ``open_``,
    then the renderer's peak memory measured around ``load``."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime

    def __call__(self, open_: Callable[[Profile], Any], load: Callable[[Any], dict[str, Any]],
                 then: Callable[[Any], dict[str, Any]] | None = None) -> dict[str, Any]:
        """``load``'s result with ``peak_bytes``, updated with ``then``'s (run after the
        peak is read, in the same page)."""
        with self.runtime.browser.profile() as profile:
            handle = open_(profile)
            pids = profile.renderer_pids()
            for pid in pids:
                reset_peak(pid)
            out = load(handle)
            # The page's renderer is the one that just held the model: the profile's
            # others (its spare renderer and the like) stay small.
            out["peak_bytes"] = max((peak_bytes(p) for p in pids), default=0)
            if then is not None:
                out.update(then(handle))
        return out


def _plain_side(runtime: Runtime, warm: str, query: str
                ) -> tuple[Callable[[Profile], Any], Callable[[Any], dict[str, Any]]]:
    def open_(profile: Profile) -> Any:
        # No router: the anchor loads as in a plain browser, with nothing in between.
        context = profile.new_context()
        page = context.pages[0] if context.pages else context.new_page()
        page.goto(runtime.server.url.rstrip("/") + "/large_plain.html")
        _plain(page, f"model={warm}&run=0")
        return page

    def load(page: Any) -> dict[str, Any]:
        marks = _plain(page, query)["marks"]
        return {"ms": marks["session_created"] - marks["load_start"]}

    return open_, load


def _plain(page: Any, query: str) -> dict[str, Any]:
    out = page.evaluate("(q) => window.largeLoad(q)", query)
    if not out.get("ok"):
        raise RuntimeError(f"plain-JS large-model page failed: {out.get('message')}")
    return dict(out)


def _ortweb_page(runtime: Runtime, profile: Profile, warm: str,
                 files: dict[str, str] | None = None) -> PyodidePage:
    # Unrouted, as the plain-JS anchor: Playwright's interception would slow the
    # download on ortweb's side only.
    page = PyodidePage(profile, runtime.server.url, routed=False)
    try:
        call(page, inpage.source("bench_large"))
        call(page, f"await bench_large_warm({warm!r}) or 'true'")
        for url, path in (files or {}).items():
            page.write_file(url, path)
    except BaseException:
        page.close()
        raise
    return page


def _load(page: PyodidePage, source: str, provider: str, prefix: str, cache: bool = True
          ) -> dict[str, Any]:
    return dict(call(page, f"await bench_large_load({source!r}, {provider!r}, {prefix!r}, "
                           f"{cache!r})"))


def large(runtime: Runtime, plan: Plan, rec: Recorder, say: Say, notes: dict[str, Any]
          ) -> list[str]:
    """``large_load_ratio``, ``large_peak_mem_ratio``, ``large_warm_ratio`` and their
    detail rows (see the module's docstring)."""
    say(f"bench: large model: writing {plan.large_mib} MiB of weights once (build/large/)")
    model = large_model(plan.large_mib)
    names = sorted(p.name for p in model.parent.iterdir() if p.name != "model.onnx")
    measure = _Measured(runtime)
    with runtime.shared_folder() as (folder, prefix):
        # Imported here: the samples import onnx, which `ortweb`'s other commands never load.
        from ...testing.samples import matmul_relu_model

        (folder / "tiny.onnx").write_bytes(matmul_relu_model(8))
        warm = prefix + "tiny.onnx"
        mount = prefix + "large/"
        runtime.server.add_mount(mount, model.parent)
        try:
            url = mount + "model.onnx"
            query = f"model={url}&data={','.join(names)}&run=0"
            in_fs = {mount + n: f"/tmp/large/{n}" for n in ["model.onnx", *names]}

            def warm_load(page: PyodidePage) -> dict[str, Any]:
                # The files are written to the file cache in the background: a later
                # visit finds them there, so the second load starts once they are.
                call(page, "await bench_large_cache_settled()")
                second = _load(page, url, "wasm", mount)  # from the file cache
                return {"warm_ms": second["ms"], "warm_requests": second["requests"]}

            sides: dict[str, Callable[[], dict[str, Any]]] = {
                "plain": lambda: measure(*_plain_side(runtime, warm, query)),
                "url": lambda: measure(lambda pr: _ortweb_page(runtime, pr, warm),
                                       lambda p: _load(p, url, "wasm", mount), warm_load),
                "path": lambda: measure(lambda pr: _ortweb_page(runtime, pr, warm, in_fs),
                                        lambda p: _load(p, "/tmp/large/model.onnx", "wasm",
                                                        mount)),
                # What keeping the files in the file cache costs the first load.
                "nocache": lambda: measure(lambda pr: _ortweb_page(runtime, pr, warm),
                                           lambda p: _load(p, url, "wasm", mount, False)),
            }
            say(f"bench: large model: {plan.large_reps} rounds of plain JS, ortweb by URL (also "
                "without its cache) and by path, each in a fresh browser profile")
            order = list(sides)
            for i in range(plan.large_reps):
                shift = i % len(order)
                got = {k: sides[k]() for k in order[shift:] + order[:shift]}
                _record(rec, got, notes)
            details = _details()
            if plan.large_webgpu:
                details += _webgpu(runtime, measure, warm, url, query, mount, rec, say, notes)
        finally:
            runtime.server.remove_mount(mount)
        if plan.large_over2g_mib:
            details += _over_2g(runtime, measure, plan, folder, prefix, warm, rec, say)
    return details


def _record(rec: Recorder, got: dict[str, dict[str, Any]], notes: dict[str, Any]) -> None:
    plain, url, path = got["plain"], got["url"], got["path"]
    rec.add("large_load_ratio", [url["ms"] / plain["ms"]])
    rec.add("large_peak_mem_ratio", [url["peak_bytes"] / plain["peak_bytes"]])
    sides = [("plain", plain), ("ortweb_url", url), ("ortweb_path", path),
             ("ortweb_url_nocache", got["nocache"])]
    for side, out in sides:
        rec.add(f"large_{side}_load_ms", [out["ms"]])
        rec.add(f"large_{side}_peak_mb", [out["peak_bytes"] / 1e6])
    for side, out in (("ortweb_url", url), ("ortweb_path", path)):
        growth = out["pyodide_heap_after"] - out["pyodide_heap_before"]
        rec.add(f"large_{side}_pyodide_heap_growth_mb", [growth / 1e6])
    if "warm_ms" in url:
        if url["warm_requests"]:
            notes["large_warm_ratio"] = (f"not recorded: the second load made "
                                         f"{url['warm_requests']} requests for the model")
        else:
            rec.add("large_warm_ratio", [url["warm_ms"] / url["ms"]])
            rec.add("large_ortweb_warm_load_ms", [url["warm_ms"]])


def _details() -> list[str]:
    sides = ("plain", "ortweb_url", "ortweb_path", "ortweb_url_nocache")
    rows = [f"large_{side}_{what}" for what in ("load_ms", "peak_mb") for side in sides]
    rows += ["large_ortweb_url_pyodide_heap_growth_mb", "large_ortweb_path_pyodide_heap_growth_mb"]
    return [*rows, "large_ortweb_warm_load_ms"]


def _webgpu(runtime: Runtime, measure: _Measured, warm: str, url: str, query: str, mount: str,
            rec: Recorder, say: Say, notes: dict[str, Any]) -> list[str]:
    """One load each on WebGPU, plain JS and ortweb, where the adapter allows."""
    say("bench: large model on webgpu: one load each, plain JS and ortweb")
    try:
        plain = measure(*_plain_side(runtime, warm, query + "&ep=webgpu"))
        ours = measure(lambda pr: _ortweb_page(runtime, pr, warm),
                       lambda p: _load(p, url, "webgpu", mount))
    except Exception as exc:  # no adapter, or one too small: said, not fatal
        notes["large_webgpu"] = f"not measured: {str(exc)[:300]}"
        return []
    if ours.get("provider") != "webgpu":
        notes["large_webgpu"] = f"not measured: ortweb ran on {ours.get('provider')}"
        return []
    rec.add("large_plain_webgpu_load_ms", [plain["ms"]])
    rec.add("large_ortweb_webgpu_load_ms", [ours["ms"]])
    return ["large_plain_webgpu_load_ms", "large_ortweb_webgpu_load_ms"]


def _over_2g(runtime: Runtime, measure: _Measured, plan: Plan, folder: Path, prefix: str,
             warm: str, rec: Recorder, say: Say) -> list[str]:
    """The model over 2 GB: one load by URL each, plain JS and ortweb, on wasm."""
    say(f"bench: model over 2 GB ({plan.large_over2g_mib} MiB, written once): one load each")
    big = large_model(plan.large_over2g_mib)
    names = sorted(p.name for p in big.parent.iterdir() if p.name != "model.onnx")
    mount = prefix + "big/"
    runtime.server.add_mount(mount, big.parent)
    try:
        url = mount + "model.onnx"
        plain = measure(*_plain_side(runtime, warm, f"model={url}&data={','.join(names)}&run=0"))
        ours = measure(lambda pr: _ortweb_page(runtime, pr, warm),
                       lambda p: _load(p, url, "wasm", mount))
    finally:
        runtime.server.remove_mount(mount)
    tag = f"{plan.large_over2g_mib}mib"
    rec.add(f"large_{tag}_plain_load_ms", [plain["ms"]])
    rec.add(f"large_{tag}_ortweb_load_ms", [ours["ms"]])
    rec.add(f"large_{tag}_plain_peak_mb", [plain["peak_bytes"] / 1e6])
    rec.add(f"large_{tag}_ortweb_peak_mb", [ours["peak_bytes"] / 1e6])
    return [f"large_{tag}_{side}_{what}" for what in ("load_ms", "peak_mb")
            for side in ("plain", "ortweb")]


