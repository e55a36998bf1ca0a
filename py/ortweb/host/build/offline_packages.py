"""Which Pyodide packages are available offline, and what a set of them depends on.

Standard library only: ``build.py`` loads this file by path before any virtual
environment exists (with ``..errors``, its one import of ortweb).

Set-up copies every package of the official Pyodide lock whose wheel it can obtain
byte-identically (see ``build.py``), and writes :data:`OFFLINE_LIST` next to the
lock: the packages it has (``available``) and the ones it has not
(``unavailable``, with their import names). Pages drop the unavailable ones from
the lock they boot with, so nothing ever asks the network for them, and an import
of one fails with a message that names the package and says it is not available
offline (see ``bridge_js/pyodide_boot.js``). Whether wheels and requirements can be
met by these packages is :mod:`.requirements`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import HostError

__all__ = [
    "OFFLINE_LIST",
    "OfflinePackages",
    "PackageError",
    "canonical_name",
    "closure",
    "read_offline",
]

#: The file set-up writes next to ``pyodide-lock.json``.
OFFLINE_LIST = "offline-packages.json"


class PackageError(HostError):
    """A package or requirement cannot be had offline; the message names it and says why."""


def canonical_name(name: str) -> str:
    """The PEP 503 form of a distribution name (``Prompt_Toolkit`` → ``prompt-toolkit``).

    The lock's keys are in this form, but its ``depends`` lists are not always
    (``prompt_toolkit``), so every lookup goes through it.
    """
    return re.sub(r"[-_.]+", "-", name).lower()


def closure(lock: Mapping[str, Any], names: Iterable[str],
            unavailable: Mapping[str, Any] | None = None) -> list[str]:
    """``names`` and everything they depend on in ``lock``, as the lock's keys, sorted.

    Parameters
    ----------
    lock : mapping
        A parsed ``pyodide-lock.json``.
    names : iterable of str
        Package names, in any spelling.
    unavailable : mapping, optional
        Packages that must not be taken (keys in canonical form): those set-up
        could not obtain.

    Raises
    ------
    PackageError
        Naming the package, and the package that required it, when it is not in
        the lock or is unavailable offline.
    """
    packages = lock["packages"]
    unavailable = unavailable or {}
    version = lock.get("info", {}).get("version", "?")
    seen: set[str] = set()
    todo: list[tuple[str, str | None]] = [(canonical_name(n), None) for n in names]
    while todo:
        name, parent = todo.pop()
        if name in seen:
            continue
        why = f" (required by {parent})" if parent else ""
        if name not in packages:
            raise PackageError(f"Pyodide package {name!r}{why} is not in Pyodide {version}'s lock")
        if name in unavailable:
            raise PackageError(
                f"Pyodide package {name!r}{why} is not available offline: set-up could not "
                "obtain a verified copy of its wheel (ortweb's offline packages are listed in "
                "the docs' *Pyodide packages offline*; a site built with --assets cdn loads "
                "the others online)"
            )
        seen.add(name)
        todo.extend((canonical_name(d), name) for d in packages[name]["depends"])
    return sorted(seen)


@dataclass(frozen=True)
class OfflinePackages:
    """What :data:`OFFLINE_LIST` says.

    Attributes
    ----------
    available : dict of str to str
        Package → wheel file name, for every official package set-up copied.
    unavailable : dict of str to list of str
        Package → its import names, for every official package it could not copy.
    source : str
        Where the wheels came from.
    """

    available: dict[str, str]
    unavailable: dict[str, list[str]]
    source: str = ""

    def to_json(self) -> str:
        return json.dumps({"source": self.source, "available": self.available,
                           "unavailable": self.unavailable}, indent=1, sort_keys=True) + "\n"


def read_offline(pyodide_dir: Path) -> OfflinePackages:
    """The offline list set-up wrote into ``pyodide_dir``.

    Raises
    ------
    PackageError
        When there is none (set-up has not run since it started writing it).
    """
    path = pyodide_dir / OFFLINE_LIST
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise PackageError(f"{path} is missing or unreadable ({exc}): run "
                           "`python3 build.py setup`") from None
    return OfflinePackages(dict(data["available"]), dict(data["unavailable"]),
                           str(data.get("source", "")))
