"""Build a JupyterLite site where ``import ortweb`` just works, offline (``ortweb lite``).

The site is made by JupyterLite's own builder (``jupyter lite build`` from
jupyterlite-core, with jupyterlite-pyodide-kernel: the ``host`` extra pins the pair
whose kernel runs Pyodide 0.27.x) out of a staging folder that this module fills
with what :mod:`.lite_staging` stages:

- ``static/pyodide/``: ortweb's verified Pyodide 0.27.7. The builder copies a Pyodide
  found there into the site and points the kernel at it, so the CDN is never used.
  Only the wheels that the kernel and the notebooks load go in, and the lock lists
  just those plus ortweb, so ``import ortweb`` (and numpy, matplotlib) load from the
  site with no install step;
- the wheels the kernel installs at every boot that Pyodide's lock lacks (piplite,
  the kernel, its ipykernel and ``comm``) go into that lock too, and the kernel's
  ``loadPyodideOptions.packages`` names everything its boot loads: Pyodide loads it
  all at once while it starts, and the kernel installs nothing. With
  ``disablePyPIFallback`` nothing is looked up on PyPI;
- the user's ``--wheel`` files: in the Pyodide lock (so that an import loads them
  with no install step, as ``import ortweb`` does), in ``pypi/``, which JupyterLite's
  piplite indexes (``%pip install NAME`` finds them by name), and in the file
  browser (``micropip.install("emfs:NAME.whl")``);
- the notebooks, models and other files, given to the builder as ``--contents`` (the
  file browser).

Then ortweb's bridge and the ORT-web files of the builds it loads are copied to
``static/ortweb/``. The kernel runs in a Web Worker that no ortweb page code
touches, so ``ortweb._bridge`` imports the bridge itself from ``$ORTWEB_BRIDGE_URL``,
which the site sets through Pyodide's ``env`` option, relative to the worker's URL.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import LiteError
from .assets import Assets, find_assets
from .lite_staging import (
    EXAMPLE_MODELS,
    EXAMPLE_PACKAGES,
    EXAMPLE_WHEELS,
    KERNEL_BOOT_PACKAGES,
    KERNEL_PACKAGES,
    RUNTIME_PACKAGES,
    example_notebooks,
    kernel_wheels,
    pinned_wheel,
    pyodide_closure,
    stage_pyodide,
    stage_pypi,
    write_example_models,
)

__all__ = [
    "EXAMPLE_MODELS",
    "EXAMPLE_PACKAGES",
    "EXAMPLE_WHEELS",
    "KERNEL_PACKAGES",
    "KERNEL_WORKER_DIR",
    "LiteError",
    "LiteSite",
    "build_lite",
    "example_notebooks",
    "pyodide_closure",
    "write_example_models",
]

#: Where the kernel's worker script lives in the built site; relative URLs in the
#: kernel (``$ORTWEB_BRIDGE_URL``) resolve against it.
KERNEL_WORKER_DIR = "extensions/@jupyterlite/pyodide-kernel-extension/static"
#: Where ortweb's own files go in the site.
ORTWEB_DIR = "static/ortweb"

_KERNEL_PLUGIN = "@jupyterlite/pyodide-kernel-extension:kernel"
#: JupyterLab settings of the site. JupyterLab 4 detaches the cells scrolled out of
#: view ("full" windowing); with "none" every cell and output stays in the page, so
#: the browser's search finds them, and so do the tests reading outputs from the DOM.
_SETTINGS = {"@jupyterlab/notebook-extension:tracker": {"windowingMode": "none"}}
_MARKER = ".ortweb-lite"


@dataclass
class LiteSite:
    """A built site.

    Attributes
    ----------
    out : Path
        The site's folder (serve it over HTTP, e.g. ``ortweb serve OUT``).
    packages : list of str
        The Pyodide packages it ships.
    notebooks : list of str
        Paths of the notebooks in its file browser.
    sizes : dict of str to int
        Bytes per top-level entry of ``out``.
    """

    out: Path
    packages: list[str]
    notebooks: list[str]
    sizes: dict[str, int] = field(default_factory=dict)

    @property
    def size(self) -> int:
        """Total bytes of the site."""
        return sum(self.sizes.values())


def _lite_config(bridge_url: str) -> dict[str, Any]:
    return {
        "jupyter-lite-schema-version": 0,
        "jupyter-config-data": {
            "appName": "ortweb",
            "litePluginSettings": {
                _KERNEL_PLUGIN: {
                    # piplite (`%pip install`) looks only in the site's own indexes.
                    "disablePyPIFallback": True,
                    # Pyodide copies `env` into os.environ, where ortweb._bridge looks;
                    # it loads `packages` from the lock as it starts, and the kernel
                    # installs none of them itself.
                    "loadPyodideOptions": {"env": {"ORTWEB_BRIDGE_URL": bridge_url},
                                           "packages": list(KERNEL_BOOT_PACKAGES)},
                },
            },
        },
    }


def _build_config(kernel_labextensions: Path) -> dict[str, Any]:
    return {
        "LiteBuildConfig": {
            # Lab alone: it has the file browser and the notebook; other apps only add size.
            "apps": ["lab"],
            "no_sourcemaps": True,
            "no_unused_shared_packages": True,
            # Only the Pyodide kernel's extension, not every labextension that happens to
            # be installed in this environment (jupyter-server brings jupyterlab_pygments).
            "ignore_sys_prefix": ["federated_extensions"],
        },
        "FederatedExtensionAddon": {"extra_labextensions_path": [str(kernel_labextensions)]},
    }


def _kernel_labextensions() -> Path:
    """The folder holding the installed ``pyodide-kernel-extension``."""
    for prefix in (sys.prefix, sys.base_prefix):
        path = Path(prefix) / "share" / "jupyter" / "labextensions" / "@jupyterlite"
        if (path / "pyodide-kernel-extension" / "package.json").exists():
            return path
    raise LiteError(
        "jupyterlite-pyodide-kernel is not installed in this Python: install ortweb's "
        "host extra (`python3 build.py setup` in a checkout)"
    )


def _prepare_out(out: Path) -> None:
    """Make ``out`` empty, refusing to delete a folder that is not a previous site."""
    if out.exists():
        if not out.is_dir():
            raise LiteError(f"{out} exists and is not a folder")
        if any(out.iterdir()) and not (out / _MARKER).exists():
            raise LiteError(f"{out} is not empty and was not made by `ortweb lite`: "
                            "choose an empty or new folder")
        shutil.rmtree(out)


def _sizes(out: Path) -> dict[str, int]:
    sizes: dict[str, int] = {}
    for path in out.rglob("*"):
        if path.is_file():
            top = path.relative_to(out).parts[0]
            sizes[top] = sizes.get(top, 0) + path.stat().st_size
    return dict(sorted(sizes.items(), key=lambda kv: -kv[1]))


def _data_files(model: Path) -> dict[str, Path]:
    from ..external_data import model_data_files

    if model.is_dir():
        return {}  # a folder's files are copied as they are, data files included
    try:
        return model_data_files(model)
    except (ValueError, FileNotFoundError) as exc:
        raise LiteError(f"--model {model}: {exc}") from None


def build_lite(
    out: Path,
    *,
    notebooks: Sequence[Path] = (),
    models: Sequence[Path] = (),
    files: Sequence[Path] = (),
    examples: bool = True,
    packages: Sequence[str] = (),
    wheels: Sequence[Path] = (),
    webgpu_build: str = "native",
    assets: Assets | None = None,
    log: Callable[[str], None] | None = None,
) -> LiteSite:
    """Build the JupyterLite site into ``out``.

    Parameters
    ----------
    out : Path
        The site's folder: new, empty, or a site built before (it is replaced).
    notebooks : sequence of Path
        Notebooks for the file browser: ``.ipynb`` files, or folders whose files all
        go in at the top (a file of the same name as an example's replaces it).
    models : sequence of Path
        Model files for the file browser, next to the notebooks, each with the
        external data files it names (beside it, under their names).
    files : sequence of Path
        Any other files for the file browser, next to the notebooks (a wheel here is
        only a file: a notebook installs it with ``micropip.install("emfs:NAME.whl")``).
    examples : bool
        Include ortweb's example notebooks, the models they open and the wheel 04
        installs.
    packages : sequence of str
        More Pyodide packages for the notebooks (they must be among the offline ones:
        see ``build/pyodide/offline-packages.json``).
    wheels : sequence of Path
        Wheels preinstalled in the kernel (an import loads them, with what they
        require, from the site), also offered to ``%pip install`` and in the file
        browser. Their requirements must be met by each other and the offline
        Pyodide packages.
    webgpu_build : str
        The ORT-web WebGPU build to ship (``"native"``, the bridge's default, or
        ``"jsep"``); the plain wasm build always ships.
    assets : Assets, optional
        ortweb's browser assets (default: :func:`ortweb.host.build.assets.find_assets`).
    log : callable, optional
        Called with progress messages.

    Returns
    -------
    LiteSite

    Raises
    ------
    LiteError
        When an input is missing or JupyterLite's build fails.
    """
    say = log or (lambda _msg: None)
    assets = assets or find_assets()
    out = Path(out).resolve()
    for path in [*notebooks, *models, *files, *wheels]:
        if not Path(path).exists():
            raise LiteError(f"{path} does not exist")
    if webgpu_build not in ("native", "jsep"):
        raise LiteError(f"webgpu_build must be 'native' or 'jsep', got {webgpu_build!r}")
    model_data = [_data_files(Path(m)) for m in models]  # a missing file stops us here
    _prepare_out(out)
    wanted = [*RUNTIME_PACKAGES, *KERNEL_PACKAGES, *(EXAMPLE_PACKAGES if examples else ()),
              *packages]
    bridge_url = os.path.relpath(f"{ORTWEB_DIR}/bridge/index.js", KERNEL_WORKER_DIR)
    with tempfile.TemporaryDirectory(prefix="ortweb-lite-") as tmp:
        lite_dir, contents = Path(tmp) / "lite", Path(tmp) / "contents"
        say("staging Pyodide, the kernel's wheels and the contents")
        extension = _kernel_labextensions() / "pyodide-kernel-extension" / "static" / "pypi"
        shipped = stage_pyodide(assets, lite_dir / "static" / "pyodide", wanted, wheels,
                                kernel_wheels(assets, extension))
        stage_pypi(lite_dir / "pypi", wheels)
        (lite_dir / "jupyter-lite.json").write_text(json.dumps(_lite_config(bridge_url), indent=2))
        (lite_dir / "overrides.json").write_text(json.dumps(_SETTINGS, indent=2))
        (lite_dir / "jupyter_lite_config.json").write_text(
            json.dumps(_build_config(_kernel_labextensions()), indent=2)
        )
        contents.mkdir()
        if examples:
            for nb in example_notebooks(assets):
                shutil.copyfile(nb, contents / nb.name)
            write_example_models(contents)
            manifest = json.loads((assets.root / "assets.lock.json").read_text())
            for name in EXAMPLE_WHEELS:
                src = pinned_wheel(assets, manifest, name)
                shutil.copyfile(src, contents / src.name)
        for path in [*map(Path, notebooks), *map(Path, models), *map(Path, files),
                     *map(Path, wheels)]:
            if path.is_dir():
                # Its files go in at the top, beside the models, so that a notebook opens
                # a model by its bare name as it did where it was written.
                shutil.copytree(path, contents, dirs_exist_ok=True)
            else:
                shutil.copyfile(path, contents / path.name)
        for data_files in model_data:
            # A model's external data files go beside it, under the names its tensors
            # give them, so that it opens by its bare name as it did where it was saved.
            for location, data in data_files.items():
                (contents / location).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(data, contents / location)
        say("running jupyter lite build")
        cmd = [sys.executable, "-m", "jupyterlite_core", "build", "--lite-dir", str(lite_dir),
               "--output-dir", str(out), "--contents", str(contents)]
        done = subprocess.run(cmd, cwd=lite_dir, capture_output=True, text=True)
        if done.returncode != 0:
            raise LiteError(f"jupyter lite build failed ({done.returncode}):\n"
                            f"{done.stdout[-4000:]}\n{done.stderr[-4000:]}")
        listed = sorted(p.relative_to(contents).as_posix() for p in contents.rglob("*.ipynb"))
    if not (out / KERNEL_WORKER_DIR).is_dir():
        raise LiteError(f"the built site has no {KERNEL_WORKER_DIR}: this jupyterlite-pyodide-"
                        "kernel lays out its files differently from the pinned one")
    say("adding ortweb's bridge and the ORT-web files")
    ort_dir, bridge_dir = out / ORTWEB_DIR / "ort", out / ORTWEB_DIR / "bridge"
    ort_dir.mkdir(parents=True)
    for name in assets.ort_files(["wasm", webgpu_build]):
        shutil.copyfile(assets.ort / name, ort_dir / name)
    # pyodide_boot.js and unpacking.js boot Pyodide in ortweb's own pages; the kernel
    # boots its own. Of the JSON files, runtime.js imports builds.json (tsconfig.json is
    # for tsc).
    shutil.copytree(assets.bridge, bridge_dir, ignore=shutil.ignore_patterns(
        "*.md", "tsconfig.json", "pyodide_boot.js", "unpacking.js"))
    (out / _MARKER).write_text("built by `ortweb lite`; replaced by the next build\n")
    return LiteSite(out=out, packages=shipped, notebooks=listed, sizes=_sizes(out))
