"""The one Pyodide version check behind ortweb's fast waiting (``_bridge._waiting``).

On the Pyodide series it was written for, ortweb wakes tasks in a microtask, steps
coroutines itself in ``block_on`` and swaps the page's event-loop scheduler; all of
that leans on Pyodide's internals. On any other version it must say so, clearly and
once, and wait through Pyodide's public API instead. Host-only: the browser tests
(test_waiting.py) pin the fast paths on the real 0.27.7.
"""

from __future__ import annotations

import warnings
from typing import Any

import pytest

from ortweb import _bridge
from ortweb._bridge import _waiting


@pytest.mark.parametrize("version", ["0.27.0", "0.27.7", "0.27.10", "0.27.7.dev0"])
def test_the_supported_series_is_accepted(version: str) -> None:
    assert _waiting.unsupported_reason(version) is None


@pytest.mark.parametrize("version", ["0.28.0", "0.26.4", "1.27.0", "0.28.0a1"])
def test_another_version_is_refused_by_name(version: str) -> None:
    reason = _waiting.unsupported_reason(version)
    assert reason is not None
    assert f"Pyodide {version} is not the 0.27.x" in reason


@pytest.mark.parametrize("version", [None, "", "dev", "0"])
def test_an_unreadable_version_is_refused(version: str | None) -> None:
    reason = _waiting.unsupported_reason(version)
    assert reason is not None
    assert "0.27.x" in reason


def test_the_host_has_nothing_to_fall_back_from() -> None:
    assert _bridge.FALLBACK_REASON is None


class _FakeBridge:
    """Has everything the fast paths look for, so only the version check says no."""

    startThen = scheduleCallback = object()

    def __init__(self) -> None:
        self.started: list[tuple[Any, ...]] = []

    def start(self, method: str, *args: Any) -> str:
        self.started.append((method, *args))
        return "job"


def test_another_version_falls_back_to_the_public_api(monkeypatch: pytest.MonkeyPatch) -> None:
    reason = _waiting.unsupported_reason("0.28.0")
    monkeypatch.setattr(_waiting, "FALLBACK_REASON", reason)
    monkeypatch.setattr(_waiting, "_fast", False)
    monkeypatch.setattr(_waiting, "_event_loop", None)
    monkeypatch.setattr(_waiting, "_wake_in_microtask", True)
    bridge = _FakeBridge()
    with pytest.warns(RuntimeWarning, match=r"Pyodide 0\.28\.0 is not the 0\.27\.x") as caught:
        _waiting.notice_bridge(bridge)
    assert "public API" in str(caught[0].message)
    # Pyodide's own event loop and wake-ups, said once per page.
    assert _bridge.event_loop() == "pyodide"
    assert _bridge.bridge_wakeup() == "event-loop"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _waiting.notice_bridge(bridge)
    # A bridge call waits on the job's promise, never on the microtask wake-up.
    waiter, job = _waiting.start_call(bridge, "versions", ("wasm",))
    assert job == "job" and bridge.started == [("versions", "wasm")]
    assert isinstance(waiter, _waiting._JobWait)
