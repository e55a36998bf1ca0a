"""The pages of an ``ortweb site``: its template (``templates/NAME`` or a folder),
rendered with jinja2 around the ``head`` that starts ortweb.

A template is a folder: ``*.j2`` files are rendered (``index.html.j2`` is required),
other files are copied as they are, and names starting with ``_`` or ``.`` are
partials or private and not written.
"""

from __future__ import annotations

import json
import os
import traceback
from pathlib import Path
from typing import Any, Final

from ..errors import SiteError
from .assets import Assets, find_assets
from .site_files import RESERVED, SW_SCRIPT, SiteWriter

__all__ = ["page_head", "render_template", "resolve_template"]

# Browsers refuse module scripts on file:// pages, so boot.js never runs there;
# this inline classic script is the only thing that can tell the visitor why.
_FILE_URL_HINT: Final = (
    "<script>if (location.protocol === 'file:') addEventListener('DOMContentLoaded', () => {"
    " const el = document.getElementById('ortweb-status')"
    " ?? document.body.appendChild(document.createElement('p'));"
    " el.textContent = 'This page must be served over http(s), not opened as a file: run"
    " \"ortweb serve DIR\" in its folder, or put the folder on a static host.'; });</script>"
)


def resolve_template(template: str | os.PathLike[str], assets: Assets | None = None) -> Path:
    """The folder of a template given by name (``templates/NAME``) or path."""
    text = os.fspath(template)
    path = Path(text)
    if path.is_dir():
        return path.resolve()
    assets = assets or find_assets()
    named = assets.root / "templates" / text
    if os.sep not in text and "/" not in text and named.is_dir():
        return named.resolve()
    known = sorted(p.name for p in (assets.root / "templates").iterdir() if p.is_dir())
    raise SiteError(f"no template {text!r}: give a folder, or one of {', '.join(known)}")


def _json_for_html(value: Any) -> str:
    from jinja2.utils import htmlsafe_json_dumps

    # htmlsafe escapes <, >, & and ' so the JSON cannot end the <script> element.
    return str(htmlsafe_json_dumps(value, dumps=json.dumps, indent=1, sort_keys=True))


def page_head(integrity: dict[str, str], config: dict[str, Any], sw_sri: str,
              boot_sri: str) -> str:
    """The ``<head>`` elements that start ortweb: the import map with the modules'
    integrity, the file:// hint, the page's config, the service worker's registration
    and ``boot.js``."""
    crossorigin = ' crossorigin="anonymous"'
    return "\n".join([
        '<script type="importmap">' + _json_for_html({"integrity": integrity}) + "</script>",
        _FILE_URL_HINT,
        '<script type="application/json" id="ortweb-config">' + _json_for_html(config)
        + "</script>",
        f'<script src="{SW_SCRIPT}" integrity="{sw_sri}"{crossorigin}></script>',
        f'<script type="module" src="ortweb/boot.js" integrity="{boot_sri}"{crossorigin}>'
        "</script>",
    ])


def render_template(b: SiteWriter, template_dir: Path, context: dict[str, Any]) -> None:
    """Copy the template's static files, then render its ``*.j2`` files.

    Static files go first so that templates can ask for their integrity
    (``integrity('style.css')``). Files whose name starts with ``_`` or ``.``
    are partials or private and are not written.
    """
    import jinja2
    from markupsafe import Markup

    sources = sorted(p for p in template_dir.rglob("*") if p.is_file())
    rendered: list[tuple[str, Path]] = []
    for src in sources:
        rel = src.relative_to(template_dir).as_posix()
        if any(part.startswith((".", "_")) or part == "__pycache__" for part in rel.split("/")):
            continue
        out_rel = rel[: -len(".j2")] if rel.endswith(".j2") else rel
        if out_rel.split("/")[0] in RESERVED:
            raise SiteError(f"template file {src} would overwrite the site's {out_rel}")
        if rel.endswith(".j2"):
            rendered.append((out_rel, src))
        else:
            b.add_file(out_rel, src)
    if "index.html" not in {rel for rel, _ in rendered} | set(b.digests):
        raise SiteError(f"template {template_dir} has no index.html.j2")

    def integrity(path: str) -> str:
        digest = b.digests.get(path)
        if digest is None:
            raise SiteError(f"integrity({path!r}): the site has no such file (yet)")
        return digest.sri

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(template_dir)),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
    )
    values: dict[str, Any] = {**context, "head": Markup(context["head"]), "integrity": integrity}
    for out_rel, src in rendered:
        name = src.relative_to(template_dir).as_posix()
        try:
            text = env.get_template(name).render(**values)
        except jinja2.TemplateError as exc:
            # jinja2 rewrites tracebacks to point at template lines; an undefined
            # variable (StrictUndefined) carries no line number of its own.
            lines = [f.lineno for f in traceback.extract_tb(exc.__traceback__)
                     if f.filename == str(src)]
            lineno = getattr(exc, "lineno", None) or (lines[-1] if lines else None)
            where = f"{src}:{lineno}" if lineno else str(src)
            raise SiteError(f"template error in {where}: {exc}") from None
        if out_rel == "index.html" and 'src="ortweb/boot.js"' not in text:
            raise SiteError(f"{src} must put {{{{ head }}}} inside <head>: without it the page "
                            "never starts")
        b.add_bytes(out_rel, text.encode())
