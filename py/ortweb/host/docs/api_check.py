"""Every public name of ortweb documented: the check behind the API reference.

The names are those in ``__all__`` of the packages the reference renders; for a
public class, its public methods and properties too. Read statically with griffe
(what mkdocstrings reads), so modules that only import inside Pyodide are checked
as they are.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import griffe

__all__ = ["PUBLIC_PACKAGES", "missing_docstrings"]

#: The packages whose ``__all__`` is the public API (the reference's pages).
PUBLIC_PACKAGES = ("ortweb", "ortweb.testing")


def _where(obj: griffe.Object | griffe.Alias, root: Path) -> str:
    path = Path(str(obj.filepath))
    shown = path.relative_to(root) if path.is_relative_to(root) else path
    return f"{shown}:{obj.lineno or 1}"


def _members(cls: griffe.Object | griffe.Alias) -> Iterable[tuple[str, griffe.Object]]:
    # all_members: the inherited ones too, as the reference shows them.
    for name, member in cls.all_members.items():
        if name.startswith("_"):
            continue
        if isinstance(member, griffe.Alias):
            try:
                member = member.final_target
            except (griffe.AliasResolutionError, griffe.CyclicAliasError):
                continue
        if member.kind is griffe.Kind.FUNCTION or (
                member.kind is griffe.Kind.ATTRIBUTE and "property" in member.labels):
            yield name, member


def missing_docstrings(search_path: Path,
                       packages: Iterable[str] = PUBLIC_PACKAGES) -> list[str]:
    """``FILE:LINE: NAME has no docstring`` for each public name without one.

    Parameters
    ----------
    search_path
        The folder the packages are imported from (``py/`` of the checkout).
    packages
        Dotted names of the packages whose ``__all__`` is checked.
    """
    loader = griffe.GriffeLoader(search_paths=[str(search_path)])
    found: list[str] = []
    root = search_path.resolve().parent
    for dotted in packages:
        module = loader.load(dotted)
        loader.resolve_aliases(implicit=False, external=False)
        if not module.docstring:
            found.append(f"{_where(module, root)}: {dotted} has no docstring")
        for export in module.exports or ():
            name = str(export)
            obj = module[name]
            if obj.kind is griffe.Kind.ATTRIBUTE:
                continue  # constants are described where the module's docstring lists them
            if not obj.docstring:
                found.append(f"{_where(obj, root)}: {dotted}.{name} has no docstring")
            if obj.kind is griffe.Kind.CLASS:
                for member_name, member in _members(obj):
                    if not member.docstring:
                        found.append(f"{_where(member, root)}: {dotted}.{name}.{member_name} "
                                     "has no docstring")
    return found
