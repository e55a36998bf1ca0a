"""Python bytecode for a site's packages, compiled at build time, so no visit compiles
numpy's or ortweb's source.

Pyodide's wheels hold Python source (numpy's 174 modules, 3.6 MB of it), which
Python compiles on every import, on every visit: the ``__pycache__`` it writes lives in
the page's memory and is gone on the next visit. ``ortweb site`` therefore boots
Pyodide in headless Chromium (:mod:`.headless`), loads the packages the site loads,
compiles every ``.py`` file they put in site-packages there, with the interpreter the
visitors run, into *unchecked-hash* ``.pyc`` files (PEP 552: imported without
comparing the source's timestamp, which unpacking a wheel in the page sets anew), and
ships them zipped as ``ortweb/pyodide-bytecode.zip``. The page unpacks it into the
filesystem after Pyodide's packages load (``web/site/python.js``), before the script
runs. The wheels stay as they are, byte for byte (checked against the official lock),
with their sources: tracebacks still show the lines.

The bytecode belongs to one set of wheels and one Pyodide: kept under
``build/snapshots/`` by :func:`bytecode_id`. A site built with ``--assets cdn`` ships
none (its packages come from the CDN), nor do the ``--wheel`` files micropip installs.
Without a Chromium that starts, a site ships none and its report says why.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Final

from .headless import Made, first_line, made_in_page
from .offline_packages import PackageError
from .pyodide_snapshot import closure_wheels, runtime_id

__all__ = ["Bytecode", "bytecode_id", "make_bytecode"]

#: Part of the key: bytecode made another way has another name.
_VERSION: Final = "1"

#: In the maker's page: Pyodide with ``packages`` loaded compiles site-packages and
#: zips the ``.pyc`` files, named by their path from ``/``.
_MAKE: Final = """async (packages) => {
  const { loadPyodide } = await import('./pyodide.mjs');
  const pyodide = await loadPyodide({ indexURL: new URL('./', location.href).href,
    stdout: () => {}, stderr: () => {} });
  const problems = [];
  await pyodide.loadPackage(packages, { messageCallback: () => {},
    errorCallback: (msg) => problems.push(msg) });
  const missing = packages.filter((p) => !(p in pyodide.loadedPackages));
  if (missing.length || problems.length) {
    return `Pyodide could not load ${missing.join(', ')}: ${problems.join(' | ')}`;
  }
  globalThis.ortwebMade = pyodide.runPython(`
import io, os, py_compile, sysconfig, zipfile
from importlib.util import cache_from_source

root = sysconfig.get_paths()["purelib"]
out = io.BytesIO()
with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            if not name.endswith(".py"):
                continue
            source = os.path.join(folder, name)
            target = cache_from_source(source)
            try:
                py_compile.compile(source, cfile=target, doraise=True,
                                   invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)
            except py_compile.PyCompileError:
                continue  # not Python 3.12 (a template, a test of bad syntax): left as it is
            info = zipfile.ZipInfo(target.lstrip("/"), (1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            with open(target, "rb") as f:
                archive.writestr(info, f.read())
out.getvalue()
`).toJs();
  return globalThis.ortwebMade.length;
}"""


class Bytecode(Made):
    """Made bytecode (``path``, a zip) or why there is none (``reason``)."""


def bytecode_id(pyodide_dir: Path, packages: list[str]) -> str:
    """The key of ``packages``' bytecode: Pyodide's core files (:func:`runtime_id`), the
    packages, and the sha256 of every wheel ``pyodide_dir``'s lock gives for them and
    for what they depend on (their modules are compiled too, and used unchecked)."""
    wheels = closure_wheels(pyodide_dir, packages)
    text = " ".join([_VERSION, runtime_id(pyodide_dir), ",".join(sorted(packages)), *wheels])
    return hashlib.sha256(text.encode()).hexdigest()


def make_bytecode(pyodide_dir: Path, packages: list[str], cache_dir: Path,
                  executable: str | None = None) -> Bytecode:
    """The zipped bytecode of ``packages``, made once per :func:`bytecode_id` and kept in
    ``cache_dir``.

    Parameters
    ----------
    pyodide_dir : Path
        A site's ``pyodide/`` folder: Pyodide's core files, a lock and the wheels of
        ``packages`` (and of what they depend on).
    packages : list of str
        The packages the site loads at boot.
    cache_dir : Path
        Where bytecode is kept (``bytecode-<id>.zip``).
    executable : str, optional
        The Chromium to make it in.

    Returns
    -------
    Bytecode
        With ``path``, or with ``reason`` when none could be made (no Chromium, or
        Pyodide failed in it): a site is still built, without it.
    """
    try:
        target = cache_dir / f"bytecode-{bytecode_id(pyodide_dir, packages)}.zip"
    except (OSError, ValueError, KeyError, PackageError) as exc:
        return Bytecode(None, f"the site's Pyodide folder is not whole: {first_line(exc)}")
    made = made_in_page(target, pyodide_dir, _MAKE, list(packages),
                        "compile the packages' bytecode", executable)
    return Bytecode(made.path, made.reason)
