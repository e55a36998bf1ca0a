"""The demo site: its inputs written, built with ``ortweb site``, served in a child process."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Final

from ..build.assets import Assets, find_assets
from .model import DigitsModel

__all__ = ["PAGE_SAMPLES", "ServedSite", "build_demo_site", "demo_inputs", "serve_site"]

#: Held-out digits shipped with the page for its "sample" button.
PAGE_SAMPLES: Final = 40


def demo_inputs(model: DigitsModel, folder: Path) -> dict[str, Path]:
    """Write the site's inputs into ``folder``: model, app script, its files."""
    from .. import inpage

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
                    providers: tuple[str, ...] = ("webgpu", "wasm"), worker: bool = True,
                    work: Path | None = None, assets: Assets | None = None) -> Any:
    """Build the digits site into ``out`` (replacing an earlier demo site there).

    Parameters
    ----------
    out : Path
        The site's folder.
    model : DigitsModel
    providers : tuple of str
        Default providers of the page (its switch offers these).
    worker : bool
        Python in a Web Worker (default), or on the page's main thread.
    work : Path, optional
        Where the site's inputs are written first (default: next to ``out``).
    assets : Assets, optional

    Returns
    -------
    ortweb.host.build.site.SiteReport
    """
    from ..build.site import build_site

    assets = assets or find_assets()
    inputs = demo_inputs(model, work or out.parent / f".{out.name}-inputs")
    return build_site(
        inputs["model"], inputs["script"], out,
        title="ortweb · handwritten digits",
        providers=providers,
        template="digits",
        files=[inputs["features"], inputs["samples"]],
        worker=worker,
        force=False,
        assets=assets,
        extra_context={"accuracy": model.accuracy, "n_train": model.n_train,
                       "n_test": len(model.y_test)},
    )


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
