"""What ``ortweb site`` is given, checked, and what it needs shipped.

The model must be ONNX and every Python file valid; the script's imports (and the
``--wheel`` files' requirements) decide which Pyodide packages ship, and the
execution providers decide which onnxruntime-web builds do.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Final

from ..errors import SiteError
from .assets import Assets, find_assets
from .offline_packages import PackageError, closure

__all__ = ["check_inputs", "model_data", "needed_packages", "ort_files"]

#: Shipped in every site: what ``import ortweb`` loads.
_BASE_PACKAGES: Final = ("numpy", "ortweb")


def check_inputs(model: Path, script: Path, files: Sequence[Path],
                 wheels: Sequence[Path]) -> list[Path]:
    """Check the inputs; returns the Python files (the script and any ``.py`` of ``files``).

    Raises
    ------
    SiteError
        For a missing input, two inputs of one file name, a model that is not
        ONNX, or a Python file that does not compile.
    """
    for path, what in [(model, "model"), (script, "script"), *((f, "file") for f in files),
                       *((w, "wheel") for w in wheels)]:
        if not path.is_file():
            raise SiteError(f"{what} {path} is not a file")
    names = [model.name, script.name, *(f.name for f in files)]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise SiteError(f"two inputs share the file name {', '.join(duplicates)}: the script's "
                        "working directory holds them side by side")
    _check_model(model)
    python_files = [script, *(f for f in files if f.suffix == ".py")]
    for path in python_files:
        _check_python(path)
    return python_files


def model_data(model: Path, others: Sequence[Path]) -> dict[str, Path]:
    """The model's external data files (location → the file beside it), shipped
    beside it in ``app/``.

    Raises
    ------
    SiteError
        For a file that is missing, a location that leaves the model's folder, or
        one that takes the name of another input.
    """
    from ..external_data import model_data_files

    try:
        data = model_data_files(model)
    except (ValueError, FileNotFoundError) as exc:
        raise SiteError(str(exc)) from None
    taken = {p.name for p in [model, *others]} & set(data)
    if taken:
        raise SiteError(f"the model's external data file {sorted(taken)[0]!r} has the name of "
                        "another input: the script's working directory holds them side by side")
    return data


def _check_python(path: Path) -> None:
    try:
        # Top-level await is allowed: the page runs the script like `ortweb exec`.
        compile(path.read_text(encoding="utf-8"), str(path), "exec",
                flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, dont_inherit=True)
    except SyntaxError as exc:
        raise SiteError(f"{path} is not valid Python: {exc}") from None
    except UnicodeDecodeError:
        raise SiteError(f"{path} is not UTF-8 text") from None


def _check_model(path: Path) -> None:
    import onnx

    try:
        onnx.load_model_from_string(path.read_bytes())
    except Exception as exc:
        raise SiteError(f"{path} is not an ONNX model: {exc}") from None


def ort_files(providers: Sequence[str], webgpu_build: str = "native",
              assets: Assets | None = None) -> list[str]:
    """The onnxruntime-web dist files sessions on ``providers`` load.

    Parameters
    ----------
    providers : sequence of str
        ``'wasm'`` and/or ``'webgpu'``.
    webgpu_build : str
        ``'native'`` (the C++ WebGPU EP) or ``'jsep'``.
    assets : Assets, optional
        Whose build table (``bridge_js/builds.json``) to read; default :func:`find_assets`.

    Returns
    -------
    list of str
        File names in ``dist/``: per build its module, Emscripten glue and wasm.
    """
    if webgpu_build not in ("native", "jsep"):
        raise SiteError(f"webgpu build must be 'native' or 'jsep', not {webgpu_build!r}")
    builds = []
    if "webgpu" in providers:
        builds.append(webgpu_build)
    if "wasm" in providers:
        # wasm sessions never load a WebGPU build: the plain one is smaller and faster.
        builds.append("wasm")
    return (assets or find_assets()).ort_files(builds)


def _script_imports(paths: Iterable[Path]) -> set[str]:
    """Top-level module names the Python files import (absolute imports only)."""
    names: set[str] = set()
    for path in paths:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names.add(node.module.split(".")[0])
    return names


def _imported_packages(lock: dict[str, Any], python_files: Sequence[Path],
                       local: Iterable[str] = ()) -> dict[str, str]:
    """Lock packages the script and its files import (their own modules and ``local``
    aside), as import name → package."""
    by_import = {imp: name for name, pkg in lock["packages"].items() for imp in pkg["imports"]}
    own = {p.stem for p in python_files} | set(local)
    return {m: by_import[m] for m in sorted(_script_imports(python_files) - own)
            if m in by_import}


def needed_packages(lock: dict[str, Any], python_files: Sequence[Path],
                    unavailable: dict[str, Any], extra: Iterable[str] = (),
                    local: Iterable[str] = ()) -> list[str]:
    """numpy, ortweb, every lock package the Python files import, ``extra``, and their
    dependencies.

    Raises
    ------
    SiteError
        Naming the import, when it comes from a package not available offline.
    """
    imported = _imported_packages(lock, python_files, local)
    for module, name in imported.items():
        if name in unavailable:
            raise SiteError(
                f"the script imports {module!r}, from the Pyodide package {name!r}, which is "
                "not available offline (set-up could not obtain a verified copy of its "
                "wheel; the docs' *Pyodide packages offline* lists them): build the site with "
                "--assets cdn to load it from Pyodide's CDN"
            )
    try:
        return closure(lock, {*_BASE_PACKAGES, *imported.values(), *extra}, unavailable)
    except PackageError as exc:
        raise SiteError(str(exc)) from None
