"""Python sources the host runs *inside* the page (read as text, never imported here)."""

from __future__ import annotations

from pathlib import Path

__all__ = ["source"]


def source(name: str) -> str:
    """The text of ``inpage/<name>.py``."""
    return (Path(__file__).with_name(f"{name}.py")).read_text()
