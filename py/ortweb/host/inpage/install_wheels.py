# mypy: disable-error-code="top-level-await"
# Runs inside Pyodide: installs wheels already written into the page's file system,
# with micropip and no network. The host (or the site's boot.js) defines
# ORTWEB_INSTALL, a JSON string {"wheels": [paths, in install order], "requirements":
# [specs], "packages": [Pyodide packages they need], "no_deps": [paths]}, before this
# source; the host has checked that every requirement of "wheels" can be met by those
# wheels and the page's lock ("no_deps" wheels are installed as they are, unchecked).
# Evaluates to a JSON list of what was installed.
import importlib
import json
import re

import pyodide_js

_spec = json.loads(ORTWEB_INSTALL)  # type: ignore[name-defined]
_problems: list[str] = []
# The lock packages the wheels need are loaded here, quietly, so that micropip finds
# them installed: it would load them itself, announcing each on the script's stdout.
_wanted = ["micropip", *_spec.get("packages", [])]
await pyodide_js.loadPackage(
    _wanted, checkIntegrity=True, messageCallback=lambda _m: None,
    errorCallback=_problems.append,
)
# loadedPackages is keyed by the lock entries' own spelling ("Pillow" for "pillow").
_loaded = {re.sub(r"[-_.]+", "-", _name).lower() for _name in pyodide_js.loadedPackages.to_py()}
_missing = [_name for _name in _wanted if re.sub(r"[-_.]+", "-", _name).lower() not in _loaded]
if _problems or _missing:
    raise RuntimeError(f"Pyodide packages {_missing} could not be loaded from the page's lock: "
                       + "; ".join(_problems))

import micropip  # noqa: E402

# No package index at all: micropip then finds requirements among the installed
# distributions and in the page's lock (which holds only what is here), and a
# requirement met by neither fails at once instead of asking PyPI. Set for the
# whole page, so later micropip.install calls of the script stay offline too.
micropip.set_index_urls([])
# One wheel at a time, each after the wheels it requires: micropip resolves a
# wheel's requirements against what is installed when it looks.
for _path in _spec["wheels"]:
    await micropip.install("emfs:" + _path, deps=True, index_urls=[])
if _spec["requirements"]:
    await micropip.install(_spec["requirements"], deps=True, index_urls=[])
for _path in _spec.get("no_deps", []):
    await micropip.install("emfs:" + _path, deps=False, index_urls=[])
importlib.invalidate_caches()
json.dumps(sorted(micropip.list()))
