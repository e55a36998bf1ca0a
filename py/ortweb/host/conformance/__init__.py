"""Conformance: the ONNX backend test suite through ortweb in the browser, vs native onnxruntime.

- :mod:`.cases` — the cases as data (model bytes, inputs, expected outputs,
  tolerances), from the installed ``onnx`` package; nothing here runs a model.
  :mod:`.protos` reads and writes their protobufs, :mod:`.node_cache` writes the
  generated node cases once.
- :mod:`.classify` — sorting each case into ``pass`` / ``fail`` /
  ``native-fails`` / ``unsupported``: :mod:`.compare` compares outputs with the
  backend tests' rule, :mod:`.reasons` reads what ORT-web's errors name.
- :mod:`.runner` — native onnxruntime on the host, and the whole run per EP.
- :mod:`.pages` — batches of cases through ortweb's Python API inside Pyodide
  pages, with crashed or hung pages replaced.
- :mod:`.report` — summary lines, per-case JSON and the known-failures file.
"""

from __future__ import annotations

from .cases import SUITES, Case, load_cases
from .classify import Outcome, Status
from .report import KnownFailures, summary_line
from .runner import CaseResult, run_conformance

__all__ = [
    "SUITES",
    "Case",
    "CaseResult",
    "KnownFailures",
    "Outcome",
    "Status",
    "load_cases",
    "run_conformance",
    "summary_line",
]
