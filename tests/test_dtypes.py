"""The DTYPES table agrees with ONNX, onnxruntime, numpy and JavaScript typed arrays."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

from ortweb import _dtypes
from ortweb._dtypes import DTYPES, by_numpy, by_onnx, by_ort

IDS = [d.ort for d in DTYPES]
NUMERIC = [d for d in DTYPES if not d.is_string]

ROOT = Path(__file__).resolve().parents[1]
TENSORS_JS = ROOT / "bridge_js" / "tensors.js"

# JavaScript's own typed arrays (the language's, not ortweb's table): bytes per
# element and the numpy kind whose bytes each reads. The bridge copies raw bytes,
# so both must match the wire dtype.
JS_TYPED_ARRAYS = {
    "Float32Array": (4, "f"),
    "Float64Array": (8, "f"),
    "Int8Array": (1, "i"),
    "Int16Array": (2, "i"),
    "Int32Array": (4, "i"),
    "BigInt64Array": (8, "i"),
    "Uint8Array": (1, "u"),
    "Uint16Array": (2, "u"),
    "Uint32Array": (4, "u"),
    "BigUint64Array": (8, "u"),
}


def _tensors_js_table() -> dict[str, str]:
    """``TYPED_ARRAYS`` as bridge_js/tensors.js writes it: ORT-web type → typed array."""
    found = re.search(r"^const TYPED_ARRAYS = \{\n(.*?)^\};", TENSORS_JS.read_text(),
                      re.M | re.S)
    assert found, f"no `const TYPED_ARRAYS = {{...}};` in {TENSORS_JS}"
    lines = [line.strip() for line in found.group(1).splitlines()]
    lines = [line for line in lines if line and not line.startswith("//")]
    entries = [re.fullmatch(r"(\w+): (\w+),?", line) for line in lines]
    # A line the pattern does not read would escape the comparison: fail on it.
    assert all(entries), [line for line, e in zip(lines, entries, strict=True) if not e]
    return {e.group(1): e.group(2) for e in entries if e}


def _inner(onnx_name: str) -> str:
    assert onnx_name.startswith("tensor(") and onnx_name.endswith(")"), onnx_name
    return onnx_name[len("tensor("):-1]


def test_names_are_unique() -> None:
    for attr in ("onnx", "ort", "elem_type"):
        values = [getattr(d, attr) for d in DTYPES]
        assert len(values) == len(set(values)), attr
    numeric = [d.numpy for d in DTYPES if not d.is_string]
    assert len(numeric) == len(set(numeric))
    assert sum(d.is_string for d in DTYPES) == 1


def test_covers_every_ort_web_tensor_type() -> None:
    # ORT-web's Tensor.Type union, less the 4-bit types ortweb does not feed.
    assert {d.ort for d in DTYPES} == {
        "float32", "uint8", "int8", "uint16", "int16", "int32", "int64",
        "string", "bool", "float16", "float64", "uint32", "uint64",
    }


@pytest.mark.parametrize("d", DTYPES, ids=IDS)
def test_elem_type_matches_onnx(d: _dtypes.DType) -> None:
    assert d.elem_type == TensorProto.DataType.Value(_inner(d.onnx).upper())
    np_dtype = np.dtype(helper.tensor_dtype_to_np_dtype(d.elem_type))
    assert np_dtype == (np.dtype(object) if d.is_string else d.numpy)
    assert d.numpy == np_dtype


@pytest.mark.parametrize("d", DTYPES, ids=IDS)
def test_onnx_name_is_what_onnxruntime_reports(d: _dtypes.DType) -> None:
    # The metadata a session reports must round-trip through by_onnx.
    x = helper.make_tensor_value_info("x", d.elem_type, [2])
    y = helper.make_tensor_value_info("y", d.elem_type, [2])
    graph = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "g", [x], [y])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    assert sess.get_inputs()[0].type == d.onnx
    assert by_onnx(sess.get_outputs()[0].type) is d


@pytest.mark.parametrize("d", DTYPES, ids=IDS)
def test_wire_dtype(d: _dtypes.DType) -> None:
    if d.is_string:
        assert d.wire is None
        assert d.itemsize == 0
        assert d.numpy == np.dtype(object)
        assert d.gpu is False
        return
    assert d.wire is not None
    assert d.wire.itemsize == d.numpy.itemsize == d.itemsize
    assert d.wire.isnative
    assert d.wire.kind in "iuf"
    # ORT-web spells every numeric type as numpy names it.
    assert d.ort == d.numpy.name


def test_tensors_js_has_a_typed_array_for_every_wire_type() -> None:
    assert sorted(_tensors_js_table()) == sorted(d.ort for d in NUMERIC)


@pytest.mark.parametrize("d", NUMERIC, ids=[d.ort for d in NUMERIC])
def test_tensors_js_typed_array_holds_the_wire_dtype(d: _dtypes.DType) -> None:
    assert d.wire is not None
    size, kind = JS_TYPED_ARRAYS[_tensors_js_table()[d.ort]]
    assert (d.wire.itemsize, d.wire.kind) == (size, kind)


def _wire_sample(d: _dtypes.DType) -> np.ndarray:
    assert d.wire is not None
    if d.wire.kind == "f":
        return np.array([1.5, -2.0, 0.1, 0.0], d.wire)
    info = np.iinfo(d.wire)
    return np.array([info.min, info.min + 1, 0, 1, info.max - 1, info.max], d.wire)


def test_tensors_js_reads_the_wire_bytes_as_numpy_does() -> None:
    # Not the source text but the module itself, in node: what allocate() returns
    # and how viewAs() reads the bytes Python sends for each type.
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed (the two tests above read tensors.js as text)")
    samples = {d.ort: _wire_sample(d) for d in NUMERIC}
    script = """
import fs from 'node:fs';
const m = await import(process.argv[1]);
const out = {};
for (const [type, bytes] of Object.entries(JSON.parse(fs.readFileSync(0, 'utf8')))) {
  const a = m.allocate(type, 3);
  out[type] = [a.constructor.name, a.BYTES_PER_ELEMENT, a.length,
               Array.from(m.viewAs(type, Uint8Array.from(bytes)), String)];
}
console.log(JSON.stringify(out));
"""
    payload = json.dumps({t: list(a.tobytes()) for t, a in samples.items()})
    done = subprocess.run([node, "--input-type=module", "-e", script, TENSORS_JS.as_uri()],
                          input=payload, capture_output=True, text=True, check=True)
    got = json.loads(done.stdout)
    assert sorted(got) == sorted(samples)
    for d in NUMERIC:
        ctor, per_element, length, values = got[d.ort]
        assert ctor == _tensors_js_table()[d.ort], d.ort
        assert (per_element, length) == (d.itemsize, 3), d.ort
        parse = float if d.wire is not None and d.wire.kind == "f" else int
        assert [parse(v) for v in values] == samples[d.ort].tolist(), d.ort


def test_wire_types_that_differ_from_numpy() -> None:
    differ = {d.ort: d.wire for d in DTYPES if not d.is_string and d.wire != d.numpy}
    assert differ == {"float16": np.dtype(np.uint16), "bool": np.dtype(np.uint8)}


@pytest.mark.parametrize("d", DTYPES, ids=IDS)
def test_lookups(d: _dtypes.DType) -> None:
    assert by_onnx(d.onnx) is d
    assert by_onnx(d.ort) is d
    assert by_ort(d.ort) is d
    if not d.is_string:
        assert by_numpy(d.numpy) is d
        assert by_numpy(d.numpy.type) is d


def test_by_ort_rejects_onnx_spelling() -> None:
    with pytest.raises(KeyError, match="tensor"):
        by_ort("tensor(float)")


@pytest.mark.parametrize("name", ["float", "tensor(bfloat16)", "tensor(int4)", "", "Float32"])
def test_unknown_names_raise_key_error(name: str) -> None:
    with pytest.raises(KeyError):
        by_onnx(name)
    with pytest.raises(KeyError):
        by_ort(name)


@pytest.mark.parametrize(
    "spelling", [">f4", ">f8", ">f2", ">i2", ">i4", ">i8", ">u2", ">u4", ">u8", "<f4", "=i8"]
)
def test_by_numpy_ignores_byte_order(spelling: str) -> None:
    dt = np.dtype(spelling)
    found = by_numpy(dt)
    assert found is not None
    assert found.numpy == dt.newbyteorder("=")
    assert found.numpy.isnative


@pytest.mark.parametrize("spelling", ["U", "U7", "<U3", ">U3", "S", "S5", "O"])
def test_by_numpy_strings(spelling: str) -> None:
    found = by_numpy(np.dtype(spelling))
    assert found is not None and found.is_string
    assert found.onnx == "tensor(string)"


# long double only differs from float64 where the platform gives it more bytes.
UNSUPPORTED = ["c8", "c16", ">c8", "M8[s]", "m8[ns]", "V4"] + (
    ["g"] if np.dtype("g").itemsize > 8 else []
)


@pytest.mark.parametrize("spelling", UNSUPPORTED)
def test_by_numpy_unsupported_is_none(spelling: str) -> None:
    assert by_numpy(np.dtype(spelling)) is None


def test_by_numpy_platform_aliases() -> None:
    # C-level aliases must land on the same entry as the fixed-width names.
    assert by_numpy(np.dtype(np.intc)) is by_numpy(np.dtype(np.int32))
    assert by_numpy(np.dtype(np.longlong)) is by_numpy(np.dtype(np.int64))
    assert by_numpy(np.dtype(np.ulonglong)) is by_numpy(np.dtype(np.uint64))
    assert by_numpy(np.dtype(np.double)) is by_numpy(np.dtype(np.float64))
    assert by_numpy(np.dtype(np.half)) is by_numpy(np.dtype(np.float16))
