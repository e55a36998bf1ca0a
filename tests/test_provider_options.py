"""ortweb's provider options: onnxruntime's two forms, checked, carried or warned about.

The bridge side (options reaching onnxruntime-web's EP) is checked in the page by
tests/test_onnxruntime_compat.py (``forceCpuNodeNames`` moves a node to the CPU).
"""

from __future__ import annotations

import warnings
from typing import Any

import pytest

from ortweb._providers import provider_options
from ortweb.errors import InvalidArgument


def test_no_options() -> None:
    assert provider_options(None) == {}
    assert provider_options(["webgpu", "wasm"]) == {}
    assert provider_options("auto") == {}


def test_tuples_and_parallel_list_agree() -> None:
    opts = {"preferredLayout": "NHWC", "validationMode": "full",
            "forceCpuNodeNames": "a\nb", "storageBufferCacheMode": "simple"}
    want = {"webgpu": {"preferredLayout": "NHWC", "validationMode": "full",
                       "forceCpuNodeNames": ["a", "b"], "storageBufferCacheMode": "simple"}}
    assert provider_options([("WebGpuExecutionProvider", opts), "wasm"]) == want
    assert provider_options(["webgpu", "wasm"], [opts, {}]) == want
    assert provider_options([("webgpu", {"forceCpuNodeNames": ["n1"]})]) == {
        "webgpu": {"forceCpuNodeNames": ["n1"]}}


@pytest.mark.parametrize(("providers", "options", "words"), [
    ([("webgpu", {"someKnob": "1", "preferredLayout": "NCHW"})], None, ["'someKnob'", "webgpu"]),
    (["CPUExecutionProvider"], [{"use_arena": "1"}], ["'use_arena'", "takes no options"]),
])
def test_unknown_options_warn_naming_them(providers: Any, options: Any, words: list[str]) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        kept = provider_options(providers, options)
    assert len(caught) == 1
    message = str(caught[0].message)
    assert all(w in message for w in words), message
    assert "someKnob" not in str(kept) and "use_arena" not in str(kept)


@pytest.mark.parametrize(("providers", "options", "words"), [
    ([("webgpu", {"preferredLayout": "NWHC"})], None, ["'preferredLayout'", "'NWHC'", "NHWC"]),
    ([("webgpu", {"validationMode": 1})], None, ["'validationMode'", "1"]),
    ([("webgpu", {"forceCpuNodeNames": [1]})], None, ["'forceCpuNodeNames'", "node names"]),
    (["webgpu"], [{}, {}], ["provider_options", "as long as providers"]),
    ([("webgpu", {})], [{}], ["only provider names"]),
    (None, [{}], ["without a list of providers"]),
    ([("webgpu", "NHWC")], None, ["expected a dict", "str"]),
])
def test_bad_options_raise(providers: Any, options: Any, words: list[str]) -> None:
    with pytest.raises(InvalidArgument) as info:
        provider_options(providers, options)
    assert all(w in str(info.value) for w in words), str(info.value)
