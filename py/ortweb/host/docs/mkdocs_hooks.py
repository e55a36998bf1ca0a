"""MkDocs hooks of the docs site (``docs/mkdocs.yml``): generated parts and checks.

Warnings fail the build (``strict``), so each problem is logged as one, with the
file and line it comes from.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

from ortweb.host.docs.api_check import missing_docstrings
from ortweb.host.docs.generated import GeneratedError, expand

_log = logging.getLogger("mkdocs.plugins.ortweb")
_ROOT = Path(__file__).resolve().parents[4]
#: Another source tree to check the docstrings of (the tests break one on purpose).
_PY = Path(os.environ.get("ORTWEB_DOCS_PY", _ROOT / "py"))


def on_config(config: Any) -> Any:
    for problem in missing_docstrings(_PY):
        _log.warning(problem)
    return config


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    where = f"docs/pages/{page.file.src_path}"
    try:
        return expand(markdown, _ROOT, where)
    except GeneratedError as exc:
        _log.warning(str(exc))
        return markdown
