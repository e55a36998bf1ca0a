"""The ONNX backend test cases as data: model bytes, inputs, expected outputs, tolerances.

Five suites, all from the installed ``onnx`` wheel:

- ``node``: the node cases that ``onnx.backend.test.case.node.collect_testcases()``
  generates, written once under ``build/conformance/node-onnx-<version>/``
  (:mod:`.node_cache`) and read from there afterwards.
- ``pytorch-converted``, ``pytorch-operator``, ``simple``: the case folders shipped
  in ``onnx/backend/test/data/`` in the same layout.
- ``light``: the small-weight zoo models in ``onnx/backend/test/data/light``, fed
  the deterministic inputs onnx's backend runner makes for them (``arange / n``)
  and checked against the ``light_<model>_output_0.pb`` files, with the
  tolerances of ``onnx.backend.test.case.model``.

Tolerances default to the backend tests' ``rtol=1e-3, atol=1e-7``; a case's
``data.json`` (or its ``TestCase``) overrides them. The protobuf files are read
with :mod:`.protos`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from .node_cache import DEFAULT_ATOL, DEFAULT_RTOL, ensure_node_cache
from .protos import ValueInfo, deserialize, graph_ops, graph_values

__all__ = [
    "DEFAULT_ATOL",
    "DEFAULT_RTOL",
    "SUITES",
    "Case",
    "ValueInfo",
    "case_names",
    "constant_inputs",
    "data_dir",
    "light_feed",
    "load_case",
    "load_cases",
]

SUITES = ("node", "light", "pytorch-converted", "pytorch-operator", "simple")


@dataclass
class Case:
    """One backend test case with one data set.

    Attributes
    ----------
    suite : str
        One of :data:`SUITES`.
    name : str
        The backend test's name (``test_abs``); ``name#N`` for a model's N-th data set.
    model : bytes
        The serialized ``ModelProto``.
    inputs, outputs : list of ValueInfo
        The graph's inputs (initializers left out) and outputs, in order.
    feeds : list
        One value per fed input, in ``inputs`` order: a numpy array (strings as an
        object array of ``str``), a list of them (sequence), ``None`` (empty
        optional) or a dict (map).
    expected : list
        The expected outputs, in ``outputs`` order, in the same forms.
    rtol, atol : float
        Tolerances for floating-point outputs.
    ops : list of tuple of (str, str, int)
        ``(domain, op_type, opset)`` of every node, subgraphs included, sorted;
        the default domain is spelled ``'ai.onnx'``.
    """

    suite: str
    name: str
    model: bytes
    inputs: list[ValueInfo]
    outputs: list[ValueInfo]
    feeds: list[Any]
    expected: list[Any]
    rtol: float = DEFAULT_RTOL
    atol: float = DEFAULT_ATOL
    ops: list[tuple[str, str, int]] = field(default_factory=list)

    @property
    def id(self) -> str:
        """``suite/name``, unique across suites."""
        return f"{self.suite}/{self.name}"

    @property
    def feed_names(self) -> list[str]:
        return [v.name for v in self.inputs[: len(self.feeds)]]

    @property
    def op_types(self) -> list[str]:
        """Op names, ``Domain:Op`` outside the default domain."""
        names = {op if dom == "ai.onnx" else f"{dom}:{op}" for dom, op, _ in self.ops}
        return sorted(names)

    def nbytes(self) -> int:
        """Model plus input bytes: what a batch sends to the page."""
        return len(self.model) + sum(_value_nbytes(v) for v in self.feeds)


def _value_nbytes(value: Any) -> int:
    if isinstance(value, np.ndarray):
        return int(value.nbytes) if value.dtype.kind != "O" else 16 * value.size
    if isinstance(value, list | tuple):
        return sum(_value_nbytes(v) for v in value)
    if isinstance(value, dict):
        return sum(_value_nbytes(v) for v in value.values()) + 8 * len(value)
    return 0


def data_dir() -> Path:
    """``onnx/backend/test/data`` of the installed onnx wheel."""
    import onnx

    return Path(onnx.__file__).parent / "backend" / "test" / "data"


def _suite_dir(suite: str) -> Path:
    if suite == "node":
        return ensure_node_cache()
    if suite in SUITES:
        return data_dir() / suite
    raise ValueError(f"unknown suite {suite!r}; expected one of {', '.join(SUITES)}")


def case_names(suite: str) -> list[str]:
    """Names of the cases of ``suite``, sorted (before any data is read)."""
    if suite == "light":
        return sorted("test_" + p.name[len("light_"):-len(".onnx")]
                      for p in (data_dir() / "light").glob("light_*.onnx"))
    folder = _suite_dir(suite)
    names = []
    for case_dir in sorted(p for p in folder.iterdir() if (p / "model.onnx").exists()):
        sets = sorted(case_dir.glob("test_data_set_*"), key=lambda p: int(p.name.rsplit("_", 1)[1]))
        for k, _ in enumerate(sets):
            names.append(case_dir.name if k == 0 else f"{case_dir.name}#{k}")
    return names


def load_case(suite: str, name: str) -> Case:
    """Read one case (see :func:`case_names`)."""
    if suite == "light":
        return _load_light(name)
    base, _, index = name.partition("#")
    folder = _suite_dir(suite) / base
    return _load_folder(suite, name, folder, int(index or 0))


def _read_model(path: Path) -> tuple[bytes, Any]:
    import onnx

    data = path.read_bytes()
    return data, onnx.load_model_from_string(data)


def _load_folder(suite: str, name: str, folder: Path, data_set: int) -> Case:
    model_bytes, model = _read_model(folder / "model.onnx")
    inputs, outputs = graph_values(model)
    rtol, atol = DEFAULT_RTOL, DEFAULT_ATOL
    if (folder / "data.json").exists():
        meta = json.loads((folder / "data.json").read_text())
        rtol, atol = float(meta.get("rtol", rtol)), float(meta.get("atol", atol))
    ds = folder / f"test_data_set_{data_set}"
    # As onnx's runner: the N-th input file goes with the N-th graph input.
    feeds = [
        deserialize((ds / f"input_{j}.pb").read_bytes(), model.graph.input[j].type)
        for j in range(len(list(ds.glob("input_*.pb"))))
    ]
    expected = [
        deserialize((ds / f"output_{j}.pb").read_bytes(), model.graph.output[j].type)
        for j in range(len(list(ds.glob("output_*.pb"))))
    ]
    return Case(suite, name, model_bytes, inputs, outputs, feeds, expected, rtol, atol,
                graph_ops(model))


def _light_tolerances() -> dict[str, tuple[float, float]]:
    import onnx.backend.test.case.model as model_cases

    return {c.name: (c.rtol, c.atol) for c in model_cases.collect_testcases()}


def light_feed(shape_dims: Sequence[int | None]) -> np.ndarray:
    """The input onnx's runner feeds a light model: ``arange(n).reshape(shape) / n``.

    Dimensions without a value are 1 (``Runner.generate_dummy_data(random=False)``).
    """
    shape = tuple(1 if d is None else int(d) for d in shape_dims)
    n = int(np.prod(shape))
    return (np.arange(n).reshape(shape) / n).astype(np.float32)


def _load_light(name: str) -> Case:
    model_name = name[len("test_"):]
    folder = data_dir() / "light"
    model_bytes, model = _read_model(folder / f"light_{model_name}.onnx")
    inputs, outputs = graph_values(model)
    initializers = {i.name for i in model.graph.initializer}
    feeds = []
    for vi in model.graph.input:
        if vi.name in initializers:
            continue
        if vi.type.tensor_type.elem_type != 1:
            raise ValueError(f"{name}: input {vi.name!r} is not float; the light suite has none")
        dims = [d.dim_value if d.HasField("dim_value") else None
                for d in vi.type.tensor_type.shape.dim]
        feeds.append(light_feed(dims))
    expected = []
    for j, vi in enumerate(model.graph.output):
        path = folder / f"light_{model_name}_output_{j}.pb"
        expected.append(deserialize(path.read_bytes(), vi.type))
    rtol, atol = _light_tolerances().get(name, (DEFAULT_RTOL, DEFAULT_ATOL))
    return Case("light", name, model_bytes, inputs, outputs, feeds, expected, rtol, atol,
                graph_ops(model))


def load_cases(
    suites: Iterable[str], pattern: str | None = None, names: Iterable[str] | None = None
) -> list[Case]:
    """Cases of ``suites`` whose name matches ``pattern`` (``re.search``) and is in ``names``.

    Parameters
    ----------
    suites : iterable of str
        Suite names (see :data:`SUITES`).
    pattern : str, optional
        A regular expression searched in the case's name and in ``suite/name``.
    names : iterable of str, optional
        Only these case names.
    """
    regex = re.compile(pattern) if pattern else None
    wanted = None if names is None else set(names)
    out = []
    for suite in suites:
        for name in case_names(suite):
            if wanted is not None and name not in wanted:
                continue
            if regex is not None and not (regex.search(name) or regex.search(f"{suite}/{name}")):
                continue
            out.append(load_case(suite, name))
    return out


def constant_inputs(case: Case) -> Case:
    """``case`` with every input after the first made an initializer of its value.

    The node suite feeds an operator's weights (a Conv kernel, a Reshape's shape) as
    inputs; real models hold them as initializers, and engines that plan a model when
    it loads (tract wants a Conv's kernel constant) or cannot take an input's type
    (tractjs passes no int64) need them so. Engines are measured this way for their
    operator tables (op_table.py); the outputs to compare are the same. A case whose
    later feeds are not plain tensors, or whose IR version is under 4 (initializers
    must then be inputs too), is left as it is.
    """
    later = case.feeds[1:]
    if not later or not all(isinstance(f, np.ndarray) and f.dtype != object for f in later):
        return case
    import onnx
    from onnx import numpy_helper

    model = onnx.load_from_string(case.model)
    if model.ir_version < 4:
        return case
    names = case.feed_names[1:]
    kept = [v for v in model.graph.input if v.name not in names]
    del model.graph.input[:]
    model.graph.input.extend(kept)
    model.graph.initializer.extend(
        numpy_helper.from_array(np.asarray(f), n) for n, f in zip(names, later, strict=True))
    return replace(case, model=model.SerializeToString(), inputs=case.inputs[:1],
                   feeds=case.feeds[:1])
