"""The node suite's cache: onnx's generated node cases, written once in its file layout.

``onnx.backend.test.case.node.collect_testcases()`` is slow, so its cases are
written once, as onnx's own ``backend-test-tools generate-data`` does
(``model.onnx`` + ``test_data_set_0/{input,output}_N.pb``), and read from there;
a case's ``data.json`` holds its tolerances where they are not the defaults.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import tempfile
import warnings
from pathlib import Path

import numpy as np

from .protos import serialize

__all__ = ["DEFAULT_ATOL", "DEFAULT_RTOL", "ensure_node_cache", "node_cache_dir"]

#: The backend tests' tolerances, for cases that do not set their own.
DEFAULT_RTOL = 1e-3
DEFAULT_ATOL = 1e-7


@functools.lru_cache(maxsize=1)
def node_cache_dir() -> Path:
    """Where the generated node cases live: ``build/conformance/node-onnx-<version>``.

    Under ``$ORTWEB_CONFORMANCE_CACHE`` when set, else under the ``build`` folder
    of ``$ORTWEB_HOME`` or of this checkout (as :func:`ortweb.host.build.assets.find_assets`,
    without the wheel refresh whose cost every call of it pays).
    """
    import onnx

    home = os.environ.get("ORTWEB_HOME")
    build = Path(home) / "build" if home else Path(__file__).resolve().parents[4] / "build"
    root = Path(os.environ.get("ORTWEB_CONFORMANCE_CACHE") or build)
    return root / "conformance" / f"node-onnx-{onnx.__version__}"


def ensure_node_cache() -> Path:
    """The generated node cases, written on first use (atomically, safe to race)."""
    target = node_cache_dir()
    if (target / "index.json").exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".node-", dir=target.parent))
    try:
        _write_node_cases(tmp)
        try:
            tmp.rename(target)
        except OSError:
            if not (target / "index.json").exists():
                raise
            # Another process finished first; its copy is the same data.
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return target


def _write_node_cases(out: Path) -> None:
    import onnx.backend.test.case.node as node_cases

    with warnings.catch_warnings(), np.errstate(all="ignore"):
        # The generators compute expected values with overflowing casts on purpose.
        warnings.simplefilter("ignore")
        cases = node_cases.collect_testcases()
    index = []
    for case in cases:
        folder = out / case.name
        folder.mkdir()
        model = case.model
        assert model is not None and case.data_sets is not None, case.name
        (folder / "model.onnx").write_bytes(model.SerializeToString())
        for i, (inputs, outputs) in enumerate(case.data_sets):
            ds = folder / f"test_data_set_{i}"
            ds.mkdir()
            for j, value in enumerate(inputs):
                vi = model.graph.input[j]
                (ds / f"input_{j}.pb").write_bytes(serialize(value, vi.type, vi.name))
            for j, value in enumerate(outputs):
                vi = model.graph.output[j]
                (ds / f"output_{j}.pb").write_bytes(serialize(value, vi.type, vi.name))
        if (case.rtol, case.atol) != (DEFAULT_RTOL, DEFAULT_ATOL):
            (folder / "data.json").write_text(json.dumps({"rtol": case.rtol, "atol": case.atol}))
        index.append(case.name)
    (out / "index.json").write_text(json.dumps(sorted(index)))
