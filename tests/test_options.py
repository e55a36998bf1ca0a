"""SessionOptions / RunOptions → ORT-web objects, and providers= normalisation."""

from __future__ import annotations

from typing import Any

import pytest

import ortweb
from ortweb._options import ExecutionMode, GraphOptimizationLevel, RunOptions, SessionOptions
from ortweb._providers import DEFAULT_PROVIDERS, normalize_provider, normalize_providers
from ortweb.errors import InvalidArgument

# -- SessionOptions -----------------------------------------------------------------


def test_session_defaults() -> None:
    assert SessionOptions().to_ort() == {
        "graphOptimizationLevel": "all",
        "logSeverityLevel": 2,
        "logVerbosityLevel": 0,
        "enableMemPattern": False,
        "enableCpuMemArena": False,
        "executionMode": "sequential",
    }


def test_levels_match_onnxruntime() -> None:
    import onnxruntime as ort

    for level in GraphOptimizationLevel:
        assert int(level) == int(getattr(ort.GraphOptimizationLevel, level.name))
    for mode in ExecutionMode:
        assert int(mode) == int(getattr(ort.ExecutionMode, mode.name))


@pytest.mark.parametrize(
    ("level", "name"),
    [
        (GraphOptimizationLevel.ORT_DISABLE_ALL, "disabled"),
        (GraphOptimizationLevel.ORT_ENABLE_BASIC, "basic"),
        (GraphOptimizationLevel.ORT_ENABLE_EXTENDED, "extended"),
        (GraphOptimizationLevel.ORT_ENABLE_LAYOUT, "layout"),
        (GraphOptimizationLevel.ORT_ENABLE_ALL, "all"),
        (0, "disabled"),
        (1, "basic"),
        (2, "extended"),
        (3, "layout"),
        (99, "all"),
    ],
)
def test_levels(level: Any, name: str) -> None:
    opts = SessionOptions()
    opts.graph_optimization_level = level
    assert opts.to_ort()["graphOptimizationLevel"] == name


@pytest.mark.parametrize("level", [4, -1, 98, "all", None, 1.5])
def test_bad_level(level: Any) -> None:
    opts = SessionOptions()
    opts.graph_optimization_level = level
    with pytest.raises(InvalidArgument, match="graph_optimization_level"):
        opts.to_ort()


def test_all_fields_mapped() -> None:
    opts = SessionOptions()
    opts.graph_optimization_level = GraphOptimizationLevel.ORT_ENABLE_BASIC
    opts.log_severity_level = 0
    opts.log_verbosity_level = 3
    opts.enable_mem_pattern = 1  # type: ignore[assignment]
    opts.enable_cpu_mem_arena = True
    opts.execution_mode = ExecutionMode.ORT_PARALLEL
    assert opts.to_ort() == {
        "graphOptimizationLevel": "basic",
        "logSeverityLevel": 0,
        "logVerbosityLevel": 3,
        "enableMemPattern": True,
        "enableCpuMemArena": True,
        "executionMode": "parallel",
    }
    assert opts.to_ort()["enableMemPattern"] is True


@pytest.mark.parametrize("severity", [0, 1, 2, 3, 4])
def test_good_severity(severity: int) -> None:
    opts = SessionOptions()
    opts.log_severity_level = severity
    assert opts.to_ort()["logSeverityLevel"] == severity
    run = RunOptions()
    run.log_severity_level = severity
    assert run.to_ort()["logSeverityLevel"] == severity


@pytest.mark.parametrize("severity", [-1, 5, True, False, 2.0, "2", None])
def test_bad_severity(severity: Any) -> None:
    opts = SessionOptions()
    opts.log_severity_level = severity
    with pytest.raises(InvalidArgument, match=r"log_severity_level: expected an int from 0"):
        opts.to_ort()
    run = RunOptions()
    run.log_severity_level = severity
    with pytest.raises(InvalidArgument, match=r"log_severity_level"):
        run.to_ort()


def test_bad_execution_mode() -> None:
    opts = SessionOptions()
    opts.execution_mode = 5  # type: ignore[assignment]
    with pytest.raises(InvalidArgument, match="execution_mode"):
        opts.to_ort()


def test_free_dimension_overrides() -> None:
    opts = SessionOptions()
    assert "freeDimensionOverrides" not in opts.to_ort()
    opts.add_free_dimension_override_by_name("batch", 4)
    opts.add_free_dimension_override_by_name("seq", 0)
    opts.add_free_dimension_override_by_name("batch", 2)
    assert opts.to_ort()["freeDimensionOverrides"] == {"batch": 2, "seq": 0}
    copy = opts.free_dimension_overrides
    copy["batch"] = 99
    assert opts.free_dimension_overrides == {"batch": 2, "seq": 0}
    ort_dims = opts.to_ort()["freeDimensionOverrides"]
    ort_dims["seq"] = 7
    assert opts.to_ort()["freeDimensionOverrides"] == {"batch": 2, "seq": 0}


@pytest.mark.parametrize("value", [-1, 2.0, "3", None, True])
def test_bad_free_dimension_value(value: Any) -> None:
    opts = SessionOptions()
    with pytest.raises(InvalidArgument, match=r"dim_value for 'batch'"):
        opts.add_free_dimension_override_by_name("batch", value)
    assert opts.free_dimension_overrides == {}


@pytest.mark.parametrize("name", ["", None, 3])
def test_bad_free_dimension_name(name: Any) -> None:
    with pytest.raises(InvalidArgument, match="dim_name"):
        SessionOptions().add_free_dimension_override_by_name(name, 1)


def test_run_options() -> None:
    run = RunOptions()
    assert run.to_ort() == {"logSeverityLevel": 2, "logVerbosityLevel": 0, "tag": ""}
    run.log_severity_level = 4
    run.log_verbosity_level = 1
    run.tag = 17  # type: ignore[assignment]
    assert run.to_ort() == {"logSeverityLevel": 4, "logVerbosityLevel": 1, "tag": "17"}


def test_package_exports() -> None:
    assert ortweb.SessionOptions is SessionOptions
    assert ortweb.RunOptions is RunOptions
    assert ortweb.GraphOptimizationLevel is GraphOptimizationLevel
    assert ortweb.ExecutionMode is ExecutionMode


# -- providers --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "want"),
    [
        ("wasm", "wasm"),
        ("WASM", "wasm"),
        ("cpu", "wasm"),
        ("CPUExecutionProvider", "wasm"),
        ("WasmExecutionProvider", "wasm"),
        ("webgpu", "webgpu"),
        ("WebGPU", "webgpu"),
        ("WebGpuExecutionProvider", "webgpu"),
        ("JsExecutionProvider", "webgpu"),
        (("CPUExecutionProvider", {}), "wasm"),
        (("WebGpuExecutionProvider", {"preferredLayout": "NHWC"}), "webgpu"),
    ],
)
def test_aliases(name: Any, want: str) -> None:
    assert normalize_provider(name) == want
    assert normalize_providers([name]) == [want]


def test_str_means_one_provider() -> None:
    assert normalize_providers("CPUExecutionProvider") == ["wasm"]
    assert normalize_providers("webgpu") == ["webgpu"]


def test_order_kept_and_deduplicated() -> None:
    assert normalize_providers(["wasm", "webgpu"]) == ["wasm", "webgpu"]
    assert normalize_providers(["webgpu", "wasm"]) == ["webgpu", "wasm"]
    assert normalize_providers(
        ["CPUExecutionProvider", "wasm", ("cpu", {}), "WebGpuExecutionProvider", "webgpu"]
    ) == ["wasm", "webgpu"]
    assert normalize_providers(("webgpu", "webgpu")) == ["webgpu"]


def test_default() -> None:
    assert DEFAULT_PROVIDERS == ("webgpu", "wasm")
    assert {normalize_provider(n) for n in ("CPUExecutionProvider", "webgpu")} == {"webgpu", "wasm"}
    assert normalize_providers(None) == ["webgpu", "wasm"]
    assert normalize_providers(None, ["wasm"]) == ["wasm"]
    assert normalize_providers(None, ("CPUExecutionProvider", "webgpu")) == ["wasm", "webgpu"]
    # An empty page default means "no preference", not "no providers".
    assert normalize_providers(None, []) == ["webgpu", "wasm"]
    assert normalize_providers(["wasm"], ["webgpu"]) == ["wasm"]


def test_result_is_a_fresh_list() -> None:
    first = normalize_providers(None)
    first.append("x")
    assert normalize_providers(None) == ["webgpu", "wasm"]


@pytest.mark.parametrize("bad", ["cuda", "CUDAExecutionProvider", "", "web gpu"])
def test_unknown_name(bad: str) -> None:
    with pytest.raises(InvalidArgument) as info:
        normalize_providers(["wasm", bad])
    message = str(info.value)
    assert repr(bad) in message
    assert "'webgpu'" in message and "'wasm'" in message


@pytest.mark.parametrize("bad", [[3], [None], [("wasm",)], [["wasm"]], [("a", "b", "c")]])
def test_non_str_entries(bad: list[Any]) -> None:
    with pytest.raises(InvalidArgument, match="providers: expected provider names"):
        normalize_providers(bad)


def test_empty_list() -> None:
    with pytest.raises(InvalidArgument, match="empty"):
        normalize_providers([])
    with pytest.raises(InvalidArgument, match="empty"):
        normalize_providers(())


@pytest.mark.parametrize("bad", [3, {"wasm": {}}, {"wasm"}, object()])
def test_not_a_list(bad: Any) -> None:
    with pytest.raises(InvalidArgument, match=rf"got {type(bad).__name__}"):
        normalize_providers(bad)
