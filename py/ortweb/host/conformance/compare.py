"""Comparing outputs with the expected ones the way the ONNX backend tests do.

``numpy.testing.assert_allclose``'s rule with NaNs equal, integers exact, strings
exact; sequences, optionals and maps element by element.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .cases import Case

__all__ = ["Comparison", "compare_outputs", "compare_values"]


@dataclass
class Comparison:
    """Outputs vs the expected ones: the verdict and the largest errors seen."""

    ok: bool
    max_abs: float | None = None
    max_rel: float | None = None
    problem: str = ""

    def merge(self, other: Comparison, where: str) -> None:
        if other.max_abs is not None:
            self.max_abs = max(self.max_abs or 0.0, other.max_abs)
        if other.max_rel is not None:
            self.max_rel = max(self.max_rel or 0.0, other.max_rel)
        if not other.ok and self.ok:
            self.ok = False
            self.problem = f"{where}: {other.problem}"


def _float64(a: np.ndarray) -> np.ndarray:
    return np.asarray(a).astype(np.float64)


def _compare_tensor(got: Any, want: np.ndarray, rtol: float, atol: float) -> Comparison:
    if not isinstance(got, np.ndarray):
        return Comparison(False, problem=f"expected a tensor, got {type(got).__name__}")
    if got.shape != want.shape:
        return Comparison(False, problem=f"shape {list(got.shape)} != expected {list(want.shape)}")
    if want.dtype.kind == "O":
        # Strings compare exactly, as numpy.testing.assert_array_equal does.
        g = np.asarray([v.decode() if isinstance(v, bytes) else str(v)
                        for v in got.reshape(-1).tolist()], dtype=object)
        w = np.asarray([v.decode() if isinstance(v, bytes) else str(v)
                        for v in want.reshape(-1).tolist()], dtype=object)
        bad = int(np.count_nonzero(g != w)) if g.size else 0
        return Comparison(bad == 0, problem=f"{bad} of {want.size} strings differ" if bad else "")
    if got.dtype != want.dtype:
        return Comparison(False, problem=f"dtype {got.dtype} != expected {want.dtype}")
    if want.size == 0:
        return Comparison(True, 0.0, 0.0)
    try:
        g, w = _float64(got), _float64(want)
    except (TypeError, ValueError) as exc:
        return Comparison(False, problem=f"cannot compare dtype {want.dtype}: {exc}")
    integral = want.dtype.kind in "iub"
    if integral:
        # float64 cannot tell 2**62 from 2**62 + 1: integers are equal only when
        # exactly equal, and distinct integers are at least 1 apart.
        same = np.asarray(got == want)
    else:
        same = (np.isnan(g) & np.isnan(w)) | (g == w)
    with np.errstate(invalid="ignore", over="ignore"):
        diff = np.where(same, 0.0, np.abs(g - w))
        if integral:
            diff = np.where(same, 0.0, np.maximum(diff, 1.0))
        # numpy.testing.assert_allclose: |got - want| <= atol + rtol * |want|, NaNs
        # equal; an infinity matches only itself.
        close = same | (np.isfinite(g) & np.isfinite(w) & (diff <= atol + rtol * np.abs(w)))
        rel = np.where(diff == 0, 0.0, diff / np.maximum(np.abs(w), np.finfo(np.float64).tiny))
    diff = np.where(np.isnan(diff), np.inf, diff)
    rel = np.where(np.isnan(rel), np.inf, rel)
    bad = int(np.count_nonzero(~close))
    return Comparison(
        bad == 0, float(diff.max()), float(rel.max()),
        f"{bad} of {want.size} elements differ beyond rtol={rtol:g}, atol={atol:g} "
        f"(max abs {float(diff.max()):.3g}, max rel {float(rel.max()):.3g})" if bad else "",
    )


def compare_values(got: Any, want: Any, rtol: float, atol: float) -> Comparison:
    """Compare outputs with expected ones as onnx's ``Runner.assert_similar_outputs``.

    Lists (sequences) compare element-wise, ``None`` (an empty optional) only
    matches ``None``, string tensors exactly, other tensors by shape, dtype and
    ``numpy.testing.assert_allclose(rtol, atol)``.
    """
    if isinstance(want, list | tuple):
        if not isinstance(got, list | tuple):
            return Comparison(False, problem=f"expected a sequence, got {type(got).__name__}")
        if len(got) != len(want):
            return Comparison(False, problem=f"{len(got)} values, expected {len(want)}")
        result = Comparison(True)
        for i, (g, w) in enumerate(zip(got, want, strict=True)):
            result.merge(compare_values(g, w, rtol, atol), f"[{i}]")
        return result
    if want is None:
        ok = got is None
        return Comparison(ok, problem="" if ok else f"expected None, got {type(got).__name__}")
    if isinstance(want, dict):
        ok = isinstance(got, dict) and set(got) == set(want)
        if not ok:
            return Comparison(False, problem="map keys differ")
        result = Comparison(True)
        for k in want:
            result.merge(compare_values(got[k], want[k], rtol, atol), f"[{k!r}]")
        return result
    return _compare_tensor(got, np.asarray(want), rtol, atol)


def compare_outputs(case: Case, outputs: list[Any]) -> Comparison:
    """All of a run's outputs vs the case's expected ones."""
    if len(outputs) != len(case.expected):
        return Comparison(False, problem=f"{len(outputs)} outputs, expected {len(case.expected)}")
    result = Comparison(True)
    for info, got, want in zip(case.outputs, outputs, case.expected, strict=False):
        result.merge(compare_values(got, want, case.rtol, case.atol), f"output {info.name!r}")
    return result
