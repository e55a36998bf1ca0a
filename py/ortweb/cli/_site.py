"""``ortweb site`` and ``ortweb demo``: static sites, and the digits demo built as one."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from . import UsageError, _providers

__all__ = ["add_site_arguments", "cmd_demo", "cmd_site"]


def add_site_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``ortweb site`` (kept here, next to the command)."""
    parser.add_argument("--model", type=Path, required=True, help="the ONNX model")
    parser.add_argument("--script", type=Path, required=True,
                        help="Python run in the page (top-level await allowed)")
    parser.add_argument("--out", type=Path, default=Path("site"),
                        help="folder to write (default: ./site)")
    parser.add_argument("--title", help="page title (default: the script's name)")
    parser.add_argument("--providers", type=_providers, default=["webgpu", "wasm"],
                        help="default providers, in order; decides which onnxruntime-web "
                             "builds and which other engines (tract, wonnx) ship "
                             "(default: webgpu,wasm)")
    parser.add_argument("--template", default="default",
                        help="a template name (folder of templates/) or a folder")
    parser.add_argument("--assets", choices=["local", "cdn"], default="local",
                        help="ship Pyodide and onnxruntime-web, or load them from jsDelivr")
    parser.add_argument("--file", type=Path, action="append", default=[],
                        help="another file for the script's working directory (repeatable)")
    parser.add_argument("--wheel", type=Path, action="append", default=[],
                        help="a wheel to install with micropip (offline, verified by the page) "
                             "before the script runs (repeatable)")
    parser.add_argument("--webgpu-build", choices=["native", "jsep"], default="native",
                        help="onnxruntime-web build for WebGPU sessions (default: native)")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--worker", dest="worker", action="store_true", default=True,
                      help="run Python and onnxruntime-web in a Web Worker, so the page never "
                           "blocks (the default; the script cannot touch the DOM there)")
    mode.add_argument("--main-thread", dest="worker", action="store_false",
                      help="run them on the page's main thread instead")
    parser.add_argument("--no-snapshot", dest="snapshot", action="store_false",
                        help="ship no Pyodide memory snapshot (made here in headless Chromium, "
                             "about 5 MB; it lets even the first visit skip Python's start-up)")
    parser.add_argument("--no-bytecode", dest="bytecode", action="store_false",
                        help="ship no bytecode of the Pyodide packages (compiled here in "
                             "headless Chromium, about 1.7 MB; it spares every visit compiling "
                             "their source)")
    parser.add_argument("--no-compress", dest="compress", action="store_false",
                        help="write no NAME.br / NAME.gz beside the files (brotli 11 and gzip "
                             "9, made once per machine and kept by content; `ortweb serve` "
                             "and hosts that serve precompressed files send them)")
    parser.add_argument("--force", action="store_true",
                        help="replace a non-empty folder that `ortweb site` did not write")


def cmd_site(args: argparse.Namespace) -> int:
    from ..host.build.site import SiteError, build_site

    try:
        report = build_site(
            args.model, args.script, args.out, title=args.title, providers=args.providers,
            template=args.template, assets_mode=args.assets, files=args.file,
            wheels=args.wheel, webgpu_build=args.webgpu_build, worker=args.worker,
            snapshot=args.snapshot, bytecode=args.bytecode, compress=args.compress,
            force=args.force,
        )
    except SiteError as exc:
        raise UsageError(str(exc)) from None
    print(f"ortweb site: {report.summary()}")
    if report.entries:
        print(report.byte_table())
    print(f"serve it: ortweb serve {args.out}   (or copy the folder to any static host)")
    return 0


def _row(values: list[float] | np.ndarray) -> str:
    return np.array2string(np.asarray(values, np.float32), precision=4, suppress_small=True,
                           max_line_width=200)


def cmd_demo(args: argparse.Namespace) -> int:
    """Build the digits demo site, check it headless, print what was found; serve it."""
    from ..host.build.assets import find_assets
    from ..host.build.site import SiteError
    from ..host.demo import build_demo_site, check_demo, digits_model, serve_site
    from ..host.serve import serve_forever

    work = find_assets().root / "build" / "demo"
    out = args.out or work / "site"
    model = digits_model(work)
    # The site people get runs Python in a Web Worker; the main-thread build is
    # checked beside it (the same page, `ortweb site --main-thread`).
    sites = {"worker": out, "main-thread": out.parent / f"{out.name}-main-thread"}
    try:
        reports = {mode: build_demo_site(folder, model, worker=mode == "worker",
                                         work=work / "inputs")
                   for mode, folder in sites.items()}
    except SiteError as exc:
        raise UsageError(str(exc)) from None
    say = (lambda *a, **k: None) if args.json else print
    say("ortweb demo: handwritten digits (scikit-learn's bundled data set, trained here)")
    say(f"  model: MLP 64-32-10 trained on {model.n_train} digits; held-out accuracy "
        f"{model.accuracy:.1%} on {len(model.y_test)} digits (native onnxruntime)")
    say("  site: " + reports["worker"].summary().replace("\n", "\n    "))
    say(f"  the same site with --main-thread: {sites['main-thread']}")
    ok = True
    if not args.no_check:
        from ..host.browser import BrowserPool, where_line
        from ._endpoints import endpoints, say_dropped

        checks = {}
        with BrowserPool(endpoints(args), executable=args.browser, log=say_dropped) as pool:
            browser = pool.browser(0)
            where = pool.where(browser)
            for mode, folder in sites.items():
                with serve_site(folder) as served:
                    say(f"  [{mode}] checking it in headless {where_line(where)} through "
                        f"`ortweb serve` at {served.url}")
                    shot = work / ("screenshot.png" if mode == "worker"
                                   else f"screenshot-{mode}.png")
                    # The first visit is timed on the site people get: the
                    # main-thread one downloads nearly the same files.
                    skip = "" if mode == "worker" else "timed on the worker site only"
                    checks[mode] = check_demo(served.url, model, browser=browser,
                                              screenshot=shot, skip_network=skip)
                if not args.json:
                    _print_check(checks[mode], model)
        ok = all(c.ok and c.mode == mode for mode, c in checks.items())
        if args.json:
            print(json.dumps({mode: {**_check_json(c), "browser": where}
                              for mode, c in checks.items()}, indent=2))
        print(f"demo: {'OK' if ok else 'FAILED'}: " + "; ".join(
            f"{mode}: outputs match native onnxruntime on "
            + ", ".join(f"{p.requested}={'skipped' if p.skipped else 'yes' if p.ok else 'NO'}"
                        for p in c.providers)
            + (f", drawn 7 shown as {c.drawing_label}" if c.drawing_label is not None
               else ", NO prediction for the drawn 7")
            + (f", blocked requests {c.blocked}" if c.blocked else ", no request left 127.0.0.1")
            for mode, c in checks.items()))
    if args.serve:
        serve_forever(out, host=args.host, port=args.port)
    elif not args.json:
        print("see it: python3 build.py demo --serve   (then open http://127.0.0.1:8000/)")
    return 0 if ok else 1


def _check_json(check: object) -> dict:
    from dataclasses import asdict

    data = asdict(check)  # type: ignore[call-overload]
    data["ok"] = getattr(check, "ok", False)
    return json.loads(json.dumps(data, default=str))


def _print_check(check: object, model: object) -> None:
    from ..host.demo import DemoCheck, DigitsModel, native_probabilities

    assert isinstance(check, DemoCheck) and isinstance(model, DigitsModel)
    print(f"  page ready {check.ready_ms / 1000:.1f} s after navigation; time to first inference "
          f"(page load → first result, measured in the browser): "
          f"{check.first_result_ms / 1000:.2f} s")
    print(f"  {check.network_line()}")
    print(f"  Python runs {'in a Web Worker' if check.mode == 'worker' else 'on the main thread'}"
          f"; crossOriginIsolated: {'yes' if check.cross_origin_isolated else 'NO'}; default EP "
          f"{check.default_provider}")
    for p in check.providers:
        if p.skipped:
            print(f"  provider {p.requested}: skipped ({p.skipped})")
        elif p.error:
            print(f"  provider {p.requested}: FAILED: {p.error}")
        else:
            print(f"  provider {p.provider}: {p.agree}/{p.n} held-out predictions equal native "
                  f"onnxruntime's, max|diff| {p.max_abs:.2g}, accuracy {p.accuracy:.1%}; "
                  f"{p.ms_per_inference:.3f} ms per inference in a batch of {p.n}, "
                  f"{p.median_ms:.2f} ms for one digit (median of 20)")
    native = native_probabilities(model.onnx, model.x_test[:1])[0]
    print(f"  held-out digit #0 (true label {int(model.y_test[0])}), probabilities:")
    print(f"    {'native':<7} {_row(native)}")
    for p in check.providers:
        if p.first_row:
            print(f"    {p.provider:<7} {_row(p.first_row)}")
    if check.drawing_label is None:
        print("  drawing a 7 with the mouse: NO prediction appeared on the page")
    else:
        print(f"  drawing a 7 with the mouse: the page shows {check.drawing_label}, native "
              f"onnxruntime on the same input says {check.drawing_native} "
              f"(max|diff| {check.drawing_max_abs:.2g})")
    if check.screenshot is not None:
        print(f"  screenshot: {check.screenshot}")
    for err in check.errors:
        print(f"  page error: {err}", file=sys.stderr)
