"""``SessionOptions`` and ``RunOptions``, named as in onnxruntime's Python API."""

from __future__ import annotations

from enum import IntEnum
from typing import Any

from .errors import InvalidArgument

__all__ = ["ExecutionMode", "GraphOptimizationLevel", "RunOptions", "SessionOptions"]


class GraphOptimizationLevel(IntEnum):
    """onnxruntime's graph optimisation levels."""

    ORT_DISABLE_ALL = 0
    ORT_ENABLE_BASIC = 1
    ORT_ENABLE_EXTENDED = 2
    ORT_ENABLE_LAYOUT = 3
    ORT_ENABLE_ALL = 99


class ExecutionMode(IntEnum):
    """onnxruntime's execution modes."""

    ORT_SEQUENTIAL = 0
    ORT_PARALLEL = 1


_LEVEL_NAMES = {
    GraphOptimizationLevel.ORT_DISABLE_ALL: "disabled",
    GraphOptimizationLevel.ORT_ENABLE_BASIC: "basic",
    GraphOptimizationLevel.ORT_ENABLE_EXTENDED: "extended",
    GraphOptimizationLevel.ORT_ENABLE_LAYOUT: "layout",
    GraphOptimizationLevel.ORT_ENABLE_ALL: "all",
}


def _verbosity(name: str, value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise InvalidArgument(f"{name}: expected a non-negative int, got {value!r}")
    return value


def _severity(name: str, value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= 4:
        raise InvalidArgument(
            f"{name}: expected an int from 0 (verbose) to 4 (fatal), got {value!r}"
        )
    return value


class SessionOptions:
    """Options for :class:`ortweb.InferenceSession`.

    Defaults are onnxruntime-web's, which differ from native onnxruntime's in two
    places: ``enable_mem_pattern`` and ``enable_cpu_mem_arena`` are False on the web
    (they trade memory for speed, and memory is the scarcer of the two in a tab).

    Attributes
    ----------
    graph_optimization_level : GraphOptimizationLevel
    log_severity_level : int
        0 verbose … 4 fatal (default 2, warnings).
    log_verbosity_level : int
    enable_mem_pattern : bool
    enable_cpu_mem_arena : bool
    execution_mode : ExecutionMode
    intra_op_num_threads : int
        wasm threads; 0 keeps onnxruntime-web's default. onnxruntime-web has one
        thread count per page, fixed when its runtime starts: this is the same as
        :func:`ortweb.set_num_threads`, and needs a cross-origin-isolated page.
    """

    def __init__(self) -> None:
        self.graph_optimization_level = GraphOptimizationLevel.ORT_ENABLE_ALL
        self.log_severity_level = 2
        self.log_verbosity_level = 0
        self.enable_mem_pattern = False
        self.enable_cpu_mem_arena = False
        self.execution_mode = ExecutionMode.ORT_SEQUENTIAL
        self.intra_op_num_threads = 0
        self._free_dims: dict[str, int] = {}

    def add_free_dimension_override_by_name(self, dim_name: str, dim_value: int) -> None:
        """Fix a symbolic dimension (e.g. ``'batch'``) to a size for this session."""
        if not isinstance(dim_name, str) or not dim_name:
            raise InvalidArgument(f"dim_name: expected a non-empty str, got {dim_name!r}")
        if not isinstance(dim_value, int) or isinstance(dim_value, bool) or dim_value < 0:
            raise InvalidArgument(
                f"dim_value for {dim_name!r}: expected a non-negative int, got {dim_value!r}"
            )
        self._free_dims[dim_name] = dim_value

    @property
    def free_dimension_overrides(self) -> dict[str, int]:
        """The overrides added so far (a copy)."""
        return dict(self._free_dims)

    def to_ort(self) -> dict[str, Any]:
        """The equivalent onnxruntime-web ``SessionOptions`` object (as a dict)."""
        try:
            level = _LEVEL_NAMES[GraphOptimizationLevel(self.graph_optimization_level)]
        except ValueError:
            raise InvalidArgument(
                "graph_optimization_level: expected a GraphOptimizationLevel, "
                f"got {self.graph_optimization_level!r}"
            ) from None
        try:
            mode = ExecutionMode(self.execution_mode)
        except ValueError:
            raise InvalidArgument(
                f"execution_mode: expected an ExecutionMode, got {self.execution_mode!r}"
            ) from None
        options: dict[str, Any] = {
            "graphOptimizationLevel": level,
            "logSeverityLevel": _severity("log_severity_level", self.log_severity_level),
            "logVerbosityLevel": _verbosity("log_verbosity_level", self.log_verbosity_level),
            "enableMemPattern": bool(self.enable_mem_pattern),
            "enableCpuMemArena": bool(self.enable_cpu_mem_arena),
            "executionMode": "parallel" if mode is ExecutionMode.ORT_PARALLEL else "sequential",
        }
        if self._free_dims:
            options["freeDimensionOverrides"] = dict(self._free_dims)
        return options


class RunOptions:
    """Per-run options (``log_severity_level``, ``log_verbosity_level``, ``tag``)."""

    def __init__(self) -> None:
        self.log_severity_level = 2
        self.log_verbosity_level = 0
        self.tag = ""

    def to_ort(self) -> dict[str, Any]:
        """The equivalent onnxruntime-web ``RunOptions`` object (as a dict)."""
        return {
            "logSeverityLevel": _severity("log_severity_level", self.log_severity_level),
            "logVerbosityLevel": _verbosity("log_verbosity_level", self.log_verbosity_level),
            "tag": str(self.tag),
        }
