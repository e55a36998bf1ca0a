"""The harness section: what ``ortweb.testing`` costs a test, as a user's suite sees it.

Per round, one ``pytest`` process (the plugin, headless Chromium, this machine) runs a
file of trivial ``@run_in_browser`` tests (a function that returns 1): ``reused``
tests on the shared page, then the same test under a fresh page each
(``@pytest.mark.ortweb_fresh_page``, the plain way pytest-pyodide works), side by
side in one run. Each test's time is its set-up, call and tear-down as pytest's
JUnit report gives it.

Figures: ``harness_first_page_s`` (the first test of the process: its browser, server
and page included) and ``harness_per_test_ms`` (each later test on the shared page);
details: ``harness_fresh_page_per_test_ms`` (each test with a page of its own) and
``harness_fresh_over_reused`` (their ratio, per round). These run as the plugin does
by default, with V8's baseline WebAssembly compiler only; each round runs the file
once more with ``--ortweb-wasm-tiers all`` (V8's default tiers), for the detail
``harness_first_page_all_tiers_s``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import textwrap
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path
from typing import Final

from .figures import Recorder
from .plan import Plan

__all__ = ["harness"]

Say = Callable[[str], None]

_TESTS: Final = '''
import pytest

from ortweb.testing import run_in_browser


@run_in_browser
def trivial(ortweb_page):
    return 1


@pytest.mark.parametrize("i", range({reused}))
def test_reused(ortweb_page, i):
    assert trivial(ortweb_page) == 1


@pytest.mark.ortweb_fresh_page
@pytest.mark.parametrize("i", range({fresh}))
def test_fresh(ortweb_page, i):
    assert trivial(ortweb_page) == 1
'''


def _durations(report: Path) -> dict[str, float]:
    """Seconds per test name, from a JUnit report (set-up + call + tear-down)."""
    cases = ET.parse(report).getroot().iter("testcase")
    return {str(case.get("name")): float(case.get("time") or 0.0) for case in cases}


def harness(plan: Plan, rec: Recorder, say: Say, executable: str | None = None) -> list[str]:
    """Run the section's rounds into ``rec``; returns its detail keys."""
    say(f"bench: harness: {plan.harness_reps} pytest runs of {plan.harness_tests} trivial "
        f"tests on one page and {plan.harness_fresh} with a page each")
    with tempfile.TemporaryDirectory(prefix="ortweb-harness-") as tmp:
        folder = Path(tmp)
        (folder / "test_trivial.py").write_text(textwrap.dedent(_TESTS).format(
            reused=plan.harness_tests, fresh=plan.harness_fresh))
        for i in range(plan.harness_reps):
            times = _run(folder, f"report-{i}", "baseline", executable)
            reused = [t for name, t in times.items() if name.startswith("test_reused")]
            fresh = [t for name, t in times.items() if name.startswith("test_fresh")]
            first, later = reused[0], reused[1:]
            rec.add("harness_first_page_s", [first])
            rec.add("harness_per_test_ms", [t * 1000 for t in later])
            rec.add("harness_fresh_page_per_test_ms", [t * 1000 for t in fresh])
            median = sorted(later)[len(later) // 2]
            rec.add("harness_fresh_over_reused", [sorted(fresh)[len(fresh) // 2] / median])
            times = _run(folder, f"report-{i}-all", "all", executable)
            rec.add("harness_first_page_all_tiers_s", [times["test_reused[0]"]])
    return ["harness_fresh_page_per_test_ms", "harness_fresh_over_reused",
            "harness_first_page_all_tiers_s"]


def _run(folder: Path, name: str, tiers: str, executable: str | None) -> dict[str, float]:
    """One pytest run of the section's file with ``--ortweb-wasm-tiers tiers``: seconds
    per test name."""
    report = folder / f"{name}.xml"
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
               "-o", "junit_duration_report=total", "--ortweb-wasm-tiers", tiers,
               f"--junitxml={report}", "--rootdir", str(folder), str(folder)]
    if executable:
        command += ["--ortweb-browser", executable]
    done = subprocess.run(command, cwd=folder, capture_output=True, text=True,
                          env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}, timeout=600)
    if done.returncode != 0:
        raise RuntimeError(f"the harness section's pytest run failed:\n{done.stdout}"
                           f"\n{done.stderr}")
    return _durations(report)
