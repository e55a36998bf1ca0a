"""How outputs compare with a reference's: native onnxruntime's on the host
(``ortweb run --compare-native``), or a reference engine's in the page
(``ProviderPolicy(verify=...)``)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

__all__ = ["Comparison", "compare"]


@dataclass
class Comparison:
    """How one output compares with the reference's (native onnxruntime's, or a
    reference engine's)."""

    name: str
    dtype: str
    shape: list[int]
    ok: bool
    max_abs: float | None = None
    max_rel: float | None = None
    #: The worst ``|got - native| / (atol + rtol * |native|)`` over the elements
    #: (floats only): at most 1 passes. Unlike ``max_rel`` it stays meaningful
    #: where native's value is ~0 (there ``max_rel`` can read 1e+300).
    tolerance_used: float | None = None
    mismatched: int = 0
    problem: str = ""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _as_comparable(a: np.ndarray) -> np.ndarray:
    return np.asarray(a.tolist(), dtype=str) if a.dtype.kind in "OU" else a


def compare(
    name: str, got: np.ndarray, want: np.ndarray, rtol: float = 1e-3, atol: float = 1e-5,
    reference: str = "native",
) -> Comparison:
    """Compare ``got`` (browser) with ``want`` (the reference's: ``reference`` names it in
    the problem said).

    Floats pass when ``|got - want| <= atol + rtol * |want|`` element-wise, NaNs
    in the same places; everything else must be equal.
    """
    result = Comparison(name, str(got.dtype), list(got.shape), ok=True)
    if got.shape != want.shape:
        result.ok = False
        result.problem = f"shape {list(got.shape)} != {reference} {list(want.shape)}"
        return result
    g, w = _as_comparable(got), _as_comparable(want)
    if g.dtype.kind != w.dtype.kind or (g.dtype.kind not in "U" and g.dtype != w.dtype):
        result.ok = False
        result.problem = f"dtype {got.dtype} != {reference} {want.dtype}"
        return result
    if g.dtype.kind == "f":
        g64, w64 = g.astype(np.float64), w.astype(np.float64)
        same = (np.isnan(g64) & np.isnan(w64)) | (g64 == w64)
        finite = np.isfinite(g64) & np.isfinite(w64)
        with np.errstate(invalid="ignore", over="ignore"):
            diff = np.where(same, 0.0, np.abs(g64 - w64))
            rel = diff / np.maximum(np.abs(w64), np.finfo(np.float64).tiny)
            # Infinities and NaNs must match exactly (`same`): a tolerance scaled by
            # an infinite reference would accept anything.
            allowed = atol + rtol * np.abs(w64)
            bad = ~same & ~(finite & (diff <= allowed))
            used = np.where(same, 0.0, np.where(finite, diff / allowed, np.inf))
        diff = np.where(np.isnan(diff), np.inf, diff)
        used = np.where(np.isnan(used), np.inf, used)
        rel = np.where(np.isnan(rel), np.inf, rel)
        result.max_abs = float(diff.max()) if diff.size else 0.0
        result.max_rel = float(np.where(diff == 0, 0.0, rel).max()) if diff.size else 0.0
        result.mismatched = int(np.count_nonzero(bad))
        result.tolerance_used = float(used.max()) if used.size else 0.0
        if result.mismatched:
            at = np.unravel_index(int(np.argmax(used)), used.shape)
            result.problem = (
                f"{result.mismatched} of {got.size} elements differ; worst at "
                f"{list(map(int, at))}: {g64[at]:.6g} vs {reference} {w64[at]:.6g} "
                f"(|diff| {diff[at]:.3g} > allowed {atol:g} + {rtol:g} * |{reference}|)"
            )
    else:
        result.mismatched = int(np.count_nonzero(g != w))
        if g.dtype.kind in "iub":
            diff = np.abs(g.astype(np.float64) - w.astype(np.float64))
            result.max_abs = float(diff.max()) if diff.size else 0.0
    result.ok = result.mismatched == 0
    if not result.ok and not result.problem:
        result.problem = f"{result.mismatched} of {got.size} elements differ"
    return result
