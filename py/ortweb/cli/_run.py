"""``ortweb run`` and ``ortweb demo``: a model through the Python API inside Pyodide."""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..host import inpage
from ..host.browser import PageFailure, PyodidePage, PythonFailure, Runtime, open_runtime
from ..host.external_data import model_data_files
from ..host.inputs import load_npz, model_inputs, random_inputs, save_npz
from ..host.native import Comparison, compare_all, run_native
from . import UsageError
from ._progress import MARK, PROGRESS_MIN_BYTES, ProgressBar

__all__ = ["ModelRun", "cmd_run", "run_in_page"]


@dataclass
class ModelRun:
    """What one browser run of a model produced."""

    model: str
    provider: str = ""
    skipped: dict[str, str] = field(default_factory=dict)
    outputs: dict[str, np.ndarray] = field(default_factory=dict)
    create_ms: float = 0.0
    run_ms: float = 0.0
    error: str = ""
    #: What ``--verify`` found (ProviderReport.verify).
    verify: str = ""
    comparisons: list[Comparison] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.error and all(c.ok for c in self.comparisons)

    def as_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "ok": self.ok,
            "provider": self.provider,
            "skipped": self.skipped,
            "verify": self.verify,
            "create_ms": round(self.create_ms, 3),
            "run_ms": round(self.run_ms, 3),
            "error": self.error,
            "outputs": [
                {"name": n, "dtype": str(a.dtype), "shape": list(a.shape)}
                for n, a in self.outputs.items()
            ],
            "compare_native": [c.as_dict() for c in self.comparisons],
        }


def run_in_page(
    runtime: Runtime,
    page: PyodidePage,
    model: bytes,
    feeds: dict[str, np.ndarray],
    providers: list[str],
    name: str = "model.onnx",
    data: dict[str, Path] | None = None,
    progress: bool = False,
    dims: dict[str, int] | None = None,
    trust: list[str] | None = None,
    verify: str | None = None,
    tolerance: tuple[float, float] = (1e-3, 1e-5),
) -> ModelRun:
    """Run ``model`` on ``feeds`` through ortweb inside ``page``; errors are kept, not raised.

    The model is loaded by URL from the local server, as a page loads one from its
    site; ``data`` maps each external data file the model names (its location) to
    the file on the host, served beside the model where it finds it. With
    ``progress`` the page prints its loading progress (:mod:`._progress`) on stderr.
    ``dims`` are the session's free-dimension overrides (``--dim``); ``trust`` the
    operators trusted on every provider given (``--trust``); ``verify`` the
    reference provider of ``--verify``, compared within ``tolerance`` (rtol, atol).
    """
    result = ModelRun(name)
    with runtime.shared_folder() as (folder, prefix):
        (folder / "model.onnx").write_bytes(model)
        save_npz(folder / "inputs.npz", feeds)
        work = "/tmp/ortweb-run"
        page.write_file(prefix + "inputs.npz", f"{work}/inputs.npz")
        for location, path in (data or {}).items():
            # Copied: the server refuses links that lead out of its folder.
            target = folder / location
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)
        args = {"model": prefix + "model.onnx", "inputs": f"{work}/inputs.npz",
                "outputs": f"{work}/outputs.npz", "providers": providers,
                "progress": MARK if progress else None, "dims": dims or {}, "trust": trust or [],
                "verify": verify, "tolerance": list(tolerance)}
        try:
            report = page.run_json(
                f"ORTWEB_ARGS = {json.dumps(json.dumps(args))}\n" + inpage.source("run_model"),
                filename="<ortweb run>",
            )
        except PythonFailure as exc:
            result.error = exc.traceback.strip().splitlines()[-1]
            return result
        (folder / "outputs.npz").write_bytes(page.read_file(f"{work}/outputs.npz"))
        stored = load_npz(folder / "outputs.npz")
    result.provider = report["provider"]
    result.skipped = report["skipped"]
    result.create_ms = report["create_ms"]
    result.run_ms = report["run_ms"]
    result.verify = report["verify"]
    for i, meta in enumerate(report["outputs"]):
        result.outputs[meta["name"]] = stored[f"out_{i}"]
    return result


def _print_run(run: ModelRun) -> None:
    print(f"{run.model}: provider {run.provider or '-'}", end="")
    if run.skipped:
        print(" (skipped: " + "; ".join(f"{p}: {r}" for p, r in run.skipped.items()) + ")", end="")
    print(f"; create {run.create_ms:.1f} ms, first run {run.run_ms:.1f} ms")
    if run.verify:
        print(f"  verify: {run.verify}")
    if run.error:
        print(f"  error: {run.error}")
        return
    by_name = {c.name: c for c in run.comparisons}
    for name, array in run.outputs.items():
        line = f"  {name:<24} {array.dtype!s:<8} {list(array.shape)!s:<20}"
        cmp = by_name.get(name)
        if cmp is not None:
            stats = ""
            if cmp.max_abs is not None:
                stats = f"max|diff| {cmp.max_abs:.3g}"
            if cmp.tolerance_used is not None:
                # Not max_rel: a relative error against native values near 0 is
                # meaningless (1e+300); this is the share of rtol/atol the worst
                # element uses, as numpy.allclose judges it.
                stats += f"  tol used {cmp.tolerance_used:.2g}"
            line += f" {stats:<34} {'ok' if cmp.ok else 'MISMATCH: ' + cmp.problem}"
        print(line)


def _execute(
    runtime: Runtime, page: PyodidePage, model_path: Path, args: argparse.Namespace,
    providers: list[str],
) -> ModelRun:
    model = model_path.read_bytes()
    if args.inputs is not None:
        feeds = load_npz(args.inputs)
    else:
        try:
            feeds = random_inputs(model_inputs(model), seed=args.seed, dims=dict(args.dim))
        except Exception as exc:
            raise UsageError(f"cannot make inputs for {model_path}: {exc}") from exc
    try:
        data = model_data_files(model_path, model)
    except (ValueError, FileNotFoundError) as exc:
        raise UsageError(str(exc)) from None
    size = len(model) + sum(p.stat().st_size for p in data.values())
    show = args.progress if args.progress is not None else sys.stderr.isatty()
    run = run_in_page(runtime, page, model, feeds, providers, name=model_path.name, data=data,
                      progress=show and size >= PROGRESS_MIN_BYTES, dims=dict(args.dim),
                      trust=args.trust, verify=args.verify, tolerance=(args.rtol, args.atol))
    if not run.error and args.compare_native:
        # By path: native onnxruntime finds the external data files beside it.
        native = run_native(str(model_path) if data else model, feeds)
        run.comparisons = compare_all(
            list(run.outputs), list(run.outputs.values()), native, args.rtol, args.atol
        )
    return run


def cmd_run(args: argparse.Namespace) -> int:
    if not args.model.is_file():
        raise UsageError(f"model file {args.model} not found")
    if args.inputs is not None and not args.inputs.is_file():
        raise UsageError(f"inputs file {args.inputs} not found")
    from ..host.browser import where_line
    from ._endpoints import endpoints, say_dropped

    bar = ProgressBar()
    with open_runtime(args.browser, endpoints=endpoints(args), log=say_dropped) as runtime:
        for attempt in (1, 2):
            if attempt == 2:
                # As ortweb exec does: the retry meets none of what crashed, a new
                # browser and Python booted afresh instead of from the snapshot.
                runtime.restart()
            try:
                with runtime.new_page(webgpu_build=args.webgpu_build, on_output=bar.on_output,
                                      snapshot=attempt == 1) as page:
                    run = _execute(runtime, page, args.model, args, args.providers)
                    blocked = page.blocked_requests
                break
            except PageFailure as exc:
                # A run only reads the model and its inputs, so running it again on a
                # new page changes nothing but the time; a model that crashes the
                # page each time still fails, on the second crash.
                print(f"ortweb run: {exc}"
                      + ("; running once more on a new page, in a new browser"
                         if attempt == 1 else ""), file=sys.stderr)
                if attempt == 2:
                    return 1
        where = runtime.where()
    if args.outputs is not None and not run.error:
        save_npz(args.outputs, run.outputs)
    if args.json:
        print(json.dumps({**run.as_dict(), "blocked_requests": blocked, "browser": where},
                         indent=2))
    else:
        _print_run(run)
        print(f"browser: {where_line(where)}")
    if blocked:
        print(f"error: the page tried to reach {blocked}", file=sys.stderr)
        return 1
    return 0 if run.ok else 1
