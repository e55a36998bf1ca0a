"""Every code sample of the README and the docs runs, as its page says it runs.

A sample says how with an HTML comment just above it:

``<!-- sample: browser -->``
    Python run inside Pyodide on the shared test page (``ortweb_page``), with
    ``model.onnx`` (input ``x``, float32 ``["batch", 4]``, output ``y = 2x + 1``) in
    its working directory, ``ORTWEB_MODEL`` naming it, ``m = "model.onnx"`` and
    ``x = np.ones((2, 4), np.float32)`` defined.
``<!-- sample: pytest -->``
    A test file run by pytest in a subprocess with ortweb's plugin; every test in
    it must pass.
``<!-- sample: cli -->``
    Shell commands run one by one in a folder that holds ``model.onnx``, with the
    project's ``.venv/bin`` first on ``PATH``.
``<!-- skip: next "reason" -->``
    Not run, for the reason given (sybil's spelling), reported as skipped.

The blocks are found with sybil's Markdown lexer.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from onnx import TensorProto, helper
from sybil import Document
from sybil.parsers.markdown.lexers import FencedCodeBlockLexer

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[1]
SOURCES = [ROOT / "README.md", *sorted((ROOT / "docs" / "pages").rglob("*.md"))]
KINDS = ("browser", "pytest", "cli")
#: What a browser sample may use without defining it (see the module docstring).
BROWSER_SETUP = ('import os, numpy as np; os.environ["ORTWEB_MODEL"] = "model.onnx"; '
                 'm = "model.onnx"; x = np.ones((2, 4), np.float32)')


_DIRECTIVE = re.compile(r"<!-- (sample|skip): (.*?) -->\s*\Z")


@dataclass(frozen=True)
class Sample:
    path: Path
    line: int  # of the sample's first line of code
    language: str
    code: str
    kind: str | None  # one of KINDS, "skip", or None when the page does not say
    reason: str = ""

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def _samples(path: Path) -> list[Sample]:
    text = path.read_text()
    document = Document(text, str(path))
    found = []
    for block in FencedCodeBlockLexer("python|sh")(document):
        line = text.count("\n", 0, block.start) + 2
        # The comment right above the block (indented too, inside a list item).
        directive = _DIRECTIVE.search(text, 0, block.start)
        kind, reason = None, ""
        if directive is not None:
            kind, arguments = directive.group(1), directive.group(2)
            if kind == "skip":
                quoted = re.fullmatch(r'next "(.+)"', arguments)
                reason = quoted.group(1) if quoted else ""
            else:
                kind = arguments
        found.append(Sample(path, line, str(block.lexemes["language"]),
                            str(block.lexemes["source"]), kind, reason))
    return found


SAMPLES = [s for path in SOURCES for s in _samples(path)]


def _model() -> bytes:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4])
    nodes = [helper.make_node("Mul", ["x", "two"], ["t"]),
             helper.make_node("Add", ["t", "one"], ["y"])]
    inits = [helper.make_tensor("two", TensorProto.FLOAT, [], [2.0]),
             helper.make_tensor("one", TensorProto.FLOAT, [], [1.0])]
    graph = helper.make_graph(nodes, "sample", [x], [y], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                             ir_version=8).SerializeToString()


def test_every_sample_says_how_it_runs() -> None:
    assert len(SAMPLES) >= 10
    unsaid = [s.where for s in SAMPLES if s.kind not in (*KINDS, "skip")]
    assert not unsaid, ("samples without <!-- sample: browser|pytest|cli --> or "
                        f"<!-- skip: next \"reason\" --> above them: {unsaid}")
    unexplained = [s.where for s in SAMPLES if s.kind == "skip" and not s.reason]
    assert not unexplained, f"skipped samples must say why: {unexplained}"
    assert all(s.language == "python" for s in SAMPLES if s.kind in ("browser", "pytest"))


def _param(sample: Sample):
    marks = [pytest.mark.browser] if sample.kind in ("browser", "pytest", "cli") else []
    return pytest.param(sample, id=sample.where, marks=marks)


RUN = [_param(s) for s in SAMPLES if s.kind in (*KINDS, "skip")]


@pytest.mark.parametrize("sample", RUN)
def test_sample_runs(sample: Sample, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    if sample.kind == "skip":
        pytest.skip(sample.reason)
    if sample.kind == "browser":
        page = request.getfixturevalue("ortweb_page")
        page.put_file("model.onnx", _model())
        # Padded so that a traceback's line is the sample's line in its page.
        code = BROWSER_SETUP + "\n" * (sample.line - 1) + sample.code
        page.run_python(code, filename=str(sample.path.relative_to(ROOT)))
    elif sample.kind == "pytest":
        pytester = request.getfixturevalue("pytester")
        pytester.makepyfile(test_sample=sample.code)
        result = pytester.runpytest_subprocess("-p", "no:cacheprovider", timeout=600)
        outcomes = result.parseoutcomes()
        assert outcomes.get("passed", 0) >= 1 and not outcomes.get("failed"), (
            f"{sample.where}: " + "\n".join(result.outlines[-30:]))
    else:
        (tmp_path / "model.onnx").write_bytes(_model())
        env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
        for command in sample.code.splitlines():
            command = command.split(" #", 1)[0].strip()
            if not command:
                continue
            done = subprocess.run(shlex.split(command), cwd=tmp_path, env=env,
                                  capture_output=True, text=True, timeout=600)
            assert done.returncode == 0, (f"{sample.where}: `{command}` exited "
                                          f"{done.returncode}:\n{done.stdout}\n{done.stderr}")
