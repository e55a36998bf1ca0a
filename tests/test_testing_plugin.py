"""ortweb.testing, the pytest plugin, tested on itself.

The browser tests run pytest in a subprocess (``pytester``) on a throw-away project
that is not ortweb: its own package, its own model, ortweb installed. Each inner run
starts its own Chromium, so the scenarios are grouped into few runs. The host-only
tests check the pieces that need no browser: shipping a function, pickling with
raw buffers, and the assertion helpers against pytest's own.
"""

from __future__ import annotations

import ast
import pickle
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ortweb.host.browser import find_chromium
from ortweb.testing import _inpage, run_in_browser, samples
from ortweb.testing._remote import _explain, rebuild
from ortweb.testing._shipping import INLINE_LIMIT, dumps, ship_function
from wheelmaker import make_wheel, tiny_wheels

pytest_plugins = ["pytester"]

# -- host-only pieces ----------------------------------------------------------------


def _sample(a, b):  # the function shipped below; its asserts get rewritten
    assert a == b
    return a


def test_first_parameter_must_be_the_page() -> None:
    with pytest.raises(TypeError, match=r"first parameter .* must be 'ortweb_page'"):
        run_in_browser(lambda page, x: x)


def test_shipped_function_keeps_host_lines_and_rewrites_asserts() -> None:
    shipped = ship_function(_sample)
    module = pickle.loads(shipped.module)
    func = next(n for n in module.body if isinstance(n, ast.FunctionDef))
    assert func.name == "_sample" and func.decorator_list == []
    # Line numbers are the host file's, so the page's tracebacks point at them.
    assert func.lineno == _sample.__code__.co_firstlineno
    helpers = [a.name for n in module.body if isinstance(n, ast.Import) for a in n.names]
    assert "_ortweb_testing" in helpers and "_pytest.assertion.rewrite" not in helpers
    assert not any(isinstance(n, ast.Assert) for n in ast.walk(module))
    imported = [ast.unparse(m) for m in pickle.loads(shipped.imports)]
    assert "import numpy as np" in imported and "import pytest" in imported
    assert not any("__future__" in text for text in imported)
    plain = pickle.loads(ship_function(_sample, rewrite=False).module)
    assert any(isinstance(n, ast.Assert) for n in ast.walk(plain))


def test_rewritten_assert_explains_with_pytest_on_the_host(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Run the shipped AST here, with the page's helpers, as the page would."""
    monkeypatch.setitem(sys.modules, "_ortweb_testing", _inpage)
    shipped = ship_function(_sample)
    namespace: dict = {}
    exec(compile(pickle.loads(shipped.module), shipped.filename, "exec"), namespace)
    _inpage._state["compares"] = []
    assert namespace["_sample"](3, 3) == 3
    with pytest.raises(AssertionError) as info:
        namespace["_sample"]([1, 2, 3], [1, 2, 4])
    message = str(info.value)
    assert message.startswith("assert [1, 2, 3] == [1, 2, 4]")
    assert _inpage.COMPARE_MARK.format(0) in message
    (op, left, right), = _inpage._state["compares"]

    def explain(op, left, right):
        return ["At index 2 diff: 3 != 4"]  # the lines after the summary

    assert (op, left, right) == ("==", [1, 2, 3], [1, 2, 4])
    text = _explain(message, [(op, left, right)], explain)
    assert text.splitlines() == ["assert [1, 2, 3] == [1, 2, 4]", "  At index 2 diff: 3 != 4"]
    # Compiled from the host file's AST: the failing line is the host's.
    tb = info.value.__traceback__
    assert tb is not None
    while tb.tb_next is not None:
        tb = tb.tb_next
    assert tb.tb_frame.f_code.co_filename == shipped.filename == str(Path(__file__).resolve())
    assert tb.tb_lineno == _sample.__code__.co_firstlineno + 1


@pytest.mark.parametrize("text", [
    "assert %(py0)s == %(py2)s\n{%(py0)s = f()\n}",
    "assert 1\n{1 = g(\n{2 = h()\n}\n}\n~detail\n~more",
    "x\ny\n~a\n>b",
])
def test_page_format_explanation_matches_pytest(text: str) -> None:
    from _pytest.assertion.util import format_explanation

    assert _inpage._format_explanation(text) == format_explanation(text)


def test_large_buffers_leave_the_pickle() -> None:
    big = np.arange(INLINE_LIMIT // 4 + 10, dtype=np.float32)
    small = np.arange(10, dtype=np.float32)
    data, buffers = dumps({"big": big, "small": small}, "x")
    assert len(buffers) == 1 and buffers[0].nbytes == big.nbytes
    assert len(data) < 4096
    back = pickle.loads(data, buffers=[bytearray(b) for b in buffers])
    np.testing.assert_array_equal(back["big"], big)
    np.testing.assert_array_equal(back["small"], small)
    assert back["big"].flags.writeable
    with pytest.raises(TypeError, match=r"the argument 'f'.*cannot be pickled"):
        dumps(lambda: 1, "the argument 'f'")


def test_rebuilt_exception_points_at_the_page_frames(tmp_path: Path) -> None:
    source = tmp_path / "mod.py"
    source.write_text("def f():\n    x = 1\n    raise KeyError(x)\n")
    desc: dict[str, Any] = {
        "module": "pyodide.ffi", "qualname": "JsException", "message": "Error: nope",
        "pickled": None, "name": None, "cause": None, "context": None,
        "suppress_context": False,
        "frames": [{"filename": str(source), "lineno": 3, "name": "f", "firstlineno": 1,
                    "locals": {"x": "1"}}],
    }
    exc = rebuild(desc, lambda f, n, first: (f, first))
    assert type(exc).__name__ == "JsException" and type(exc).__module__ == "pyodide.ffi"
    assert isinstance(exc, Exception) and str(exc) == "Error: nope"
    tb = exc.__traceback__
    assert tb is not None and tb.tb_lineno == 3
    assert tb.tb_frame.f_code.co_filename == str(source) and tb.tb_frame.f_code.co_name == "f"
    assert repr(tb.tb_frame.f_locals["x"]) == "1"
    # KeyboardInterrupt from the page must never stop pytest on the host.
    desc.update(module="builtins", qualname="KeyboardInterrupt",
                pickled=pickle.dumps(KeyboardInterrupt()))
    assert isinstance(rebuild(desc, lambda f, n, first: (f, first)), Exception)


# -- in the browser, through pytester ------------------------------------------------

_PACKAGE = '''
"""The throw-away project's own code, installed in the page by ortweb_packages."""
import numpy as np


def expected(x):
    return np.asarray(x, np.float32) * 2


def explode(n):
    if n > 1:
        raise RuntimeError(f"explode({n})")
    return n
'''

_PROJECT_TESTS = '''
from pathlib import Path

import numpy as np
import pytest

from ortweb.testing import run_in_browser


@pytest.fixture
def model_path(ortweb_page):
    return ortweb_page.put_file("model.onnx", Path(__file__).with_name("model.onnx"))


@pytest.fixture
def host_array():
    return np.arange(6, dtype=np.int64).reshape(2, 3)


@pytest.mark.parametrize("scale", [1, 3])
@run_in_browser
def test_passes(ortweb_page, host_array, scale):
    import sys
    import mypkg
    assert sys.platform == "emscripten"
    assert host_array.dtype == np.int64 and (host_array * scale).sum() == 15 * scale
    assert mypkg.explode(1) == 1


@run_in_browser
def test_fails_with_values(ortweb_page):
    a = [1, 2, 3]
    b = [1, 2, 4]
    print("printed-in-the-page")
    assert a == b  # LINE-ASSERT


@run_in_browser
def test_errors(ortweb_page):
    def inner(n):
        raise ValueError(f"boom {n}")  # LINE-RAISE
    inner(7)  # LINE-CALL


@run_in_browser
def test_error_in_own_package(ortweb_page):
    import mypkg
    mypkg.explode(5)


@run_in_browser
async def test_eps(ortweb_page, ortweb_providers, model_path):
    import mypkg
    import ortweb
    sess = await ortweb.InferenceSession.create(model_path)  # no providers named
    assert sess.provider == ortweb_providers
    x = np.array([[1, -2], [3.5, 0]], np.float32)
    (y,) = await sess.run_async(["double"], {"x": x})
    assert y.tolist() == mypkg.expected(x).tolist()
    await sess.close_async()


def test_run_python_keeps_globals_within_a_test(ortweb_page):
    ortweb_page.run_python("x = 41")
    assert ortweb_page.run_python("x + 1") == 42
    ortweb_page.run_python("print('from run_python')")
    assert ortweb_page.output() == "from run_python\\n"  # this test's output only


def test_next_test_starts_clean(ortweb_page):
    assert ortweb_page.run_python("'x' in globals()") is False
    # test_eps set the page's default providers; they were restored after it.
    assert ortweb_page.run_python("import ortweb; ortweb._bridge.default_providers()") is None
    assert ortweb_page.providers is None


@run_in_browser
def echo_scaled(ortweb_page, array, factor):
    return array * factor, str(array.dtype)


def test_large_arrays(ortweb_page):
    big = np.random.default_rng(0).standard_normal((1024, 1024))  # 8 MB: raw bytes path
    out, dtype = echo_scaled(ortweb_page, big, 2.0)
    assert dtype == "float64" and out.shape == big.shape
    np.testing.assert_array_equal(out, big * 2.0)
    out[0, 0] = 1.0  # writable on the host


@pytest.mark.ortweb_timeout(3)
@run_in_browser
def test_busy_loop_times_out(ortweb_page):
    n = 0
    while True:  # LINE-LOOP
        n += 1  # LINE-INCR


@run_in_browser
def test_page_still_works_after_interrupt(ortweb_page):
    assert sum(range(4)) == 6


@pytest.mark.ortweb_timeout(2)
@run_in_browser
async def test_stuck_await_times_out(ortweb_page):
    import js
    await js.Promise.new(lambda resolve, reject: None)


@run_in_browser
def test_fresh_page_after_stuck_test(ortweb_page):
    import os
    import mypkg
    import ortweb
    assert os.getcwd() == "/home/pyodide" and mypkg.explode(0) == 0
'''


def _line(source: str, tag: str) -> int:
    return next(i for i, text in enumerate(source.splitlines(), 1) if tag in text)


def _project(pytester: pytest.Pytester, tests: str, name: str = "test_project") -> str:
    package = pytester.mkpydir("mypkg")
    (package / "__init__.py").write_text(textwrap.dedent(_PACKAGE))
    (pytester.path / "model.onnx").write_bytes(samples.two_outputs_model())
    pytester.makeini("[pytest]\nortweb_packages = mypkg\n")
    written = pytester.makepyfile(**{name: textwrap.dedent(tests)})
    return written.read_text()  # as written (pytester strips leading blank lines)


@pytest.mark.browser
def test_plugin_end_to_end(pytester: pytest.Pytester) -> None:
    source = _project(pytester, _PROJECT_TESTS)
    result = pytester.runpytest_subprocess("-rA", "-p", "no:cacheprovider", timeout=900)
    out = result.stdout.str()
    passed = {line.split("::", 1)[1] for line in result.outlines if line.startswith("PASSED ")}
    skipped = [line for line in result.outlines if line.startswith("SKIPPED ")]
    failed = {line.split("::", 1)[1].split(" ")[0] for line in result.outlines
              if line.startswith("FAILED ")}
    assert {"test_passes[1]", "test_passes[3]", "test_eps[wasm]", "test_large_arrays",
            "test_run_python_keeps_globals_within_a_test", "test_next_test_starts_clean",
            "test_page_still_works_after_interrupt",
            "test_fresh_page_after_stuck_test"} <= passed, out
    assert failed == {"test_fails_with_values", "test_errors", "test_error_in_own_package",
                      "test_busy_loop_times_out", "test_stuck_await_times_out"}, out
    # The WebGPU run passes where the browser has an adapter, else skips saying why.
    assert "test_eps[webgpu]" in passed or any("no WebGPU adapter" in s for s in skipped), out

    # A failing assert shows both values and pytest's explanation, at the host line.
    result.stdout.fnmatch_lines([
        "*>       assert a == b  # LINE-ASSERT",
        "E       assert [[]1, 2, 3[]] == [[]1, 2, 4[]]",
        "E         At index 2 diff: 3 != 4",
        f"test_project.py:{_line(source, 'LINE-ASSERT')}: AssertionError",
    ])
    # The console of the failing test and a screenshot come with the report.
    result.stdout.fnmatch_lines(["*ortweb console (call)*", "[[]stdout[]] printed-in-the-page"])
    shots = [line for line in result.outlines if line.endswith("test_fails_with_values.png")]
    assert shots and Path(shots[0]).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", out
    # An exception's traceback goes through the page's frames, at host lines.
    result.stdout.fnmatch_lines([
        "*>       inner(7)  # LINE-CALL",
        f"test_project.py:{_line(source, 'LINE-CALL')}: ",
        "*>       raise ValueError(f\"boom {n}\")  # LINE-RAISE",
        "E       ValueError: boom 7",
        f"test_project.py:{_line(source, 'LINE-RAISE')}: ValueError",
    ])
    # Frames in the project's own package map back to its file on the host.
    result.stdout.fnmatch_lines([
        '*raise RuntimeError(f"explode({n})")',
        "E           RuntimeError: explode(5)",
        f"mypkg/__init__.py:{_line(textwrap.dedent(_PACKAGE), 'raise RuntimeError')}: RuntimeError",
    ])
    # A busy loop is interrupted where it is; a stuck await costs the page.
    loop = {_line(source, "LINE-LOOP"), _line(source, "LINE-INCR")}
    assert any(f"test_project.py:{n}: BrowserTimeout" in out for n in loop), out
    assert "ran past its 3 s timeout inside the browser" in out
    assert "still waiting (on JavaScript, or an await that never resolved) after its 2 s" in out


_WHEEL_TESTS = '''
from ortweb.testing import run_in_browser


@run_in_browser
def test_wheels_are_installed(ortweb_page):
    import importlib.metadata

    import tinypkg

    assert tinypkg.doubled(3) == [0, 2, 4]
    assert importlib.metadata.version("tinydep") == "1.0"
'''


@pytest.mark.browser
def test_ortweb_wheel_installs_wheels_in_every_page(pytester: pytest.Pytester) -> None:
    pkg, _dep = tiny_wheels(pytester.path / "dist")
    # One wheel from the ini file, one from the command line.
    pytester.makeini("[pytest]\nortweb_wheels = dist/tinydep-1.0-py3-none-any.whl\n")
    pytester.makepyfile(test_wheels=_WHEEL_TESTS)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--ortweb-wheel", str(pkg),
                                           timeout=600)
    result.assert_outcomes(passed=1)
    # A wheel whose requirement the page cannot meet offline: the page is never booted
    # and the error names it.
    bad = make_wheel(pytester.path / "bad", "needsregex", "0.1", ["regex"])
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--ortweb-wheel", str(bad),
                                           timeout=600)
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*'regex' (required by needsregex 0.1*is not available offline*"])


@pytest.mark.browser
def test_no_webgpu_adapter_skips_with_the_reason(pytester: pytest.Pytester) -> None:
    _project(pytester, '''
        import pytest
        from ortweb.testing import run_in_browser


        @pytest.mark.webgpu
        def test_needs_webgpu(ortweb_page):
            raise AssertionError("must have been skipped")


        @run_in_browser
        async def test_eps(ortweb_page, ortweb_providers, model_path):
            import ortweb
            assert ortweb_providers == "wasm"
            assert await ortweb.get_available_providers_async() == ["wasm", "tract"]
            sess = await ortweb.InferenceSession.create(model_path)
            assert sess.provider == "wasm"


        @pytest.fixture
        def model_path(ortweb_page):
            from pathlib import Path
            return ortweb_page.put_file("m.onnx", Path(__file__).with_name("model.onnx"))
    ''')
    result = pytester.runpytest_subprocess("-rs", "-p", "no:cacheprovider", "--ortweb-no-webgpu",
                                           "--ortweb-browser", find_chromium(), timeout=600)
    result.assert_outcomes(passed=1, skipped=2)
    reasons = [line for line in result.outlines if line.startswith("SKIPPED")]
    assert reasons and all("no WebGPU adapter: " in line for line in reasons), reasons
    # The probe's own words follow (why there is no adapter).
    assert all(len(line.split("no WebGPU adapter: ", 1)[1]) > 10 for line in reasons)


@pytest.mark.browser
def test_xdist_one_browser_per_worker(pytester: pytest.Pytester,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    record = pytester.path / "record"
    record.mkdir()
    monkeypatch.setenv("ORTWEB_TEST_RECORD", str(record))
    pytester.makepyfile(test_workers='''
        import os
        from pathlib import Path

        import pytest
        from ortweb.testing import run_in_browser


        @run_in_browser
        def square(ortweb_page, x):
            import sys
            assert sys.platform == "emscripten"
            return x * x


        @pytest.mark.parametrize("i", range(6))
        def test_square(ortweb_page, ortweb_server, ortweb_browser, browser, worker_id, i):
            assert browser is ortweb_browser
            assert square(ortweb_page, i) == i * i
            Path(os.environ["ORTWEB_TEST_RECORD"], f"{worker_id}-{i}").write_text(
                f"{ortweb_server.url} {os.getpid()} {ortweb_browser.version}")


        @run_in_browser
        def test_fails_on_a_worker(ortweb_page):
            print("console-from-a-worker")
            assert {"a": 1} == {"a": 2}
    ''')
    result = pytester.runpytest_subprocess("-n", "2", "-p", "no:cacheprovider", timeout=900)
    result.assert_outcomes(passed=6, failed=1)
    # The report, its values and its console section travel back from the worker.
    result.stdout.fnmatch_lines([
        "E       *assert {'a': 1} == {'a': 2}",  # pytest adds the class when the repr has quotes
        "E         Differing items:",
    ])
    result.stdout.fnmatch_lines(["*ortweb console (call)*", "[[]stdout[]] console-from-a-worker"])
    seen: dict[str, set[str]] = {}
    for file in record.iterdir():
        seen.setdefault(file.name.split("-")[0], set()).add(file.read_text())
    assert set(seen) == {"gw0", "gw1"}, seen
    # Within a worker: one server and one browser; across workers: different ones.
    assert all(len(v) == 1 for v in seen.values()), seen
    urls = {next(iter(v)).split()[0] for v in seen.values()}
    pids = {next(iter(v)).split()[1] for v in seen.values()}
    assert len(urls) == 2 and len(pids) == 2, seen


def test_ep_matrix_ids_and_option(pytester: pytest.Pytester) -> None:
    """Collection only (no browser): the ids, --ortweb-providers, and its errors."""
    pytester.makepyfile(test_ids='''
        import pytest


        def test_x(ortweb_providers):
            pass


        @pytest.mark.parametrize("ortweb_providers", ["wasm"])
        def test_chosen(ortweb_providers):
            pass


        def test_plain():
            pass
    ''')
    default = pytester.runpytest_subprocess("--collect-only", "-q", "-p", "no:cacheprovider")
    assert [line for line in default.outlines if "::" in line] == [
        "test_ids.py::test_x[webgpu]", "test_ids.py::test_x[wasm]",
        "test_ids.py::test_chosen[wasm]", "test_ids.py::test_plain",
    ]
    chosen = pytester.runpytest_subprocess("--collect-only", "-q", "-p", "no:cacheprovider",
                                           "--ortweb-providers", "CPUExecutionProvider")
    assert [line for line in chosen.outlines if "test_x" in line] == ["test_ids.py::test_x[wasm]"]
    bad = pytester.runpytest_subprocess("--collect-only", "-q", "-p", "no:cacheprovider",
                                        "--ortweb-providers", "cuda")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    assert "--ortweb-providers" in bad.stderr.str() and "'cuda'" in bad.stderr.str()
    # Without the plugin nothing parametrizes the EP.
    off = pytester.runpytest_subprocess("--collect-only", "-q", "-p", "no:ortweb")
    assert "test_ids.py::test_x" in off.outlines


def test_missing_browser_binary_is_a_clear_error(pytester: pytest.Pytester, tmp_path: Path
                                                  ) -> None:
    pytester.makepyfile(test_b="def test_b(ortweb_browser):\n    pass\n")
    missing = tmp_path / "no-such-chromium"
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--ortweb-browser",
                                           str(missing))
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines([f"*BrowserError: browser binary {missing} does not exist*"])


def test_markers_and_options_are_registered(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_subprocess("--markers")
    result.stdout.fnmatch_lines_random(["@pytest.mark.webgpu:*", "@pytest.mark.ortweb_timeout*"])
    helptext = pytester.runpytest_subprocess("--help").stdout.str()
    for option in ("--ortweb-browser", "--ortweb-providers", "--ortweb-no-webgpu",
                   "--ortweb-timeout", "--ortweb-wasm-tiers", "--ortweb-package",
                   "ortweb_packages", "--ortweb-wheel", "ortweb_wheels"):
        assert option in helptext


@pytest.mark.browser
def test_pages_run_on_the_baseline_wasm_tier_unless_told(pytester: pytest.Pytester,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    # The header names the tiers the browser was launched with (see test_launch for
    # what the renderers get).
    pytester.makepyfile(test_b="def test_b(ortweb_browser):\n    pass\n")
    monkeypatch.delenv("ORTWEB_WASM_TIERS", raising=False)
    plain = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    plain.assert_outcomes(passed=1)
    plain.stdout.fnmatch_lines(["ortweb: chromium *, wasm tiers: baseline"])
    told = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--ortweb-wasm-tiers", "all")
    told.assert_outcomes(passed=1)
    told.stdout.fnmatch_lines(["ortweb: chromium *, adapter: *"])
    assert "wasm tiers" not in told.stdout.str()
    monkeypatch.setenv("ORTWEB_WASM_TIERS", "all")
    assert "wasm tiers" not in pytester.runpytest_subprocess("-p", "no:cacheprovider").stdout.str()
    monkeypatch.setenv("ORTWEB_WASM_TIERS", "fast")
    bad = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    bad.stderr.fnmatch_lines(["*$ORTWEB_WASM_TIERS: expected one of 'all', 'baseline', "
                              "got 'fast'*"])


def test_plugin_module_loads_no_browser_machinery() -> None:
    """Any pytest run in this environment loads the plugin: it must stay light."""
    code = ("import sys, ortweb.testing.plugin; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('playwright', 'onnxruntime', 'onnx', 'greenlet')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"



# Each ``leave_*`` test leaves one kind of mess in the page; the ``check_*`` test after
# it must find a page as clean as a new one. Run in order, in one process (no xdist).
_MESS_TESTS = '''
import os
import sys

from ortweb.testing import run_in_browser


@run_in_browser
async def test_leave_a_session(ortweb_page, model_path):
    import ortweb

    sess = await ortweb.InferenceSession.create(model_path, providers=["wasm"])
    # Kept where the test's namespace cannot drop it.
    sys.modules["ortweb"]._left_behind = sess


@run_in_browser
def test_check_after_session(ortweb_page):
    from ortweb import _bridge

    assert _bridge.stats()["sessions"] == 0
    assert not hasattr(sys.modules["ortweb"], "_left_behind")


@run_in_browser
async def test_leave_a_gpu_buffer(ortweb_page):
    import js
    import ortweb

    device = await ortweb.webgpu_device_async()
    js.leftBuffer = device.createBuffer(js.Object.fromEntries([["size", 256], ["usage", 8]]))


@run_in_browser
async def test_check_after_gpu_buffer(ortweb_page):
    import js
    from ortweb import _bridge

    assert not hasattr(js, "leftBuffer")
    assert (await _bridge.settled_meters())["gpuBuffers"] == 0


@run_in_browser
def test_leave_a_patched_module(ortweb_page):
    import ortweb
    import os

    ortweb.get_available_providers = lambda: ["patched"]
    os.getpid = lambda: -1


@run_in_browser
def test_check_after_patched_module(ortweb_page):
    import ortweb

    assert ortweb.get_available_providers() != ["patched"]
    assert os.getpid() != -1


@run_in_browser
def test_leave_cwd_path_and_environ(ortweb_page):
    os.makedirs("/tmp/elsewhere", exist_ok=True)
    os.chdir("/tmp/elsewhere")
    sys.path.insert(0, "/tmp/elsewhere")
    os.environ["ORTWEB_LEFT"] = "1"


@run_in_browser
def test_check_after_cwd_path_and_environ(ortweb_page):
    assert os.getcwd() == "/home/pyodide"
    assert "/tmp/elsewhere" not in sys.path
    assert "ORTWEB_LEFT" not in os.environ
    # A module's files outlive a replaced page: the model is still there.
    assert os.path.isfile("/home/pyodide/mess.onnx")


def test_pages_replaced_only_for_what_reset_cannot_undo(ortweb_module_page):
    reasons = ortweb_module_page.discarded
    assert len(reasons) == 3, reasons
    assert "test_leave_a_session left 1 inference session(s) still open" in reasons[0]
    assert "test_leave_a_gpu_buffer left 1 GPU buffer(s) not destroyed" in reasons[1]
    assert "replaced or deleted: ortweb.get_available_providers" in reasons[2]
    assert "os.getpid" in reasons[2]
'''

_MESS_CONFTEST = '''
import pytest


@pytest.fixture(scope="module")
def model_path(ortweb_module_page):
    return ortweb_module_page.put_file("mess.onnx", open("model.onnx", "rb").read())
'''


@pytest.mark.browser
def test_a_test_that_leaves_a_mess_does_not_reach_the_next(pytester: pytest.Pytester) -> None:
    _project(pytester, _MESS_TESTS, "test_mess")
    pytester.makeconftest(_MESS_CONFTEST)
    result = pytester.runpytest_subprocess("-rA", "-p", "no:cacheprovider", "-p", "no:xdist",
                                           timeout=600)
    result.assert_outcomes(passed=9)
    result.stdout.fnmatch_lines(["*ortweb pages replaced (3)*"])


_SHARED_A = '''
import pytest
from ortweb.testing import run_in_browser


@run_in_browser
def test_leaves_a_file(ortweb_page):
    open("/tmp/left-by-a", "w").write("a")


def test_boots_one_page(ortweb_module_page):
    assert ortweb_module_page.boots == 1
'''

_SHARED_B = '''
import pytest
from ortweb.testing import run_in_browser


@run_in_browser
def left(ortweb_page):
    import os
    return os.path.exists("/tmp/left-by-a")


def test_another_module_gets_the_same_page(ortweb_page, ortweb_module_page):
    assert left(ortweb_page)
    assert ortweb_module_page.boots == 1


@pytest.mark.ortweb_fresh_page
def test_a_fresh_page_is_one_no_test_used(ortweb_page, ortweb_module_page):
    assert not left(ortweb_page)
    assert ortweb_module_page.boots == 2
    # Asked for, not a mess: nothing listed.
    assert ortweb_module_page.discarded == []
'''


@pytest.mark.browser
def test_modules_share_one_page_unless_a_test_asks_for_a_fresh_one(
        pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_shared_a=textwrap.dedent(_SHARED_A),
                        test_shared_b=textwrap.dedent(_SHARED_B))
    result = pytester.runpytest_subprocess("-rA", "-p", "no:cacheprovider", "-p", "no:xdist",
                                           timeout=600)
    result.assert_outcomes(passed=4)
    assert "ortweb pages replaced" not in result.stdout.str()


def _crash_boots(monkeypatch: pytest.MonkeyPatch, count: int) -> list[str]:
    """Crash the renderer (really, with chrome://crash) in the next ``count`` module-page
    boots, before any test's code; returns how each page had started."""
    from ortweb.host.browser import PyodidePage

    real = PyodidePage.run_python
    left = {"n": count}
    started: list[str] = []

    def crash(self: Any, code: str, *args: Any, **kwargs: Any) -> Any:
        if "_ortweb_testing.remember()" in code:  # the module page's boot
            started.append(self.booted_from)
            if left["n"]:
                left["n"] -= 1
                try:
                    self.page.goto("chrome://crash", timeout=5000)
                except Exception:
                    pass
        return real(self, code, *args, **kwargs)

    monkeypatch.setattr(PyodidePage, "run_python", crash)
    return started


def test_a_page_that_crashes_while_booting_boots_once_more(
        ortweb_runtime: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing of a test has run in a booting page, so a crash there costs a second boot
    (without the snapshot, listed in the run's summary), not the test."""
    from ortweb.host.browser import PageFailure
    from ortweb.testing._module_page import REPLACED, ModulePage

    started = _crash_boots(monkeypatch, 1)
    before = len(REPLACED)
    module_page = ModulePage(ortweb_runtime)
    try:
        assert module_page.page.run_json("import json\njson.dumps(6 * 7)") == 42
        assert module_page.boots == 1
        assert started == ["snapshot", "fresh"]
        assert len(REPLACED) == before + 1
        assert REPLACED[-1] == ("a page failed to boot (the page crashed); booted again "
                                "without the snapshot (nothing of a test had run)")
    finally:
        module_page.close()

    started = _crash_boots(monkeypatch, 2)
    module_page = ModulePage(ortweb_runtime)
    try:
        with pytest.raises(PageFailure, match="the page crashed"):
            _ = module_page.page
        assert module_page.boots == 0 and len(started) == 2
    finally:
        module_page.close()
