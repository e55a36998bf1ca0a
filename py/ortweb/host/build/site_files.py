"""A site's files as ``ortweb site`` writes them, with what it records about each.

Every file is written through a :class:`SiteWriter`, which keeps its size and
digests: sha256 for ``ortweb-manifest.json`` and the page's own checks, sha384 for
subresource integrity (``integrity=`` attributes, the import map). :class:`PageLoads`
collects what the page loads and how it checks each; :class:`SiteReport` is what a
build wrote.
"""

from __future__ import annotations

import base64
import hashlib
import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final
from urllib.parse import unquote

from ..errors import SiteError
from .site_hashed import HASHED

__all__ = [
    "GENERATOR",
    "MANIFEST_NAME",
    "RESERVED",
    "SW_SCRIPT",
    "Digest",
    "PageLoads",
    "SiteFile",
    "SiteReport",
    "SiteWriter",
    "digest_file",
    "first_visit",
    "format_size",
    "read_manifest",
    "visit_totals",
]

MANIFEST_NAME: Final = "ortweb-manifest.json"
#: The manifest's ``generator``: how a folder ``ortweb site`` wrote is told from others.
GENERATOR: Final = "ortweb site"
#: The site's service worker (cross-origin isolation, the offline cache), at its root.
SW_SCRIPT: Final = "ortweb-sw.js"
#: The site's own top-level names, which a template's files must not take.
RESERVED: Final = ("app", "ortweb", "pyodide", "ort", "wheels", HASHED, "_headers", SW_SCRIPT,
                   MANIFEST_NAME)


@dataclass(frozen=True)
class SiteFile:
    """One file of a written site."""

    path: str
    size: int
    sha256: str


@dataclass
class SiteReport:
    """What :func:`ortweb.host.build.site.build_site` wrote."""

    out: Path
    files: list[SiteFile]
    assets: str
    providers: list[str]
    packages: list[str]
    title: str
    template: Path
    #: ``"shipped"``, or why the site has no Pyodide snapshot made at build time.
    snapshot: str = "shipped"
    #: ``"shipped"``, or why the site has no bytecode of its packages.
    bytecode: str = "shipped"
    #: The manifest's ``files``: path → size, sha256, ``first_visit``, ``encodings``.
    entries: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def total_size(self) -> int:
        """Bytes in the folder, the manifest included."""
        return sum(f.size for f in self.files) + (self.out / MANIFEST_NAME).stat().st_size

    def largest(self, count: int = 5) -> list[SiteFile]:
        """The ``count`` largest files, largest first."""
        return sorted(self.files, key=lambda f: (-f.size, f.path))[:count]

    def summary(self, count: int = 5) -> str:
        """Lines for a person: where, how big, the largest files."""
        lines = [f"wrote {self.out} ({len(self.files) + 1} files, {format_size(self.total_size)}; "
                 f"assets {self.assets}; providers {','.join(self.providers)}; "
                 f"Pyodide packages {', '.join(self.packages)})",
                 f"Pyodide snapshot: {self.snapshot}",
                 f"packages' bytecode: {self.bytecode}",
                 "largest files:"]
        width = max((len(format_size(f.size)) for f in self.largest(count)), default=0)
        for f in self.largest(count):
            lines.append(f"  {format_size(f.size):>{width}}  {f.path}")
        if self.entries:
            lines.append(self.first_visit_line())
        return "\n".join(lines)

    def first_visit_line(self) -> str:
        """The first visit's files and bytes, raw and compressed."""
        totals = visit_totals(self.entries)
        return (f"first visit: {totals['files']} files, {format_size(totals['raw'])} raw, "
                f"{format_size(totals['br'])} with brotli, {format_size(totals['gzip'])} with "
                "gzip (from a host that serves the .br/.gz files beside them)")

    def byte_table(self) -> str:
        """What a visit downloads, file by file: raw, brotli and gzip sizes (as
        written beside it; ``-`` where the file is left plain), and whether the
        first result waits for it (``first``) or only a fallback, an offline copy or
        the host needs it (``later``). First-visit files first, largest first."""
        rows = sorted(self.entries.items(),
                      key=lambda kv: (not kv[1]["first_visit"], -kv[1]["size"], kv[0]))
        table: list[tuple[str, ...]] = [("when", "raw", "brotli", "gzip", "file")]
        for path, e in rows:
            enc = e.get("encodings", {})
            table.append(("first" if e["first_visit"] else "later", format_size(e["size"]),
                          *(format_size(enc[k]) if k in enc else "-" for k in ("br", "gzip")),
                          path))
        widths = [max(len(r[i]) for r in table) for i in range(4)]
        return "\n".join("  " + "  ".join([r[0].ljust(widths[0]), *(
            c.rjust(w) for c, w in zip(r[1:4], widths[1:], strict=True)), r[4]])
            for r in table)


def format_size(size: int) -> str:
    """``1536`` → ``'1.5 KB'`` (binary units, as the page shows them)."""
    if size < 1024:
        return f"{size} B"
    if size < 1024 * 1024:
        return f"{size / 1024:.1f} KB"
    return f"{size / (1024 * 1024):.1f} MB"


def read_manifest(folder: Path) -> dict[str, Any] | None:
    """The manifest of a folder ``ortweb site`` wrote, or None."""
    path = folder / MANIFEST_NAME
    try:
        manifest = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(manifest, dict) or manifest.get("generator") != GENERATOR:
        return None
    return manifest


def first_visit(loads: PageLoads, page: set[str], lead: list[str],
                later: set[str] | frozenset[str] = frozenset()) -> set[str]:
    """The site paths a first visit downloads before the script's first result.

    ``page``: the template's files (``index.html`` and what it links) and the service
    worker; ``lead``: the files of the engine the first session tries; ``later``: the
    bridge's modules that only another engine imports. Of what the page's boot loads,
    onnxruntime-web's builds count only through ``lead``, and files from a CDN not at all.
    """
    urls = [entry["url"] for entry in (*loads.fetched, *loads.modules)]
    local = {unquote(u) for u in urls if "://" not in u and not u.startswith("ort/")}
    return (local - later) | page | set(lead)


def visit_totals(entries: dict[str, dict[str, Any]]) -> dict[str, int]:
    """Files and bytes of a first visit: raw, and as served with brotli or gzip (a
    file without that encoding counts raw)."""
    first = [e for e in entries.values() if e["first_visit"]]
    return {"files": len(first), "raw": sum(e["size"] for e in first),
            **{key: sum(e.get("encodings", {}).get(key, e["size"]) for e in first)
               for key in ("br", "gzip")}}


# -- hashing --------------------------------------------------------------------------


@dataclass
class Digest:
    """A file's size and digests."""

    size: int
    sha256: str
    sha384: str

    @property
    def sri(self) -> str:
        """Subresource-integrity value (``integrity=`` attribute, import maps)."""
        return "sha384-" + self.sha384


def _digest_bytes(data: bytes) -> Digest:
    return Digest(len(data), hashlib.sha256(data).hexdigest(),
                  base64.b64encode(hashlib.sha384(data).digest()).decode())


def digest_file(path: Path) -> Digest:
    """The size and digests of ``path``, read in chunks."""
    h256, h384, size = hashlib.sha256(), hashlib.sha384(), 0
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h256.update(chunk)
            h384.update(chunk)
            size += len(chunk)
    return Digest(size, h256.hexdigest(), base64.b64encode(h384.digest()).decode())


# -- writing ----------------------------------------------------------------------------


@dataclass
class SiteWriter:
    """Writes files under ``root`` and keeps each one's :class:`Digest` by its path."""

    root: Path
    digests: dict[str, Digest] = field(default_factory=dict)

    def add_bytes(self, rel: str, data: bytes) -> Digest:
        target = self.root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        self.digests[rel] = _digest_bytes(data)
        return self.digests[rel]

    def add_file(self, rel: str, src: Path, expected_sha256: str | None = None) -> Digest:
        """Copy ``src`` to ``rel``; with ``expected_sha256``, only if it matches that pin."""
        digest = digest_file(src)
        if expected_sha256 is not None and digest.sha256 != expected_sha256:
            raise SiteError(
                f"{src} does not match its pinned sha256 ({expected_sha256}, got {digest.sha256}): "
                "run `python3 build.py setup` to restore the verified assets"
            )
        target = self.root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, target)
        self.digests[rel] = digest
        return digest

    def files(self) -> list[SiteFile]:
        """Every file written so far, sorted by path."""
        return [SiteFile(rel, d.size, d.sha256) for rel, d in sorted(self.digests.items())]


@dataclass
class PageLoads:
    """What the page loads, for its config: files ``boot.js`` downloads with ``fetch()``
    (checked against their sha256) and JS modules the browser imports (checked by the
    import map's ``integrity``)."""

    fetched: list[dict[str, Any]] = field(default_factory=list)
    modules: list[dict[str, Any]] = field(default_factory=list)
    #: The import map's ``integrity``: module URL → SRI.
    integrity: dict[str, str] = field(default_factory=dict)

    def fetch(self, url: str, digest: Digest, label: str,
              name: str | None = None) -> dict[str, Any]:
        """Add a fetched file; returns its entry (the config also names some directly)."""
        entry = _asset_entry(url, digest, label, name)
        self.fetched.append(entry)
        return entry

    def module(self, url: str, digest: Digest, label: str) -> None:
        # sha256 and integrity: a site's Web Worker checks the modules it imports itself
        # (no import map reaches a worker).
        self.modules.append({"url": url, "size": digest.size, "label": label,
                             "sha256": digest.sha256, "integrity": digest.sri})
        self.integrity[url if "://" in url else "./" + url] = digest.sri


def _asset_entry(url: str, digest: Digest, label: str, name: str | None = None) -> dict[str, Any]:
    """A fetched file's entry in the page's config."""
    entry: dict[str, Any] = {"url": url, "size": digest.size, "sha256": digest.sha256,
                             "label": label}
    if name is not None:
        entry["name"] = name
    return entry
