"""The reference: native onnxruntime on the host, and how outputs are compared."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from .._compare import Comparison, compare

__all__ = ["Comparison", "compare", "run_native"]


def run_native(
    model: bytes | str, feeds: Mapping[str, np.ndarray], threads: int = 1
) -> dict[str, np.ndarray]:
    """Run ``model`` (its bytes, or its path: a model with external data needs the
    path, to find its files) in native onnxruntime (CPU); returns outputs by name."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.log_severity_level = 3
    sess = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
    typed = {}
    for arg in sess.get_inputs():
        value = np.asarray(feeds[arg.name])
        # onnxruntime wants object arrays for tensor(string).
        typed[arg.name] = value.astype(object) if value.dtype.kind == "U" else value
    names = [o.name for o in sess.get_outputs()]
    return dict(zip(names, sess.run(names, typed), strict=True))


def compare_all(
    names: Sequence[str], got: Sequence[np.ndarray], want: Mapping[str, np.ndarray],
    rtol: float = 1e-3, atol: float = 1e-5,
) -> list[Comparison]:
    """Compare every browser output with the native output of the same name."""
    return [compare(n, g, want[n], rtol, atol) for n, g in zip(names, got, strict=True)]
