"""The bridge's modules as a site loads them: at start-up, or when a session first
tries an engine whose code is imported then (``bridge_js/lazy_engine.js``).

Read from the sources: the static imports of each module (``import ... from
'./x.js'``, ``export ... from``) and each lazily loaded engine's ``const CODE = [...]``
in ``engine_<name>.js``.
"""

from __future__ import annotations

import re
from pathlib import Path

__all__ = ["code_closure", "engine_code", "full_closure", "lazy_only", "startup_modules",
           "static_imports"]

_STATIC = re.compile(r"""^\s*(?:import|export)\b[^'"`;]*?\bfrom\s*['"]\./([\w.-]+)['"]"""
                     r"""|^\s*import\s*['"]\./([\w.-]+)['"]""", re.M | re.S)
_CODE = re.compile(r"^const CODE = \[([^\]]*)\];", re.M)
_ITEM = re.compile(r"""['"]\./([\w.-]+)['"]""")


def static_imports(source: str) -> set[str]:
    """The bridge files a module's source imports statically (names in ``bridge_js/``)."""
    return {a or b for a, b in _STATIC.findall(source)}


def engine_code(bridge: Path) -> dict[str, list[str]]:
    """Engine name → the files its ``CODE`` lists (the sessions' module first), for
    each engine whose code is imported when a session first tries it."""
    found = {}
    for path in sorted(bridge.glob("engine_*.js")):
        if match := _CODE.search(path.read_text()):
            found[path.stem.removeprefix("engine_")] = _ITEM.findall(match.group(1))
    return found


def _closure(bridge: Path, roots: set[str]) -> set[str]:
    seen: set[str] = set()
    todo = list(roots)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        if name.endswith(".js"):
            todo += static_imports((bridge / name).read_text())
    return seen


def _startup(bridge: Path, code: dict[str, list[str]]) -> set[str]:
    lazy = {f for files in code.values() for f in files}
    return _closure(bridge, {p.name for p in bridge.glob("*.js")} - lazy)


def startup_modules(bridge: Path) -> set[str]:
    """The files every page that loads the bridge imports: every module but the
    engines' ``CODE``, with what they import."""
    return _startup(bridge, engine_code(bridge))


def lazy_only(bridge: Path, engine: str | None = None) -> set[str]:
    """The files imported only when a session tries an engine, less those of
    ``engine`` (the one a site's first session tries)."""
    code = engine_code(bridge)
    keep = set(code.get(engine or "", []))
    return {f for files in code.values() for f in files} - _startup(bridge, code) - keep


def full_closure(bridge: Path, module: str) -> set[str]:
    """Every file ``module`` reaches by static imports, itself included."""
    return _closure(bridge, {module})


def code_closure(bridge: Path, engine: str) -> set[str]:
    """What importing ``engine``'s sessions module brings that start-up did not."""
    code = engine_code(bridge)
    return full_closure(bridge, code[engine][0]) - _startup(bridge, code)
