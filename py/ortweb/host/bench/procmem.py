"""A process's memory as the operating system counts it (Linux ``/proc``).

The large-model section compares renderer processes, not JavaScript estimates: a
page's peak is ``VmHWM`` (the most resident memory since the last reset), and the
reset (``5`` written to ``/proc/<pid>/clear_refs``) starts a measurement at a
chosen point, so a page's boot does not count against its loading.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["parse_status", "peak_bytes", "reset_peak", "rss_bytes"]


def parse_status(text: str) -> dict[str, int]:
    """The ``kB`` fields of a ``/proc/<pid>/status`` text, in bytes."""
    out = {}
    for line in text.splitlines():
        key, _, value = line.partition(":")
        parts = value.split()
        if len(parts) == 2 and parts[1] == "kB" and parts[0].isdigit():
            out[key] = int(parts[0]) * 1024
    return out


def _status(pid: int) -> dict[str, int]:
    try:
        return parse_status(Path(f"/proc/{pid}/status").read_text())
    except (FileNotFoundError, ProcessLookupError):
        return {}


def rss_bytes(pid: int) -> int:
    """Resident memory of ``pid`` now (0 when it is gone)."""
    return _status(pid).get("VmRSS", 0)


def peak_bytes(pid: int) -> int:
    """The most resident memory of ``pid`` since its start or the last :func:`reset_peak`."""
    return _status(pid).get("VmHWM", 0)


def reset_peak(pid: int) -> bool:
    """Start a new peak at the current resident memory; False where the OS refuses."""
    try:
        Path(f"/proc/{pid}/clear_refs").write_text("5")
    except OSError:
        return False
    return True
