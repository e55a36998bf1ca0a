"""Feed validation: every user mistake becomes an InvalidArgument that says what was wanted."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest

from ortweb._convert import to_wire
from ortweb._dtypes import DTYPES, DType, by_onnx
from ortweb._metadata import NodeArg, format_shape, node_args_from_bridge
from ortweb._validate import FeedMemo, check_feeds, check_output_names, describe
from ortweb.errors import InvalidArgument, NotImplementedByRuntime, OrtWebError

X = NodeArg("x", "tensor(float)", ["batch", 3])
MASK = NodeArg("mask", "tensor(bool)", ["batch", "seq"])
IDS = NodeArg("ids", "tensor(int64)", [2, "seq", None])
TEXT = NodeArg("text", "tensor(string)", [None])
INPUTS = [X, MASK, IDS, TEXT]

OUTPUTS = [NodeArg("y", "tensor(float)", ["batch", 3]), NodeArg("n", "tensor(int64)", [])]


def _good() -> dict[str, Any]:
    return {
        "x": np.zeros((4, 3), np.float32),
        "mask": np.ones((4, 5), bool),
        "ids": np.zeros((2, 5, 7), np.int64),
        "text": np.array(["a", "b"], dtype=object),
    }


def _raises(feeds: Any, *fragments: str, inputs: list[NodeArg] = INPUTS) -> str:
    with pytest.raises(InvalidArgument) as info:
        check_feeds(inputs, feeds)
    message = str(info.value)
    for fragment in fragments:
        assert fragment in message, (fragment, message)
    assert isinstance(info.value, ValueError)
    assert isinstance(info.value, OrtWebError)
    assert info.value.message == message
    return message


def _with(**changes: Any) -> dict[str, Any]:
    feeds = _good()
    feeds.update(changes)
    return feeds


# -- accepted feeds -------------------------------------------------------------------


def test_good_feeds_pass_in_model_order() -> None:
    feeds = dict(reversed(list(_good().items())))
    checked = check_feeds(INPUTS, feeds)
    assert [arg.name for arg, _, _ in checked] == ["x", "mask", "ids", "text"]
    for arg, dtype, value in checked:
        assert dtype is by_onnx(arg.type)
        assert value is feeds[arg.name]


def test_unknown_dims_and_alternative_string_dtypes() -> None:
    for text in (np.array(["héllo", "b"]), np.array([b"a", b"b"]), np.array([], dtype=object)):
        check_feeds([TEXT], {"text": text})
    check_feeds([TEXT], {"text": np.array(["a", b"b"], dtype=object)})


def test_byte_swapped_arrays_are_accepted() -> None:
    check_feeds([X], {"x": np.zeros((1, 3), ">f4")})


def test_numpy_scalars_accepted_for_rank_0() -> None:
    inputs = [NodeArg("s", "tensor(float)", []), NodeArg("k", "tensor(int64)", [])]
    checked = check_feeds(inputs, {"s": np.float32(1.5), "k": np.int64(3)})
    s, k = (value for _, _, value in checked)
    assert isinstance(s, np.ndarray) and s.shape == () and s.dtype == np.float32
    assert isinstance(k, np.ndarray) and k.shape == () and k.dtype == np.int64
    assert float(s) == 1.5 and int(k) == 3


def test_zero_size_and_symbolic_zero() -> None:
    feeds = _with(x=np.zeros((0, 3), np.float32), mask=np.ones((0, 5), bool))
    check_feeds(INPUTS, feeds)


def test_no_inputs_empty_feed() -> None:
    assert check_feeds([], {}) == []


def test_ortvalue_feeds_are_checked_by_type_and_shape() -> None:
    from ortweb import OrtValue

    value = OrtValue.ortvalue_from_numpy(np.zeros((4, 3), np.float32))
    checked = check_feeds(INPUTS, _with(x=value))
    assert checked[0][2] is value
    wrong_type = OrtValue.ortvalue_from_numpy(np.zeros((4, 3), np.int32))
    with pytest.raises(InvalidArgument, match=r"'x'.*tensor\(float\).*tensor\(int32\)"):
        check_feeds(INPUTS, _with(x=wrong_type))
    wrong_dim = OrtValue.ortvalue_from_numpy(np.zeros((4, 2), np.float32))
    with pytest.raises(InvalidArgument, match=r"'x': dimension 1 must be 3, got 2"):
        check_feeds(INPUTS, _with(x=wrong_dim))
    value.dispose()
    with pytest.raises(InvalidArgument, match=r"'x'.*disposed"):
        check_feeds(INPUTS, _with(x=value))


# -- the feed mapping ---------------------------------------------------------------


@pytest.mark.parametrize("feeds", [[("x", 1)], None, "x", 3, (np.zeros(3),)])
def test_feed_not_a_mapping(feeds: Any) -> None:
    _raises(feeds, "input_feed", "expected a dict", type(feeds).__name__)


def test_non_str_key() -> None:
    feeds: dict[Any, Any] = _good()
    feeds[0] = np.zeros(1)
    _raises(feeds, "input names must be str", "0")


def test_unknown_name_lists_model_inputs() -> None:
    message = _raises(_with(xx=np.zeros((4, 3), np.float32)), "'xx'")
    assert "unknown input name" in message
    for arg in INPUTS:
        assert describe(arg) in message
    assert "'x' (tensor(float) [batch, 3])" in message


def test_overridable_initializer_feed_says_ort_web_cannot_override() -> None:
    weight = NodeArg("w", "tensor(float)", [3])
    feeds = _with(w=np.zeros(3, np.float32))
    with pytest.raises(NotImplementedByRuntime) as info:
        check_feeds(INPUTS, feeds, FeedMemo(), initializers=[weight])
    message = str(info.value)
    assert "'w' is an initializer" in message and "onnxruntime-web" in message
    # Without the session's list of initializers it is only an unknown name.
    _raises(feeds, "unknown input name 'w'")


def test_unknown_name_with_no_inputs() -> None:
    _raises({"a": np.zeros(1)}, "'a'", "none", inputs=[])


def test_missing_inputs_all_named() -> None:
    feeds = _good()
    del feeds["mask"], feeds["text"]
    message = _raises(feeds, "missing input", describe(MASK), describe(TEXT))
    assert "'x'" not in message


# -- values -----------------------------------------------------------------------------


def test_none_value() -> None:
    _raises(_with(x=None), "input 'x'", "numpy.ndarray of float32", "[batch, 3]", "got None")


@pytest.mark.parametrize(
    ("value", "kind"),
    [((1.0, 2.0, 3.0), "tuple"), (3, "int"), (2.5, "float"), (True, "bool")],
)
def test_python_values_get_asarray_hint(value: Any, kind: str) -> None:
    _raises(
        _with(x=value), "input 'x'", f"got {kind}",
        "numpy.asarray(value, dtype=numpy.float32)", "[batch, 3]",
    )


def _hint_cases() -> list[Any]:
    cases = []
    for d in DTYPES:
        cases.append(pytest.param(d, id=d.ort))
    return cases


@pytest.mark.parametrize("d", _hint_cases())
def test_asarray_hint_is_runnable(d: DType) -> None:
    # Users paste the suggested call; it must run and give an accepted feed.
    arg = NodeArg("v", d.onnx, [2])
    value = ("a", "b") if d.is_string else (1, 0)
    message = _raises({"v": value}, "input 'v'", "got tuple", inputs=[arg])
    found = re.search(r"convert it with (numpy\.asarray\(value, dtype=[\w.]+\))", message)
    assert found, message
    fixed = eval(found.group(1), {"numpy": np, "value": value})
    check_feeds([arg], {"v": fixed})


@pytest.mark.parametrize(
    ("onnx_type", "value", "want"),
    [
        ("tensor(float)", [[1, 2, 3]], np.array([[1, 2, 3]], np.float32)),
        ("tensor(int64)", [1.7, -2.2], np.array([1, -2], np.int64)),  # truncated, as native
        ("tensor(bool)", [1, 0], np.array([True, False])),
        ("tensor(string)", [1, 2], np.array(["1", "2"], dtype=object)),
        ("tensor(uint8)", [], np.zeros(0, np.uint8)),
    ],
)
def test_lists_are_converted_to_the_declared_dtype(onnx_type, value, want) -> None:
    # Native onnxruntime runs np.array(value, dtype=<the input's dtype>) on a list.
    ((_, dtype, array),) = check_feeds([NodeArg("v", onnx_type, [])], {"v": value})
    assert isinstance(array, np.ndarray)
    assert array.dtype == want.dtype and array.tolist() == want.tolist()
    assert dtype.onnx == onnx_type


@pytest.mark.parametrize(
    ("onnx_type", "value", "reason"),
    [
        ("tensor(float)", [[1.0, 2.0], [3.0]], "inhomogeneous"),
        ("tensor(uint8)", [300], "300"),
        ("tensor(int32)", [2**40], "int32"),
        ("tensor(float)", ["a"], "'a'"),
    ],
)
def test_lists_numpy_cannot_convert_are_refused(onnx_type, value, reason) -> None:
    _raises(
        {"v": value}, "input 'v'", onnx_type, "Could not create tensor", reason,
        inputs=[NodeArg("v", onnx_type, [None])],
    )


def test_converted_lists_are_checked_for_shape() -> None:
    _raises(_with(x=[0.0, 1.0, 2.0]), "input 'x'", "expected rank 2", "got rank 1")
    _raises(_with(x=[[0.0, 1.0]]), "input 'x'", "dimension 1 must be 3", "got 2")


def test_other_objects_get_no_hint() -> None:
    message = _raises(_with(x={"a": 1}), "input 'x'", "got dict")
    assert "asarray" not in message


@pytest.mark.parametrize(
    ("name", "value", "want", "got"),
    [
        ("x", np.zeros((4, 3), np.float64), "float32 (tensor(float))", "float64"),
        ("x", np.zeros((4, 3), np.float16), "float32 (tensor(float))", "float16"),
        ("x", np.zeros((4, 3), np.complex64), "float32 (tensor(float))", "complex64"),
        ("ids", np.zeros((2, 5, 7), np.int32), "int64 (tensor(int64))", "int32"),
        ("mask", np.ones((4, 5), np.uint8), "bool (tensor(bool))", "uint8"),
        ("text", np.zeros(2, np.float32), "str (tensor(string))", "float32"),
        ("x", np.array([["a", "b", "c"]] * 4), "float32 (tensor(float))", "str"),
        ("x", np.zeros((4, 3), object), "float32 (tensor(float))", "object"),
    ],
)
def test_wrong_dtype(name: str, value: np.ndarray, want: str, got: str) -> None:
    _raises(_with(**{name: value}), f"input {name!r}", f"expected dtype {want}", f"got {got}")


@pytest.mark.parametrize("other", [1, 2.0, None, ["a"], np.float32(1)])
def test_object_string_array_with_non_str_takes_str_as_native(other: Any) -> None:
    import onnxruntime
    from onnx import TensorProto, helper

    text = np.empty(3, dtype=object)
    text[:] = ["a", "b", "c"]
    text[1] = other
    checked = {a.name: v for a, _, v in check_feeds(INPUTS, _with(text=text))}
    got = checked["text"]
    assert isinstance(got, np.ndarray)
    graph = helper.make_graph(
        [helper.make_node("Identity", ["text"], ["y"])], "g",
        [helper.make_tensor_value_info("text", TensorProto.STRING, [None])],
        [helper.make_tensor_value_info("y", TensorProto.STRING, [None])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    native = onnxruntime.InferenceSession(model.SerializeToString(),
                                          providers=["CPUExecutionProvider"])
    assert got.tolist() == native.run(None, {"text": text})[0].tolist()
    assert text[1] is other  # the caller's array is left as it was


@pytest.mark.parametrize(
    "text",
    [
        np.array(["ok", "a\x00b"], dtype=object),
        np.array(["ok", b"a\x00"], dtype=object),
        np.array(["ok", "a\x00b"]),
        np.array([b"ok", b"a\x00b"]),
    ],
    ids=["object-str", "object-bytes", "unicode", "bytes"],
)
def test_strings_with_nul_rejected(text: np.ndarray) -> None:
    # ORT-web would cut the string at the NUL without a word.
    _raises(_with(text=text), "input 'text'", "NUL", "flat index 1")


def test_unfeedable_type() -> None:
    seq = NodeArg("s", "seq(tensor(float))", [])
    _raises({"s": np.zeros(1, np.float32)}, "input 's'", "seq(tensor(float))", inputs=[seq])


@pytest.mark.parametrize(
    ("value", "fragments"),
    [
        (np.zeros(3, np.float32), ("expected rank 2", "[batch, 3]", "got rank 1", "[3]")),
        (np.zeros((1, 1, 3), np.float32), ("expected rank 2", "got rank 3", "[1, 1, 3]")),
        (np.float32(1), ("expected rank 2", "got rank 0")),
    ],
)
def test_wrong_rank(value: Any, fragments: tuple[str, ...]) -> None:
    _raises(_with(x=value), "input 'x'", *fragments)


def test_wrong_fixed_dim() -> None:
    _raises(
        _with(x=np.zeros((4, 2), np.float32)),
        "input 'x'", "dimension 1 must be 3", "got 2", "[batch, 3]", "[4, 2]",
    )
    _raises(_with(ids=np.zeros((3, 5, 7), np.int64)), "input 'ids'", "dimension 0 must be 2")


def test_symbolic_dims_that_disagree_are_accepted_as_native_does() -> None:
    # Native onnxruntime 1.32 never compares symbolic dims: not across inputs, not
    # within one. A model that needs them equal fails in its kernels instead.
    check_feeds(INPUTS, _with(mask=np.ones((2, 5), bool)))
    check_feeds(INPUTS, _with(ids=np.zeros((2, 6, 7), np.int64)))
    square = NodeArg("m", "tensor(float)", ["n", "n"])
    check_feeds([square], {"m": np.zeros((3, 4), np.float32)})


@pytest.mark.parametrize("shape", [(), (3,), (2, 4), (1, 1, 1)])
def test_no_shape_and_scalar_declarations_take_any_shape(shape) -> None:
    # Native checks no shape for an input declared without one, nor for one
    # declared as a scalar ([]): it takes every rank for both.
    unknown = NodeArg("u", "tensor(float)", [], rank_known=False)
    scalar = NodeArg("s", "tensor(float)", [])
    value = np.zeros(shape, np.float32)
    check_feeds([unknown, scalar], {"u": value, "s": value})


def test_symbols_do_not_leak_between_calls() -> None:
    check_feeds(INPUTS, _good())
    check_feeds(INPUTS, _with(x=np.zeros((9, 3), np.float32), mask=np.ones((9, 5), bool)))


def test_non_utf8_bytes_rejected_before_conversion() -> None:
    text = np.array([b"ok", b"\xff\xfe"], dtype=object)
    with pytest.raises(InvalidArgument, match="text"):
        for _arg, dtype, value in check_feeds([TEXT], {"text": text}):
            assert isinstance(value, np.ndarray)
            to_wire(value, dtype)


# -- output names -------------------------------------------------------------------


def test_output_names_none_means_all() -> None:
    assert check_output_names(OUTPUTS, None) == ["y", "n"]


@pytest.mark.parametrize("names", [["n"], ("y", "n"), ["n", "y"]])
def test_output_names_subset_kept_in_given_order(names: Any) -> None:
    assert check_output_names(OUTPUTS, names) == list(names)


@pytest.mark.parametrize("names", [[], ()])
def test_output_names_empty_means_all_as_native(names: Any) -> None:
    # native onnxruntime's run([], feeds) returns every output; onnxruntime-web would
    # throw "'fetches' cannot be an empty array".
    assert check_output_names(OUTPUTS, names) == ["y", "n"]


@pytest.mark.parametrize(("names", "kind"), [("y", "str"), (3, "int"), ({"y"}, "set")])
def test_output_names_wrong_container(names: Any, kind: str) -> None:
    with pytest.raises(InvalidArgument, match=rf"output_names: .*got {kind}"):
        check_output_names(OUTPUTS, names)


@pytest.mark.parametrize("bad", ["z", "Y", 0])
def test_output_names_unknown(bad: Any) -> None:
    with pytest.raises(InvalidArgument) as info:
        check_output_names(OUTPUTS, ["y", bad])
    message = str(info.value)
    assert f"unknown output name {bad!r}" in message
    assert describe(OUTPUTS[0]) in message and describe(OUTPUTS[1]) in message
    assert isinstance(info.value, ValueError)


# -- metadata helpers the messages rely on ---------------------------------------------


def test_format_shape_and_describe() -> None:
    assert format_shape([1, "batch", None]) == "[1, batch, ?]"
    assert format_shape([]) == "[]"
    assert describe(X) == "'x' (tensor(float) [batch, 3])"


def test_node_args_from_bridge() -> None:
    args = node_args_from_bridge([
        {"name": "a", "type": "tensor(float)", "shape": [1, "n", -1, None, 2.0, "", True]},
        {"name": "b", "type": None, "shape": None},
        {"name": 7},
    ])
    assert args[0] == NodeArg("a", "tensor(float)", [1, "n", None, None, 2, None, None])
    assert type(args[0].shape[4]) is int
    assert args[1] == NodeArg("b", "unknown", []) and not args[1].rank_known
    assert args[0].rank_known
    # ORT-web's spelling of a dim_value -1 or an unset dim.
    assert node_args_from_bridge([{"name": "c", "shape": [4294967295, 3]}])[0].shape == [None, 3]
    assert args[2] == NodeArg("7", "unknown", [])
    assert re.fullmatch(r"NodeArg\(name='a', type='tensor\(float\)', shape=\[.*\]\)", repr(args[0]))


# -- the per-session memo -----------------------------------------------------------

NUMERIC = [X, MASK, IDS]


def _numeric(**changes: Any) -> dict[str, Any]:
    feeds = {k: v for k, v in _good().items() if k != "text"}
    feeds.update(changes)
    return feeds


def test_memo_passes_feeds_shaped_like_the_last_ones_with_the_same_result():
    memo = FeedMemo()
    first = check_feeds(NUMERIC, _numeric(), memo)
    assert memo.signature is not None
    again = _numeric(x=np.ones((4, 3), np.float32))
    second = check_feeds(NUMERIC, again, memo)
    assert [(a.name, d.onnx) for a, d, _ in second] == [(a.name, d.onnx) for a, d, _ in first]
    assert second[0][2] is again["x"]  # the values fed now, not the remembered ones


@pytest.mark.parametrize("changes, fragments", [
    ({"x": np.zeros((4, 4), np.float32)}, ("'x'", "dimension 1 must be 3")),
    ({"x": np.zeros((4, 3), np.float64)}, ("'x'", "float32", "float64")),
    ({"mask": np.ones((3, 6, 1), bool)}, ("'mask'", "rank 2")),
    ({"x": [[0.0] * 2] * 4}, ("'x'", "dimension 1 must be 3")),
    ({"x": ((0.0,) * 3,) * 4}, ("'x'", "tuple")),
    ({"extra": np.zeros(1, np.float32)}, ("'extra'",)),
])
def test_memo_never_lets_a_bad_feed_through(changes, fragments):
    memo = FeedMemo()
    check_feeds(NUMERIC, _numeric(), memo)
    with pytest.raises(InvalidArgument) as info:
        check_feeds(NUMERIC, _numeric(**changes), memo)
    for fragment in fragments:
        assert fragment in str(info.value)
    check_feeds(NUMERIC, _numeric(), memo)  # and good ones still pass after


def test_memo_leaves_out_string_feeds_whose_contents_are_checked():
    memo = FeedMemo()
    check_feeds(INPUTS, _good(), memo)
    assert memo.signature is None
    with pytest.raises(InvalidArgument, match="NUL"):
        check_feeds(INPUTS, _with(text=np.array(["a", "b\x00"], dtype=object)), memo)


def test_memo_is_per_byte_order_and_per_dtype():
    memo = FeedMemo()
    check_feeds([X], {"x": np.zeros((2, 3), np.float32)}, memo)
    swapped = np.zeros((2, 3), np.dtype(">f4"))
    checked = check_feeds([X], {"x": swapped}, memo)  # checked afresh, and accepted
    assert checked[0][1].onnx == "tensor(float)"
    assert memo.signature == [(swapped.dtype, (2, 3))]
