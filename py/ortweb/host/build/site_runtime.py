"""Pyodide and onnxruntime-web in an ``ortweb site``: shipped, or taken from the CDN.

Shipped files are copied only when they match their pins (``assets.lock.json`` for
the npm files, the official Pyodide lock for its wheels). With ``assets="cdn"`` the
same files come from jsDelivr; the local copies are still hashed, so the page checks
the CDN's bytes against the verified ones. Pyodide's lock is trimmed to the packages
the site ships.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Final

from ..errors import SiteError
from .assets import Assets
from .site_files import PageLoads, SiteWriter, digest_file
from .site_inputs import ort_files

__all__ = [
    "CDN_ORT",
    "CDN_PYODIDE",
    "CDN_PYODIDE_PACKAGES",
    "pinned_hashes",
    "ship_engines",
    "ship_ort",
    "ship_pyodide",
]

#: jsDelivr's mirror of the npm packages: byte for byte the files set-up verified.
CDN_PYODIDE: Final = "https://cdn.jsdelivr.net/npm/pyodide@{version}/"
#: Pyodide's own CDN folder, where the wheels of the official lock live.
CDN_PYODIDE_PACKAGES: Final = "https://cdn.jsdelivr.net/pyodide/v{version}/full/"
CDN_ORT: Final = "https://cdn.jsdelivr.net/npm/onnxruntime-web@{version}/dist/"

_PYODIDE_CORE: Final = ("pyodide.mjs", "pyodide.asm.js", "pyodide.asm.wasm", "python_stdlib.zip")
_PYODIDE_MODULES: Final = ("pyodide.mjs", "pyodide.asm.js")


def pinned_hashes(assets: Assets) -> dict[str, dict[str, str]]:
    """npm package → file → sha256 from ``assets.lock.json`` (empty when absent): of a
    package pinned at several versions (onnxruntime-web), the version set-up unpacked."""
    lock = assets.root / "assets.lock.json"
    if not lock.is_file():
        return {}
    hashes: dict[str, dict[str, str]] = {}
    for pkg in json.loads(lock.read_text())["npm"]:
        unpacked = assets.root / "build" / "npm" / pkg["name"] / "package.json"
        if pkg["name"] in hashes and not (
            unpacked.is_file() and json.loads(unpacked.read_text())["version"] == pkg["version"]
        ):
            continue
        hashes[pkg["name"]] = pkg["files"]
    # The other engines' files as set-up assembles them (tract's worker is taken out
    # of its bundle and fixed), under the pseudo-package "engines".
    hashes["engines"] = dict(json.loads(lock.read_text()).get("engines", {}))
    return hashes


def ship_engines(b: SiteWriter, assets: Assets, providers: Sequence[str],
                 pins: dict[str, str]) -> list[str]:
    """The files of the engines other than onnxruntime-web that ``providers`` name, in
    ``ortweb/engines/<engine>/`` (where the bridge looks for them: its
    ``enginesBaseURL`` beside ``ortweb/bridge/``); returns the engines shipped.

    They are not in the page's start-up downloads: a session fetches its engine's
    files when it tries that engine, and a model the engine is refused for before
    loading fetches none. Each is copied only if it matches its pin.
    """
    from ..._engines import engine_of

    names = sorted({engine_of(p).name for p in providers} - {"ort"})
    for name in names:
        files = sorted(rel for rel in pins if rel.startswith(name + "/"))
        if not files:
            raise SiteError(f"assets.lock.json pins no file of the {name} engine: "
                            "run `python3 build.py setup`")
        for rel in files:
            b.add_file(f"ortweb/engines/{rel}", assets.engines / rel, pins[rel])
    return names


def ship_pyodide(b: SiteWriter, loads: PageLoads, assets: Assets, lock: dict[str, Any],
                 official: dict[str, Any], packages: Sequence[str], *, cdn: bool,
                 pins: dict[str, str]) -> str:
    """Pyodide's core files, a lock trimmed to ``packages``, and their wheels.

    Parameters
    ----------
    lock, official : dict
        The lock pages boot with (official entries plus ortweb's wheels) and the
        official one, which the wheels of its packages are checked against.
    pins : dict
        Core file name → sha256 (``assets.lock.json``).

    Returns
    -------
    str
        The page's Pyodide ``indexURL``.
    """
    pyodide_version = str(lock["info"]["version"])
    pyodide_base = CDN_PYODIDE.format(version=pyodide_version) if cdn else "pyodide/"
    for name in _PYODIDE_CORE:
        src = assets.pyodide / name
        if cdn:
            digest = digest_file(src)
            if name in pins and digest.sha256 != pins[name]:
                raise SiteError(f"{src} does not match assets.lock.json: run build.py setup")
        else:
            digest = b.add_file(f"pyodide/{name}", src, pins.get(name))
        url = pyodide_base + name
        if name in _PYODIDE_MODULES:
            loads.module(url, digest, name)
        else:
            loads.fetch(url, digest, name)
    missing = [name for name in packages if name not in official["packages"]
               and not (assets.pyodide / lock["packages"][name]["file_name"]).is_file()]
    if missing:
        raise SiteError(f"{', '.join(missing)} is missing from {assets.pyodide}: run "
                        "`python3 build.py setup`")
    site_lock: dict[str, Any] = {"info": lock["info"], "packages": {}}
    for name in packages:
        entry = dict(lock["packages"][name])
        src = assets.pyodide / entry["file_name"]
        # Wheels of the official lock are checked against it; the ortweb wheel
        # is the one the local lock describes.
        expected = (official["packages"].get(name) or entry)["sha256"]
        if cdn and name in official["packages"] and not src.is_file():
            # Not obtainable here: the page loads it from the CDN, and Pyodide checks
            # it against the lock's sha256 (there is no local copy to take a size from).
            entry["file_name"] = CDN_PYODIDE_PACKAGES.format(version=pyodide_version) + src.name
            site_lock["packages"][name] = entry
            continue
        if cdn and name in official["packages"]:
            digest = digest_file(src)
            if digest.sha256 != expected:
                raise SiteError(f"{src} does not match the official Pyodide lock")
            entry["file_name"] = CDN_PYODIDE_PACKAGES.format(version=pyodide_version) + src.name
            url = entry["file_name"]
        else:
            digest = b.add_file(f"pyodide/{src.name}", src, expected)
            url = f"pyodide/{src.name}"
        loads.fetch(url, digest, src.name)
        site_lock["packages"][name] = entry
    lock_digest = b.add_bytes("pyodide/pyodide-lock.json",
                              json.dumps(site_lock, indent=1, sort_keys=True).encode())
    loads.fetch("pyodide/pyodide-lock.json", lock_digest, "pyodide-lock.json")
    return pyodide_base


def ship_ort(b: SiteWriter, loads: PageLoads, assets: Assets, providers: Sequence[str],
             webgpu_build: str, *, version: str, cdn: bool, pins: dict[str, str]) -> str:
    """Only the onnxruntime-web builds ``providers`` load; returns the page's ORT base URL.

    ``pins`` maps ``dist/NAME`` to its sha256 (``assets.lock.json``).
    """
    ort_base = CDN_ORT.format(version=version) if cdn else "ort/"
    for name in ort_files(providers, webgpu_build, assets):
        src = assets.ort / name
        pin = pins.get(f"dist/{name}")
        if cdn:
            digest = digest_file(src)
            if pin is not None and digest.sha256 != pin:
                raise SiteError(f"{src} does not match assets.lock.json: run build.py setup")
        else:
            digest = b.add_file(f"ort/{name}", src, pin)
        if name.endswith(".wasm"):
            loads.fetch(ort_base + name, digest, name)
        else:
            loads.module(ort_base + name, digest, name)
    return ort_base
