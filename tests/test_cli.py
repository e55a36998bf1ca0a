"""The `ortweb` command end to end: each call starts its own server and Chromium."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from ortweb import __version__ as ortweb_version
from ortweb.host.build.assets import find_assets
from ortweb.host.inputs import load_npz, save_npz
from ortweb.host.native import run_native
from ortweb.testing import samples
from versions import ORT_WEB
from wheelmaker import make_wheel, tiny_wheels

pytestmark = pytest.mark.browser


def ortweb(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ortweb.cli", *args],
        capture_output=True, text=True, timeout=timeout,
    )


def test_version():
    result = ortweb("--version")
    assert result.returncode == 0, result.stderr
    lines = dict(line.split(" ", 1) for line in result.stdout.strip().splitlines())
    assert lines["pyodide"] == "0.27.7"
    assert lines["onnxruntime-web"] == ORT_WEB
    assert lines["ortweb"]
    assert "Chromium" in lines["chromium"]


def test_the_parser_loads_no_model_or_browser_library():
    # Every command pays for what building the parser imports, before it starts.
    code = ("import sys; from ortweb.cli import _parser; _parser(); "
            "print(sorted({m.split('.')[0] for m in sys.modules} & "
            "{'onnx', 'onnxruntime', 'playwright', 'jinja2'}))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]", done.stdout


def test_usage_errors_exit_2(tmp_path):
    missing = ortweb("run", str(tmp_path / "missing.onnx"))
    assert missing.returncode == 2 and "not found" in missing.stderr
    model = tmp_path / "m.onnx"
    model.write_bytes(samples.two_outputs_model())
    bad_ep = ortweb("run", str(model), "--providers", "cuda")
    assert bad_ep.returncode == 2 and "'cuda'" in bad_ep.stderr
    no_cmd = ortweb()
    assert no_cmd.returncode == 2


def test_run_with_inputs_outputs_and_json(tmp_path):
    model = tmp_path / "int64.onnx"
    model.write_bytes(samples.int64_model())
    feeds: dict[str, np.ndarray] = {
        "ids": np.array([4, 0, 7], np.int64),
        "table": np.random.default_rng(0).standard_normal((10, 3)).astype(np.float32),
    }
    save_npz(tmp_path / "in.npz", feeds)
    result = ortweb("run", str(model), "-i", str(tmp_path / "in.npz"), "-o",
                    str(tmp_path / "out.npz"), "--compare-native", "--json")
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads(result.stdout)
    assert report["ok"] and report["provider"] == "wasm" and report["blocked_requests"] == []
    assert [c["ok"] for c in report["compare_native"]] == [True, True, True]
    got = load_npz(tmp_path / "out.npz")
    want = run_native(model.read_bytes(), feeds)
    for name, value in want.items():
        np.testing.assert_array_equal(got[name], value)


def test_run_failure_exits_1(tmp_path):
    model = tmp_path / "int64.onnx"
    model.write_bytes(samples.int64_model())
    save_npz(tmp_path / "in.npz", {"ids": np.array([99], np.int64),
                                   "table": np.zeros((10, 3), np.float32)})
    result = ortweb("run", str(model), "-i", str(tmp_path / "in.npz"))
    assert result.returncode == 1
    assert "error" in result.stdout


def test_run_light_resnet50_wasm(light_models):
    result = ortweb("run", str(light_models / "light_resnet50.onnx"), "--compare-native",
                    "--providers", "wasm")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "provider wasm" in result.stdout and " ok" in result.stdout


@pytest.mark.webgpu
def test_run_light_squeezenet_webgpu(light_models):
    result = ortweb("run", str(light_models / "light_squeezenet.onnx"), "--compare-native",
                    "--providers", "webgpu")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "provider webgpu" in result.stdout


def test_run_random_inputs_for_dynamic_dims(tmp_path):
    model = tmp_path / "conv.onnx"
    model.write_bytes(samples.dynamic_conv_model())
    result = ortweb("run", str(model), "--compare-native", "--dim", "height=11", "--json")
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads(result.stdout)
    assert report["outputs"] == [{"name": "features", "dtype": "float32", "shape": [1, 4]}]


SCRIPT = '''
import sys
import numpy as np
import ortweb

print("argv", sys.argv[1:])
with open("data.txt") as f:
    print("file", f.read().strip())
sess = await ortweb.InferenceSession.create("model.onnx")
print("provider", sess.provider)
(double, negated) = sess.run(None, {"x": np.eye(2, dtype=np.float32)})
print("double", double.tolist())
if "--fail" in sys.argv:
    def explode():
        raise RuntimeError("exploded on purpose")
    explode()
if "--exit" in sys.argv:
    sys.exit(3)
'''


@pytest.fixture
def script_dir(tmp_path: Path) -> Path:
    (tmp_path / "app.py").write_text(textwrap.dedent(SCRIPT))
    (tmp_path / "model.onnx").write_bytes(samples.two_outputs_model())
    (tmp_path / "data.txt").write_text("hello from the host\n")
    return tmp_path


def _exec(script_dir: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return ortweb("exec", str(script_dir / "app.py"), "--providers", "wasm",
                  "--file", str(script_dir / "model.onnx"), "--file",
                  str(script_dir / "data.txt"), *extra)


def test_exec_runs_script_with_files_argv_and_sync_api(script_dir):
    result = _exec(script_dir, "--", "a", "b c")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "argv ['a', 'b c']" in result.stdout
    assert "file hello from the host" in result.stdout
    assert "provider wasm" in result.stdout
    assert "double [[2.0, 0.0], [0.0, 2.0]]" in result.stdout


def test_exec_exception_exits_1_with_traceback(script_dir):
    result = _exec(script_dir, "--", "--fail")
    assert result.returncode == 1
    assert "RuntimeError: exploded on purpose" in result.stderr
    # The traceback points at the user's script and its lines, not at the runner.
    assert 'File "app.py", line 16' in result.stderr, result.stderr
    assert "exec_script" not in result.stderr


def test_exec_sys_exit_status(script_dir):
    result = _exec(script_dir, "--", "--exit")
    assert result.returncode == 3, result.stdout + result.stderr


IMPORTS_SCRIPT = '''
import micropip
import PIL
import scipy
from scipy import linalg

print("scipy", scipy.__version__, "PIL", PIL.__version__, "micropip", micropip.__version__)
print("det", round(float(linalg.det([[2.0, 1.0], [1.0, 3.0]])), 6))
try:
    import cv2
except ModuleNotFoundError as exc:
    print("cv2:", exc)
try:
    await micropip.install("regex")
except ValueError as exc:
    print("micropip:", exc)
'''

BLOCKED = "the page tried to reach"


def test_exec_loads_the_scripts_pyodide_imports_and_stays_offline(tmp_path):
    (tmp_path / "imports.py").write_text(IMPORTS_SCRIPT)
    result = ortweb("exec", str(tmp_path / "imports.py"))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "scipy 1.14.1 PIL 10.2.0 micropip 0.9.0" in result.stdout
    assert "det 5.0" in result.stdout
    # opencv-python is in Pyodide's lock but not obtainable here: its import says so.
    assert ("cv2: No module named 'cv2': it comes from the Pyodide package 'opencv-python', "
            "which is not available offline") in result.stdout
    # micropip has no index: a package that is not here fails at once, no request made.
    assert "micropip: Can't fetch metadata for 'regex'" in result.stdout
    assert BLOCKED not in result.stderr, result.stderr


WHEEL_SCRIPT = '''
import importlib.metadata as md
import sys

import tinypkg

print("doubled", tinypkg.doubled(4))
print("versions", md.version("tinypkg"), md.version("tinydep"), md.version("ortweb"))
print("scipy installed", md.version("scipy"))
print("argv", sys.argv[1:])
'''


def test_exec_installs_wheels_offline_before_the_script(tmp_path):
    pkg, _dep = tiny_wheels(tmp_path / "dist")
    (tmp_path / "app.py").write_text(WHEEL_SCRIPT)
    # --requirements: a wheel path (relative to the file) and a spec the lock meets.
    (tmp_path / "requirements.txt").write_text(
        "# the dependency of tinypkg, as a file\ndist/tinydep-1.0-py3-none-any.whl\n"
        "scipy>=1.10  # from the offline Pyodide packages\n")
    result = ortweb("exec", str(tmp_path / "app.py"), "--wheel", str(pkg),
                    "--requirements", str(tmp_path / "requirements.txt"), "--", "x")
    assert result.returncode == 0, result.stdout + result.stderr
    # micropip's own chatter stays off the script's stdout.
    assert result.stdout.splitlines() == [
        "doubled [0, 2, 4, 6]",
        f"versions 0.1 1.0 {ortweb_version}",
        "scipy installed 1.14.1",
        "argv ['x']",
    ], result.stdout + result.stderr
    assert BLOCKED not in result.stderr, result.stderr


def test_exec_requirement_not_available_offline_fails_before_the_script(tmp_path):
    bad = make_wheel(tmp_path, "needsmore", "0.1",
                     ["numpy", "regex", "opencv-python>=4", "nosuchthing", "scipy<1"])
    (tmp_path / "app.py").write_text('print("THE SCRIPT RAN")\n')
    result = ortweb("exec", str(tmp_path / "app.py"), "--wheel", str(bad))
    assert result.returncode == 1, result.stdout + result.stderr
    assert "THE SCRIPT RAN" not in result.stdout
    err = result.stderr
    assert "cannot be installed offline" in err and "(nothing of app.py ran)" in err
    assert "'regex' (required by needsmore 0.1" in err and "'regex' is not available offline" in err
    assert "'opencv-python>=4'" in err and "'opencv-python' is not available offline" in err
    assert "'nosuchthing' is neither an offline Pyodide package nor one of the --wheel files" in err
    assert "Pyodide package scipy 1.14.1 does not satisfy <1" in err
    assert "'numpy'" not in err  # met by the lock
    assert BLOCKED not in err
    # A requirements file with a pip option is refused with its line.
    (tmp_path / "req.txt").write_text("numpy\n--index-url https://pypi.org/simple\n")
    result = ortweb("exec", str(tmp_path / "app.py"), "--requirements", str(tmp_path / "req.txt"))
    assert result.returncode == 1 and "req.txt:2: pip option" in result.stderr, result.stderr


def _lock_has_onnxruntime() -> bool:
    lock = json.loads((find_assets().pyodide / "pyodide-lock.json").read_text())
    return "onnxruntime" in lock["packages"]


def test_exec_wheel_requiring_onnxruntime_gets_the_drop_in(tmp_path):
    if not _lock_has_onnxruntime():
        pytest.skip("build/pyodide/pyodide-lock.json has no 'onnxruntime' entry yet: the "
                    "drop-in onnxruntime wheel (build.py build_browser_wheel) is not built")
    wheel = make_wheel(tmp_path, "usesort", "0.1", ["onnxruntime>=1.30", "numpy"],
                       "import onnxruntime\nVERSION = onnxruntime.__version__\n")
    (tmp_path / "app.py").write_text("import usesort\nprint('ort', usesort.VERSION)\n")
    result = ortweb("exec", str(tmp_path / "app.py"), "--wheel", str(wheel))
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"ort {ORT_WEB}" in result.stdout
    assert BLOCKED not in result.stderr


def test_exec_page_crashing_during_the_install_is_retried_once(
        tmp_path, monkeypatch, capsys):
    """A page that crashes while the wheels install (nothing of the script has run) is
    replaced once, and said so; a second crash ends the run with status 1, named."""
    from ortweb.cli import main as ortweb_main
    from ortweb.host.browser import PyodidePage

    wheel = make_wheel(tmp_path, "plainpkg", "0.1", [], "VALUE = 5\n")
    (tmp_path / "app.py").write_text("import plainpkg\nprint('value', plainpkg.VALUE)\n")
    real = PyodidePage.install_wheels
    crashes = {"left": 1}

    def crash_first(self, *args, **kwargs):
        if crashes["left"]:
            crashes["left"] -= 1
            try:  # a real renderer crash, as Chromium has them
                self.page.goto("chrome://crash", timeout=5000)
            except Exception:
                pass
        return real(self, *args, **kwargs)

    monkeypatch.setattr(PyodidePage, "install_wheels", crash_first)
    argv = ["exec", str(tmp_path / "app.py"), "--wheel", str(wheel), "--providers", "wasm"]
    assert ortweb_main(argv) == 0
    out, err = capsys.readouterr()
    assert "value 5" in out
    assert ("ortweb exec: the page failed while installing the wheels (the page crashed); "
            "nothing of app.py ran; trying once more on a new page, in a new browser") in err

    crashes["left"] = 2
    assert ortweb_main(argv) == 1
    out, err = capsys.readouterr()
    assert "value 5" not in out
    assert err.count("the page failed while installing the wheels (the page crashed)") == 2
    assert err.strip().endswith("nothing of app.py ran")


def test_run_page_crashing_is_run_again_once(tmp_path, monkeypatch, capsys):
    """ortweb run on a page that crashes runs once more on a new page in a new browser,
    saying so, with the same answer; a second crash ends it with status 1, named."""
    from ortweb.cli import main as ortweb_main
    from ortweb.host.browser import PyodidePage

    model = tmp_path / "int64.onnx"
    model.write_bytes(samples.int64_model())
    feeds = {"ids": np.array([4, 0, 7], np.int64),
             "table": np.arange(30, dtype=np.float32).reshape(10, 3)}
    save_npz(tmp_path / "in.npz", feeds)
    real = PyodidePage.run_json
    crashes = {"left": 1}

    def crash_first(self, code, *args, **kwargs):
        if crashes["left"] and "ORTWEB_ARGS" in code:
            crashes["left"] -= 1
            try:  # a real renderer crash, as Chromium has them
                self.page.goto("chrome://crash", timeout=5000)
            except Exception:
                pass
        return real(self, code, *args, **kwargs)

    monkeypatch.setattr(PyodidePage, "run_json", crash_first)
    argv = ["run", str(model), "-i", str(tmp_path / "in.npz"), "--providers", "wasm",
            "--compare-native", "--json"]
    assert ortweb_main(argv) == 0
    out, err = capsys.readouterr()
    assert "ortweb run: the page crashed; running once more on a new page, in a new browser" in err
    report = json.loads(out)
    assert report["ok"] and [c["ok"] for c in report["compare_native"]] == [True, True, True]

    crashes["left"] = 2
    assert ortweb_main(argv) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err.count("ortweb run: the page crashed") == 2
    assert err.strip().endswith("ortweb run: the page crashed")


def test_demo(tmp_path: Path):
    result = ortweb("demo", "--out", str(tmp_path / "site"))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "demo: OK" in result.stdout
    assert "provider wasm" in result.stdout and "provider webgpu" in result.stdout
    # The first visit on an emulated link beside loopback (issue 30), for each site: what
    # the page downloaded before it was ready, as its manifest says (not what the
    # service worker fetches afterwards for later visits).
    measured = re.findall(r"first visit: ([\d.]+) MB compressed; first result [\d.]+ s on a "
                          r"50 Mbit/s, 20 ms link \(Chromium's emulation\), [\d.]+ s over "
                          r"loopback", result.stdout)
    assert len(measured) == 1, result.stdout  # the worker site's, the one people get
    assert ("first visit on a 50 Mbit/s, 20 ms link: not measured (timed on the worker site "
            "only)") in result.stdout
    manifest = json.loads((tmp_path / "site" / "ortweb-manifest.json").read_text())
    said = manifest["first_visit"]["br"] / 1e6
    assert said * 0.9 <= float(measured[0]) <= said * 1.1 + 0.1, (measured, said)
