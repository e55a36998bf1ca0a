"""Whether wheels and requirements can be installed offline in Pyodide.

A wheel's ``Requires-Dist`` lines and the requirements a user gives must each be met
by a given wheel or by a Pyodide package available offline (:mod:`.offline_packages`);
micropip then installs the same set in the page, with no network. Needs
``packaging``, which the host extra brings.
"""

from __future__ import annotations

import email.parser
import json
import re
import zipfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .offline_packages import PackageError, canonical_name, closure, read_offline

__all__ = [
    "PYODIDE_MARKERS",
    "Resolution",
    "WheelInfo",
    "install_order",
    "parse_requirements_file",
    "read_wheel",
    "resolve_for_pyodide",
    "resolve_offline",
]

#: PEP 508 environment of Pyodide 0.27.7 (CPython 3.12.7 on Emscripten 3.1.58), for
#: the markers of a wheel's ``Requires-Dist`` lines: the values micropip evaluates
#: them with in the page.
PYODIDE_MARKERS: dict[str, str] = {
    "implementation_name": "cpython",
    "implementation_version": "3.12.7",
    "os_name": "posix",
    "platform_machine": "wasm32",
    "platform_python_implementation": "CPython",
    "platform_release": "3.1.58",
    "platform_system": "Emscripten",
    "platform_version": "#1",
    "python_full_version": "3.12.7",
    "python_version": "3.12",
    "sys_platform": "emscripten",
    "extra": "",
}

_WHEEL_RE = re.compile(
    r"^(?P<name>[^-]+)-(?P<version>[^-]+)(-\d[^-]*)?-(?P<py>[^-]+)-(?P<abi>[^-]+)-(?P<plat>[^-]+)\.whl$"
)


@dataclass(frozen=True)
class WheelInfo:
    """What a wheel file says about itself.

    Attributes
    ----------
    path : Path
    name : str
        Canonical distribution name.
    version : str
    requires : tuple of str
        Its ``Requires-Dist`` lines.
    top_level : tuple of str
        The top-level modules and packages it installs.
    """

    path: Path
    name: str
    version: str
    requires: tuple[str, ...]
    top_level: tuple[str, ...]

    @property
    def label(self) -> str:
        return f"{self.name} {self.version} ({self.path.name})"


def read_wheel(path: Path) -> WheelInfo:
    """Read a wheel's name, version, requirements and top-level names.

    Raises
    ------
    PackageError
        When ``path`` is not a wheel Pyodide can install (a pure-Python wheel or
        one built for Pyodide's wasm32).
    """
    path = Path(path)
    found = _WHEEL_RE.match(path.name)
    if not path.is_file() or not found:
        raise PackageError(f"{path} is not a wheel file (expected "
                           "NAME-VERSION-PY-ABI-PLATFORM.whl)")
    platform = found["plat"]
    if platform != "any" and "wasm32" not in platform:
        raise PackageError(f"{path.name} is built for {platform!r}: Pyodide installs pure-Python "
                           "wheels (…-none-any.whl) and wheels built for Pyodide (wasm32)")
    try:
        with zipfile.ZipFile(path) as zf:
            names = zf.namelist()
            meta = [n for n in names if re.fullmatch(r"[^/]+\.dist-info/METADATA", n)]
            if len(meta) != 1:
                raise PackageError(f"{path} has {len(meta)} */.dist-info/METADATA files, not one")
            message = email.parser.Parser().parsestr(zf.read(meta[0]).decode("utf-8"))
            top_txt = meta[0].replace("METADATA", "top_level.txt")
            if top_txt in names:
                top = [t.strip() for t in zf.read(top_txt).decode().splitlines() if t.strip()]
            else:
                top = sorted({n.split("/")[0].removesuffix(".py") for n in names
                              if not n.split("/")[0].endswith((".dist-info", ".data"))})
    except zipfile.BadZipFile as exc:
        raise PackageError(f"{path} is not a zip file: {exc}") from None
    return WheelInfo(path, canonical_name(str(message["Name"])), str(message["Version"]),
                     tuple(message.get_all("Requires-Dist") or ()), tuple(top))


def parse_requirements_file(path: Path) -> tuple[list[Path], list[str]]:
    """The wheel paths and requirement specs of a requirements file.

    Each line is a path to a ``.whl`` (relative to the file's folder) or a PEP 508
    requirement; ``#`` starts a comment. pip's options (``-r``, ``--index-url``…)
    are refused: everything here is installed offline.

    Raises
    ------
    PackageError
        Naming the file and line of anything else.
    """
    wheels: list[Path] = []
    specs: list[str] = []
    from packaging.requirements import InvalidRequirement, Requirement

    for number, raw in enumerate(Path(path).read_text().splitlines(), 1):
        line = raw.split(" #", 1)[0].strip() if not raw.lstrip().startswith("#") else ""
        if not line:
            continue
        where = f"{path}:{number}"
        if line.startswith("-"):
            raise PackageError(f"{where}: pip option {line!r} is not supported: list wheel "
                               "paths and requirements only (installs are offline)")
        if line.endswith(".whl"):
            wheel = (Path(path).parent / line).resolve()
            if not wheel.is_file():
                raise PackageError(f"{where}: wheel {line!r} not found (looked at {wheel})")
            wheels.append(wheel)
            continue
        try:
            Requirement(line)
        except InvalidRequirement as exc:
            raise PackageError(f"{where}: expected a wheel path or a requirement, got {line!r} "
                               f"({exc})") from None
        specs.append(line)
    return wheels, specs


@dataclass
class Resolution:
    """How requirements are met offline.

    Attributes
    ----------
    wheels : list of WheelInfo
        The given wheels, each after the given wheels it requires.
    lock_packages : list of str
        Pyodide packages they need, with their dependencies (lock keys, sorted).
    """

    wheels: list[WheelInfo]
    lock_packages: list[str] = field(default_factory=list)


def resolve_offline(
    wheels: Sequence[Path],
    requirements: Sequence[str],
    lock: Mapping[str, Any],
    unavailable: Mapping[str, Any],
    *,
    what: str = "--wheel",
) -> Resolution:
    """Check that ``wheels`` and ``requirements`` can be installed with no network.

    Every requirement (given, or a ``Requires-Dist`` of a given wheel whose markers
    hold in Pyodide) must be met by a given wheel or by a package of ``lock`` that
    is available offline, in a version its specifier allows. micropip then
    installs the same set in the page.

    Parameters
    ----------
    wheels : sequence of Path
    requirements : sequence of str
        PEP 508 requirements (e.g. from ``--requirements``).
    lock : mapping
        The lock the page boots with (official entries plus ortweb's own wheels).
    unavailable : mapping
        Packages of the lock set-up could not obtain (:class:`OfflinePackages`).
    what : str
        How the caller's option is spelled, for messages.

    Raises
    ------
    PackageError
        Listing every requirement that cannot be met, with what required it.
    """
    from packaging.requirements import Requirement
    from packaging.version import InvalidVersion, Version

    infos = [read_wheel(Path(p)) for p in wheels]
    given: dict[str, WheelInfo] = {}
    for info in infos:
        if info.name in given:
            raise PackageError(f"two wheels of {info.name}: {given[info.name].path} and "
                               f"{info.path}")
        given[info.name] = info
    packages = lock["packages"]
    problems: list[str] = []
    needed: set[str] = set()
    edges: dict[str, set[str]] = {name: set() for name in given}
    todo: list[tuple[str, str, str | None]] = [(r, "the requirements", None)
                                               for r in requirements]
    for info in infos:
        todo.extend((r, info.label, info.name) for r in info.requires)
    for text, parent, parent_name in todo:
        req = Requirement(text)
        if req.marker is not None and not req.marker.evaluate(PYODIDE_MARKERS):
            continue
        if req.url is not None:
            # micropip downloads a `name @ URL` requirement whatever the index says.
            problems.append(
                f"{text!r} (required by {parent}): a direct URL ({req.url}) would be "
                f"downloaded, and installs are offline; pass the wheel itself with {what}"
            )
            continue
        name = canonical_name(req.name)
        if name in given:
            version = given[name].version
            source = f"the {what} file {given[name].path.name}"
            if parent_name is not None:
                edges[parent_name].add(name)
        elif name in packages and name not in unavailable:
            version = str(packages[name]["version"])
            source = f"Pyodide package {name} {version}"
            needed.add(name)
        elif name in unavailable:
            problems.append(
                f"{text!r} (required by {parent}): Pyodide package {name!r} is not available "
                f"offline (set-up could not obtain a verified copy of its wheel); pass a wheel "
                f"of it with {what}"
            )
            continue
        else:
            problems.append(
                f"{text!r} (required by {parent}): {name!r} is neither an offline Pyodide "
                f"package nor one of the {what} files; pass a wheel of it with {what}"
            )
            continue
        try:
            ok = req.specifier.contains(Version(version), prereleases=True)
        except InvalidVersion:
            ok = not req.specifier
        if not ok:
            problems.append(f"{text!r} (required by {parent}): {source} does not satisfy "
                            f"{req.specifier}")
    lock_packages: list[str] = []
    if not problems:
        try:
            lock_packages = closure(lock, needed, unavailable)
        except PackageError as exc:
            problems.append(str(exc))
    if problems:
        raise PackageError("cannot be installed offline:\n  " + "\n  ".join(problems))
    return Resolution(install_order(infos, edges), lock_packages)


def install_order(infos: Sequence[WheelInfo], edges: Mapping[str, set[str]]) -> list[WheelInfo]:
    """``infos`` with every wheel after the given wheels it requires.

    micropip resolves a wheel's requirements against what is installed when it
    looks, so a wheel another one requires must be installed first.
    """
    by_name = {i.name: i for i in infos}
    order: list[WheelInfo] = []
    state: dict[str, int] = {}

    def visit(name: str) -> None:
        if state.get(name) == 2:
            return
        if state.get(name) == 1:
            return  # a cycle: micropip takes the rest in one transaction
        state[name] = 1
        for dep in sorted(edges.get(name, ())):
            visit(dep)
        state[name] = 2
        order.append(by_name[name])

    for info in infos:
        visit(info.name)
    return order


def resolve_for_pyodide(pyodide_dir: Path, wheels: Sequence[Path], requirements: Sequence[str],
                        *, what: str = "--wheel") -> Resolution:
    """:func:`resolve_offline` against the lock and offline list of ``pyodide_dir``.

    The lock is the one pages boot with (``pyodide-lock.json``: the official entries
    plus ortweb's own wheels, which are installed distributions in every page).
    """
    lock = json.loads((pyodide_dir / "pyodide-lock.json").read_text())
    return resolve_offline(wheels, requirements, lock, read_offline(pyodide_dir).unavailable,
                           what=what)
