"""The ONNX backend test cases as data: model bytes, inputs, expected outputs, tolerances.

Five suites, all from the installed ``onnx`` wheel:

- ``node``: the node cases that ``onnx.backend.test.case.node.collect_testcases()``
  generates (1,884 with onnx 1.23.2). Generating them takes 10–20 s, so they are
  written once, in the layout of onnx's own ``backend-test-tools generate-data``
  (``model.onnx`` + ``test_data_set_0/{input,output}_N.pb``), under
  ``build/conformance/node-onnx-<version>/``, and read from there afterwards.
- ``pytorch-converted``, ``pytorch-operator``, ``simple``: the case folders shipped
  in ``onnx/backend/test/data/`` in the same layout.
- ``light``: the small-weight zoo models in ``onnx/backend/test/data/light``, fed
  the deterministic inputs onnx's backend runner makes for them (``arange / n``)
  and checked against the ``light_<model>_output_0.pb`` files, with the
  tolerances of ``onnx.backend.test.case.model``.

Tolerances default to the backend tests' ``rtol=1e-3, atol=1e-7``; a case's
``data.json`` (or its ``TestCase``) overrides them.
"""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import tempfile
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "DEFAULT_ATOL",
    "DEFAULT_RTOL",
    "SUITES",
    "Case",
    "ValueInfo",
    "case_names",
    "data_dir",
    "ensure_node_cache",
    "load_case",
    "load_cases",
    "node_cache_dir",
    "type_string",
]

SUITES = ("node", "light", "pytorch-converted", "pytorch-operator", "simple")
DEFAULT_RTOL = 1e-3
DEFAULT_ATOL = 1e-7


@dataclass(frozen=True)
class ValueInfo:
    """A graph input or output: its name and onnxruntime-style type.

    Attributes
    ----------
    name : str
    type : str
        ``'tensor(float)'``, ``'seq(tensor(int64))'``, ``'optional(tensor(float))'``,
        ``'map(int64,tensor(float))'``, ... (onnxruntime's spelling).
    """

    name: str
    type: str

    @property
    def is_tensor(self) -> bool:
        return self.type.startswith("tensor(")


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


# -- where the data is ----------------------------------------------------------------


def data_dir() -> Path:
    """``onnx/backend/test/data`` of the installed onnx wheel."""
    import onnx

    return Path(onnx.__file__).parent / "backend" / "test" / "data"


@functools.lru_cache(maxsize=1)
def node_cache_dir() -> Path:
    """Where the generated node cases live: ``build/conformance/node-onnx-<version>``.

    Under ``$ORTWEB_CONFORMANCE_CACHE`` when set, else under the ``build`` folder
    of ``$ORTWEB_HOME`` or of this checkout (as :func:`ortweb.host.build.assets.find_assets`,
    without its wheel refresh, which costs 30 ms a call).
    """
    import onnx

    home = os.environ.get("ORTWEB_HOME")
    build = Path(home) / "build" if home else Path(__file__).resolve().parents[4] / "build"
    root = Path(os.environ.get("ORTWEB_CONFORMANCE_CACHE") or build)
    return root / "conformance" / f"node-onnx-{onnx.__version__}"


# -- types ----------------------------------------------------------------------------


def type_string(type_proto: Any) -> str:
    """onnxruntime's spelling of an ONNX ``TypeProto``: ``tensor(float)``, ``seq(...)``."""
    kind = type_proto.WhichOneof("value")
    if kind == "tensor_type":
        return f"tensor({_elem_name(type_proto.tensor_type.elem_type)})"
    if kind == "sparse_tensor_type":
        return f"sparse_tensor({_elem_name(type_proto.sparse_tensor_type.elem_type)})"
    if kind == "sequence_type":
        return f"seq({type_string(type_proto.sequence_type.elem_type)})"
    if kind == "optional_type":
        return f"optional({type_string(type_proto.optional_type.elem_type)})"
    if kind == "map_type":
        key = _elem_name(type_proto.map_type.key_type)
        return f"map({key},{type_string(type_proto.map_type.value_type)})"
    return "unknown"


def _elem_name(elem_type: int) -> str:
    import onnx

    # onnxruntime names types after the enum, lower-cased: FLOAT8E4M3FN -> float8e4m3fn.
    return str(onnx.TensorProto.DataType.Name(elem_type)).lower()


def _graph_values(model: Any) -> tuple[list[ValueInfo], list[ValueInfo]]:
    initializers = {i.name for i in model.graph.initializer}
    inputs = [ValueInfo(v.name, type_string(v.type)) for v in model.graph.input
              if v.name not in initializers]
    outputs = [ValueInfo(v.name, type_string(v.type)) for v in model.graph.output]
    return inputs, outputs


def _ops(model: Any) -> list[tuple[str, str, int]]:
    import onnx

    opsets = {(o.domain or "ai.onnx"): int(o.version) for o in model.opset_import}
    found: set[tuple[str, str, int]] = set()

    def walk(graph: Any) -> None:
        for node in graph.node:
            domain = node.domain or "ai.onnx"
            found.add((domain, node.op_type, opsets.get(domain, 0)))
            for attr in node.attribute:
                if attr.type == onnx.AttributeProto.GRAPH:
                    walk(attr.g)
                elif attr.type == onnx.AttributeProto.GRAPHS:
                    for g in attr.graphs:
                        walk(g)

    walk(model.graph)
    return sorted(found)


# -- values <-> protobuf files ---------------------------------------------------------


def _normalize(value: Any) -> Any:
    """One form per kind of value: arrays (strings as object arrays of str), lists, dicts."""
    import onnx
    from onnx import numpy_helper

    if isinstance(value, onnx.TensorProto):
        value = numpy_helper.to_array(value)
    if isinstance(value, list | tuple):
        return [_normalize(v) for v in value]
    if isinstance(value, dict):
        return {k: _normalize(v) for k, v in value.items()}
    if value is None:
        return None
    array = np.asarray(value)
    if array.dtype.kind in "OSU":
        flat = [v.decode("utf-8") if isinstance(v, bytes) else str(v)
                for v in array.reshape(-1).tolist()]
        out = np.empty(len(flat), dtype=object)
        out[:] = flat
        return out.reshape(array.shape)
    return array


def _serialize(value: Any, type_proto: Any, name: str) -> bytes:
    """A value as onnx's ``generate-data`` tool writes it for a graph value of this type."""
    import onnx
    from onnx import numpy_helper

    kind = type_proto.WhichOneof("value")
    proto: Any
    if kind == "map_type":
        proto = numpy_helper.from_dict(value, name)
    elif kind == "sequence_type":
        proto = numpy_helper.from_list(value, name)
    elif kind == "optional_type":
        proto = numpy_helper.from_optional(value, name)
    elif isinstance(value, onnx.TensorProto):
        proto = value
    else:
        proto = numpy_helper.from_array(np.asarray(value), name)
    return bytes(proto.SerializeToString())


def _deserialize(data: bytes, type_proto: Any) -> Any:
    import onnx
    from onnx import numpy_helper

    kind = type_proto.WhichOneof("value")
    if kind == "sequence_type":
        seq = onnx.SequenceProto()
        seq.ParseFromString(data)
        return _normalize(numpy_helper.to_list(seq))
    if kind == "optional_type":
        opt = onnx.OptionalProto()
        opt.ParseFromString(data)
        return _normalize(numpy_helper.to_optional(opt))
    if kind == "map_type":
        mp = onnx.MapProto()
        mp.ParseFromString(data)
        return _normalize(numpy_helper.to_dict(mp))
    tensor = onnx.TensorProto()
    tensor.ParseFromString(data)
    return _normalize(numpy_helper.to_array(tensor))


# -- the node suite's cache --------------------------------------------------------------


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
                (ds / f"input_{j}.pb").write_bytes(_serialize(value, vi.type, vi.name))
            for j, value in enumerate(outputs):
                vi = model.graph.output[j]
                (ds / f"output_{j}.pb").write_bytes(_serialize(value, vi.type, vi.name))
        if (case.rtol, case.atol) != (DEFAULT_RTOL, DEFAULT_ATOL):
            (folder / "data.json").write_text(json.dumps({"rtol": case.rtol, "atol": case.atol}))
        index.append(case.name)
    (out / "index.json").write_text(json.dumps(sorted(index)))


# -- loading ------------------------------------------------------------------------------


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
    inputs, outputs = _graph_values(model)
    rtol, atol = DEFAULT_RTOL, DEFAULT_ATOL
    if (folder / "data.json").exists():
        meta = json.loads((folder / "data.json").read_text())
        rtol, atol = float(meta.get("rtol", rtol)), float(meta.get("atol", atol))
    ds = folder / f"test_data_set_{data_set}"
    # As onnx's runner: the N-th input file goes with the N-th graph input.
    feeds = [
        _deserialize((ds / f"input_{j}.pb").read_bytes(), model.graph.input[j].type)
        for j in range(len(list(ds.glob("input_*.pb"))))
    ]
    expected = [
        _deserialize((ds / f"output_{j}.pb").read_bytes(), model.graph.output[j].type)
        for j in range(len(list(ds.glob("output_*.pb"))))
    ]
    return Case(suite, name, model_bytes, inputs, outputs, feeds, expected, rtol, atol,
                _ops(model))


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
    inputs, outputs = _graph_values(model)
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
        expected.append(_deserialize(path.read_bytes(), vi.type))
    rtol, atol = _light_tolerances().get(name, (DEFAULT_RTOL, DEFAULT_ATOL))
    return Case("light", name, model_bytes, inputs, outputs, feeds, expected, rtol, atol,
                _ops(model))


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
