"""The engine table on the host: what each engine refuses, read from the model's bytes."""

from __future__ import annotations

import onnx
import pytest
from onnx import TensorProto, helper

from ortweb._engines import ENGINES, engine_graph, engine_of, fit_engines, op_table
from ortweb._onnxproto import parse_model
from ortweb._policy import ProviderPolicy, plan_providers
from ortweb._providers import PROVIDERS, normalize_provider
from ortweb.errors import ProviderUnavailable
from ortweb.testing import samples


def _model(op: str = "Relu", elem: int = TensorProto.FLOAT, shape=(2, 4), declare=True,
           opset: int = 13) -> bytes:
    nodes = [helper.make_node(op, ["x"], ["h"]), helper.make_node("Neg", ["h"], ["y"])]
    graph = helper.make_graph(nodes, "m", [helper.make_tensor_value_info("x", elem, list(shape))],
                              [helper.make_tensor_value_info("y", elem, list(shape))])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    if declare:
        model = onnx.shape_inference.infer_shapes(model)
    return model.SerializeToString()


def test_every_provider_has_one_engine_and_names_map():
    assert sorted(p for e in ENGINES for p in e.providers) == sorted(PROVIDERS)
    assert engine_of("webgpu").name == engine_of("wasm").name == "ort"
    assert normalize_provider("TractExecutionProvider") == "tract"
    assert normalize_provider("WonnxExecutionProvider") == "wonnx"


def test_the_parser_reads_ops_and_undeclared_values():
    info = parse_model(_model(declare=False))
    assert info.ops == [("", "Relu"), ("", "Neg")]
    assert info.undeclared == ["h"]
    assert parse_model(_model()).undeclared == []


def test_ops_inside_subgraphs_count():
    then = helper.make_graph([helper.make_node("Abs", ["x"], ["t"])], "then", [],
                             [helper.make_tensor_value_info("t", TensorProto.FLOAT, [2])])
    other = helper.make_graph([helper.make_node("Neg", ["x"], ["e"])], "else", [],
                              [helper.make_tensor_value_info("e", TensorProto.FLOAT, [2])])
    graph = helper.make_graph(
        [helper.make_node("If", ["c"], ["y"], then_branch=then, else_branch=other)], "if",
        [helper.make_tensor_value_info("c", TensorProto.BOOL, []),
         helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    info = parse_model(helper.make_model(graph).SerializeToString())
    assert set(info.ops) == {("", "If"), ("", "Abs"), ("", "Neg")}


@pytest.mark.parametrize(("provider", "model", "said"), [
    ("tract", _model(elem=TensorProto.INT64), "input 'x': tensor(int64) is not a type"),
    ("wonnx", _model(elem=TensorProto.DOUBLE), "input 'x': tensor(double) is not a type"),
    ("wonnx", _model(shape=("batch", 4)), "dynamic dim 'batch'"),
    ("wonnx", _model(declare=False), "value_info"),
])
def test_an_engine_refuses_what_it_cannot_pass(provider, model, said):
    refusal = engine_of(provider).refusal(parse_model(model), {})
    assert said in refusal
    assert engine_of("wasm").refusal(parse_model(model), {}) == ""


def test_a_free_dim_override_makes_a_named_dim_static_for_wonnx():
    model = parse_model(_model(shape=("batch", 4)))
    assert "add_free_dimension_override_by_name('batch', n)" in engine_of("wonnx").refusal(
        model, {})
    assert engine_of("wonnx").refusal(model, {"batch": 2}) == ""
    unnamed = parse_model(_model(shape=(-1, 4)))
    assert "cannot be pinned by name" in engine_of("wonnx").refusal(unnamed, {"batch": 2})


def test_pin_dims_writes_what_onnx_update_model_dims_writes():
    from onnx.tools import update_model_dims

    from ortweb._dimpin import pin_dims

    source = onnx.load_from_string(_model(shape=("batch", "n")))
    source.graph.input[0].type.tensor_type.shape.dim[0].denotation = "DATA_BATCH"
    data = source.SerializeToString()
    pinned, names = pin_dims(data, {"batch": 3, "n": 4, "absent": 9})
    assert sorted(set(names)) == ["batch", "n"]
    ours = onnx.load_from_string(pinned)
    onnx.checker.check_model(ours)
    theirs = update_model_dims.update_inputs_outputs_dims(
        onnx.load_from_string(data), {"x": [3, 4]}, {"y": [3, 4]})
    assert ours.graph.input[0].type.tensor_type.shape.dim[0].denotation == "DATA_BATCH"
    def values(model):
        return [v.SerializeToString() for v in [*model.graph.input, *model.graph.output]]

    assert values(ours) == values(theirs)
    # The inferred intermediate value is pinned too: wonnx reads its shape as well.
    assert [d.dim_value for d in ours.graph.value_info[0].type.tensor_type.shape.dim] == [3, 4]
    assert ours.graph.node == source.graph.node
    assert pin_dims(data, {"absent": 1})[0] is data


def test_engine_model_pins_only_for_an_engine_that_needs_it():
    from ortweb._engines import engine_model

    data = _model(shape=("batch", 4))
    assert engine_model(data, plan_providers(["wasm"]), {"batch": 2}, "m") is data
    assert engine_model(data, plan_providers(["wonnx"]), {}, "m") is data
    pinned = engine_model(data, plan_providers(["wonnx", "wasm"]), {"batch": 2}, "m")
    assert isinstance(pinned, bytes) and parse_model(pinned).inputs[0].shape == [2, 4]


def test_a_model_ortweb_cannot_read_is_refused_by_the_other_engines():
    assert "could not read" in engine_of("tract").refusal(None, {})
    assert engine_of("webgpu").refusal(None, {}) == ""


def test_fit_engines_falls_back_requires_and_refuses():
    model = parse_model(_model(elem=TensorProto.INT64))
    plan = fit_engines(plan_providers(["tract", "wasm"]), model, {}, "m.onnx")
    assert plan.candidates == ["wasm"] and "int64" in plan.excluded["tract"]
    with pytest.raises(ProviderUnavailable, match="requires 'tract'") as info:
        fit_engines(plan_providers(ProviderPolicy(require="tract")), model, {}, "m.onnx")
    assert "tract" in info.value.reasons
    with pytest.raises(ProviderUnavailable, match="no provider asked for can run"):
        fit_engines(plan_providers(["tract", "wonnx"]), model, {}, "m.onnx")
    # The default rule never names the other engines: nothing is refused.
    default = plan_providers(None)
    assert fit_engines(default, model, {}, "m.onnx") is default


def test_engine_graph_leaves_out_initializers_and_keeps_shapes():
    graph = engine_graph(parse_model(samples.mlp_model(n_in=8, n_hidden=16, n_out=4)))
    assert graph is not None
    assert graph["inputs"] == [{"name": "x", "type": "float32", "shape": ["batch", 8]}]
    assert [o["name"] for o in graph["outputs"]] == ["probabilities"]
    # A pinned dim reads as its size, as in the bytes wonnx gets (engine_model).
    pinned = engine_graph(parse_model(samples.mlp_model(n_in=8, n_hidden=16, n_out=4)),
                          overrides={"batch": 2})
    assert pinned is not None and pinned["inputs"][0]["shape"] == [2, 8]
    assert pinned["outputs"][0]["shape"][0] == 2


@pytest.mark.parametrize("engine", ["tract", "wonnx"])
def test_the_shipped_op_tables_are_measured_and_used(engine):
    table = op_table(engine)
    assert table is not None, f"py/ortweb/_engine_ops/{engine}.json is missing"
    assert table["meta"]["provider"] == engine and table["meta"]["cases"] > 1000
    measured = [(op, int(v), c) for op, e in table["ops"].items()
                for v, c in e["versions"].items()]
    never = next((op, v) for op, v, c in measured if not c["pass"] and not c["wrong"])
    refusal = engine_of(engine).refusal(
        parse_model(_model(op=never[0], declare=False, opset=never[1])), {})
    if not (refusal.startswith("input") or "value_info" in refusal):  # not refused sooner
        assert f"{never[0]}-{never[1]} not supported by {engine}" in refusal
    wrong = next((op, v) for op, v, c in measured if c["wrong"])
    refusal = engine_of(engine).refusal(parse_model(_model(op=wrong[0], opset=wrong[1])), {})
    assert (f"{wrong[0]}-{wrong[1]} gives wrong values on {engine}" in refusal
            or refusal.startswith("input"))


def test_an_op_version_the_suite_never_measured_is_left_to_the_engine():
    # tract 0.4 runs Unsqueeze-1/11 (axes an attribute), not Unsqueeze-13 (axes an
    # input), the only version the node suite holds cases of.
    entry = op_table("tract")["ops"]["Unsqueeze"]  # type: ignore[index]
    assert list(entry["versions"]) == ["13"] and entry["since"] == [1, 13]
    def unsqueeze(opset: int, axes_input: bool) -> bytes:
        node = (helper.make_node("Unsqueeze", ["x", "axes"], ["y"]) if axes_input
                else helper.make_node("Unsqueeze", ["x"], ["y"], axes=[0]))
        inits = [helper.make_tensor("axes", TensorProto.INT64, [1], [0])] if axes_input else []
        graph = helper.make_graph([node], "u", [helper.make_tensor_value_info(
            "x", TensorProto.FLOAT, [2])], [helper.make_tensor_value_info(
                "y", TensorProto.FLOAT, [1, 2])], initializer=inits)
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])\
            .SerializeToString()
    assert engine_of("tract").refusal(parse_model(unsqueeze(11, False)), {}) == ""
    assert "Unsqueeze-13 not supported by tract" in engine_of("tract").refusal(
        parse_model(unsqueeze(13, True)), {})
    assert "Unsqueeze-13" in engine_of("tract").refusal(parse_model(unsqueeze(20, True)), {})


def test_a_refusal_names_the_op_version_the_model_uses():
    # The table keeps Softmax-1, -11 and -13 as one signature; the message names the
    # version of the model's opset, as onnx does.
    assert "Softmax-13 gives wrong values on tract" in engine_of("tract").refusal(
        parse_model(_model(op="Softmax", opset=17)), {})
    assert "Softmax-11 gives wrong values on tract" in engine_of("tract").refusal(
        parse_model(_model(op="Softmax", opset=11)), {})


def test_a_refusal_names_every_distrusted_op_and_the_trust_that_runs_them():
    nodes = [helper.make_node("Softmax", ["x"], ["h"]),
             helper.make_node("MatMul", ["h", "h"], ["y"])]
    square = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [2, 2]) for n in ("x", "y")]
    model = helper.make_model(helper.make_graph(nodes, "m", square[:1], square[1:]),
                              opset_imports=[helper.make_opsetid("", 13)])
    refusal = engine_of("tract").refusal(parse_model(model.SerializeToString()), {})
    assert "Softmax-13 gives wrong values" in refusal and "MatMul-13 gives wrong values" in refusal
    assert "trust={'tract': ['Softmax', 'MatMul']}" in refusal
    assert "ortweb run --trust Softmax,MatMul" in refusal


def test_an_op_missing_from_the_table_is_left_to_the_engine():
    assert engine_of("tract").refusal(parse_model(_model(op="NoSuchOp", declare=False)), {}) == ""


def test_tract_types_are_those_of_its_typed_arrays():
    assert {"tensor(float)", "tensor(int32)"} <= engine_of("tract").types  # type: ignore[operator]
    assert "tensor(int64)" not in engine_of("tract").types  # type: ignore[operator]


def test_the_cli_takes_engine_names_for_run_and_site():
    from ortweb.cli import _parser

    parser = _parser()
    assert parser.parse_args(["run", "m.onnx", "--providers", "tract,wasm"]).providers == [
        "tract", "wasm"]
    assert parser.parse_args(["site", "--model", "m.onnx", "--script", "a.py", "--providers",
                              "WonnxExecutionProvider,wasm"]).providers == ["wonnx", "wasm"]


def test_the_bridge_checks_engine_files_against_the_pins_of_the_lock():
    import json
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    source = (root / "bridge_js" / "engine_files.js").read_text()
    in_bridge = dict(re.findall(r"'([a-z]+/[\w.-]+)': '([0-9a-f]{64})'", source))
    assert in_bridge == json.loads((root / "assets.lock.json").read_text())["engines"]


def test_an_engine_s_code_list_is_what_its_sessions_import_beyond_start_up():
    from pathlib import Path

    from ortweb.host.build.bridge_modules import (
        code_closure,
        engine_code,
        full_closure,
        startup_modules,
        static_imports,
    )

    bridge = Path(__file__).resolve().parents[1] / "bridge_js"
    code = engine_code(bridge)
    # Every engine but onnxruntime-web's own (the bridge's start-up uses it) is loaded
    # when a session first tries it.
    assert set(code) == {e.name for e in ENGINES} - {"ort"}
    startup = startup_modules(bridge)
    for engine, files in code.items():
        assert files[0] == f"{engine}_session.js", files
        assert files[0] not in startup, f"{files[0]} is imported at start-up"
        # The list the bridge checks before the import is all that the import brings.
        assert set(files) == code_closure(bridge, engine), (engine, files)
        # No JSON module on its way (lazy_engine.js: Chromium crashes on a main-thread
        # site's page).
        reached = full_closure(bridge, files[0])
        assert not any(f.endswith(".json") for f in reached), (engine, sorted(reached))
    assert static_imports("import { a } from './a.js';\nexport { b } from './b.js';\n"
                          "import './c.js';\nconst x = import('./d.js');\n") == {
        "a.js", "b.js", "c.js"}
