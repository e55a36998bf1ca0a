"""The folder ``ortweb site`` writes into: what it may replace, and the swap itself.

A site is written into a fresh folder beside ``out`` and moved into place whole, so
a host serving ``out`` never sees half a site. Replacing a folder is refused when
it holds anything ``ortweb site`` did not write, unless forced, and always when it
holds the site's own inputs or is as broad as a home folder.
"""

from __future__ import annotations

import shutil
import uuid
from collections.abc import Sequence
from pathlib import Path

from ..errors import SiteError
from .site_compress import ENCODINGS
from .site_files import MANIFEST_NAME, read_manifest

__all__ = ["check_out", "replace_folder"]


def _is_ours(folder: Path) -> bool:
    """Whether every file in ``folder`` is one the manifest there lists."""
    manifest = read_manifest(folder)
    if manifest is None:
        return False
    files = manifest.get("files", {})
    listed = set(files) | {MANIFEST_NAME} | {  # and the .br/.gz written beside them
        path + ENCODINGS[enc] for path, entry in files.items() if isinstance(entry, dict)
        for enc in entry.get("encodings", {}) if enc in ENCODINGS}
    for path in folder.rglob("*"):
        rel = path.relative_to(folder).as_posix()
        if path.is_symlink() or (path.is_file() and rel not in listed):
            return False
    return True


def check_out(out: Path, inputs: Sequence[Path], force: bool) -> None:
    """Refuse an ``out`` the site must not be written into.

    Raises
    ------
    SiteError
        When ``out`` is not a folder, is ``/``, the home or the current folder,
        contains one of ``inputs``, or (unless ``force``) holds files that a site's
        manifest there does not list.
    """
    resolved = out.resolve()
    if out.exists() and (out.is_symlink() or not out.is_dir()):
        raise SiteError(f"{out} exists and is not a folder")
    # Even --force must not replace a folder that holds the site's own inputs
    # (`--out .` next to the model) or something as broad as a home folder.
    protected = [Path("/").resolve(), Path.home().resolve(), Path.cwd().resolve()]
    if resolved in protected:
        raise SiteError(f"refusing to write the site into {out}: choose a folder of its own")
    for path in inputs:
        if path.resolve().is_relative_to(resolved):
            raise SiteError(f"refusing to write the site into {out}: it contains {path}")
    if out.is_dir() and any(out.iterdir()) and not force and not _is_ours(out):
        raise SiteError(
            f"{out} is not empty and was not written by `ortweb site` (or holds files its "
            "manifest does not list): choose another --out, or pass --force to replace it"
        )


def replace_folder(tmp: Path, out: Path) -> None:
    """Move the finished ``tmp`` to ``out``, removing what was there."""
    if out.exists():
        old = out.with_name(f".{out.name}.ortweb-old-{uuid.uuid4().hex[:8]}")
        out.rename(old)
        tmp.rename(out)
        shutil.rmtree(old)
    else:
        tmp.rename(out)
