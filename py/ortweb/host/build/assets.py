"""Where the host finds what it serves to the browser.

In a checkout, everything lives under the repository: ``build/pyodide`` (Pyodide
core, verified wheels, the ortweb wheel and lock), ``build/npm/onnxruntime-web``,
``bridge_js`` and ``web``. ``ORTWEB_HOME`` points elsewhere when needed.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from . import wheel as _wheel
from .pyodide_snapshot import Snapshot
from .runner_snapshot import SNAPSHOT_PREFIX
from .runner_snapshot import runner_snapshot as _runner_snapshot

__all__ = ["Assets", "find_assets"]


@dataclass(frozen=True)
class Assets:
    """Paths of one ortweb installation's browser assets."""

    root: Path

    @property
    def pyodide(self) -> Path:
        return self.root / "build" / "pyodide"

    @property
    def ort_package(self) -> Path:
        return self.root / "build" / "npm" / "onnxruntime-web"

    @property
    def ort(self) -> Path:
        return self.ort_package / "dist"

    @property
    def engines(self) -> Path:
        """The other engines' files (``tract/``, ``wonnx/``), as set-up assembles them."""
        return self.root / "build" / "engines"

    @property
    def bridge(self) -> Path:
        return self.root / "bridge_js"

    @property
    def web(self) -> Path:
        return self.root / "web"

    @property
    def package_dir(self) -> Path:
        return self.root / "py" / "ortweb"

    @property
    def compat_dir(self) -> Path:
        """The drop-in ``onnxruntime`` package's source (see :mod:`ortweb.host.build.wheel`)."""
        return self.root / "py" / "onnxruntime_compat" / "onnxruntime"

    @property
    def ort_builds(self) -> dict[str, dict[str, object]]:
        """onnxruntime-web's builds by name (``bridge_js/builds.json``, the table
        ``runtime.js`` imports): ``module``, ``wasm`` and ``providers`` of each."""
        builds: dict[str, dict[str, object]] = json.loads((self.bridge / "builds.json").read_text())
        return builds

    def ort_files(self, builds: Iterable[str]) -> list[str]:
        """The onnxruntime-web dist files that ``builds`` (keys of :attr:`ort_builds`) load,
        in that order: each one's module, the wasm's Emscripten glue (the wasm's name with
        ``.mjs``) and the wasm.

        Raises
        ------
        ValueError
            For a build the table does not have.
        """
        table, files = self.ort_builds, []
        for build in builds:
            if build not in table:
                raise ValueError(f"unknown onnxruntime-web build {build!r} (known: "
                                 f"{', '.join(sorted(table))})")
            wasm = str(table[build]["wasm"])
            files += [str(table[build]["module"]), wasm.removesuffix(".wasm") + ".mjs", wasm]
        return list(dict.fromkeys(files))

    @functools.cached_property
    def runner_snapshot(self) -> Snapshot:
        """The interpreter snapshot runner pages boot from, made on first use (see
        :mod:`.runner_snapshot`); its ``reason`` says why there is none."""
        return _runner_snapshot(self)

    def mounts(self) -> dict[str, Path]:
        """URL prefix → folder, for :class:`ortweb.host.serve.StaticServer`."""
        snapshot = self.runner_snapshot.path
        return {
            "/pyodide/": self.pyodide,
            "/ort/": self.ort,
            "/engines/": self.engines,
            "/bridge/": self.bridge,
            **({SNAPSHOT_PREFIX: snapshot} if snapshot is not None else {}),
            "/": self.web,
        }

    def check(self) -> None:
        """Fail with the fix when set-up has not run."""
        needed = [self.pyodide / "pyodide.mjs", self.pyodide / "pyodide-lock.official.json",
                  self.ort / "ort.wasm.min.mjs", self.bridge / "index.js"]
        missing = [str(p) for p in needed if not p.exists()]
        if missing:
            raise FileNotFoundError(
                "ortweb's browser assets are missing (" + ", ".join(missing) + "): run "
                "`python3 build.py setup` in the ortweb checkout, or set ORTWEB_HOME to one"
            )

    def refresh_wheel(self) -> Path:
        """Rebuild the browser wheels (ortweb, the drop-in onnxruntime) and the lock
        when their sources changed."""
        return _wheel.refresh(self.package_dir,
                              self.compat_dir if self.compat_dir.is_dir() else None, self.pyodide,
                              _wheel.ort_web_version(self.root))


def find_assets() -> Assets:
    """The assets of ``ORTWEB_HOME`` or of the checkout this module lives in."""
    env = os.environ.get("ORTWEB_HOME")
    return _checked(Path(env) if env else Path(__file__).resolve().parents[4])


@functools.cache
def _checked(root: Path) -> Assets:
    # Once per process: the wheel is rebuilt from the sources a process starts
    # with, not again by every command, site build or page it opens.
    assets = Assets(root)
    assets.check()
    if assets.package_dir.exists():
        assets.refresh_wheel()
    return assets
