"""Large models: the memory limits checked before loading, and models over 2 GB.

Host tests cover the pure checks of :mod:`ortweb._limits` on models made by
:func:`ortweb.host.bench.models.large_model` (the bench's generator). In the
browser, a model over onnxruntime-web's 4 GiB heap (its data file a hole: nothing
is ever read) and an ``.onnx`` file over protobuf's 2 GiB are refused with
:class:`ortweb.ModelTooLarge` before any byte reaches a runtime, and the page runs
a model afterwards.

The ``bigmem`` tests load real weights of 2.5 and 3.5 GiB (up to 8 GB in the
renderer): they run only with ``ORTWEB_BIGMEM=1`` (one at a time on a machine;
wrap the run in ``flock /tmp/ortweb-bigmem.lock``), each in a page of its own.
"""

from __future__ import annotations

import os
import shutil

import numpy as np
import pytest

from ortweb import _limits
from ortweb._onnxproto import parse_model
from ortweb._policy import Plan
from ortweb.errors import ModelTooLarge, OrtRuntimeError, ProviderUnavailable
from ortweb.host.bench.models import large_input, large_model
from ortweb.testing import run_in_browser
from ortweb.testing.samples import matmul_relu_model

GiB = 1 << 30
BIGMEM = pytest.mark.skipif(os.environ.get("ORTWEB_BIGMEM") != "1",
                            reason="loads GBs of weights: set ORTWEB_BIGMEM=1 (one at a time)")


# -- host: the checks -----------------------------------------------------------------


def test_human_sizes() -> None:
    assert _limits.human(269) == "269 B"
    assert _limits.human(64 << 20) == "64.0 MiB"
    assert _limits.human(5 * GiB // 2) == "2.50 GiB"
    assert _limits.human(_limits.ORT_HEAP_MAX) == "4.00 GiB"


def test_sizes_come_from_the_models_own_description(tmp_path) -> None:
    path = large_model(1, files=2, dim=256, cache=tmp_path)  # 4 weights of 256 KiB
    sizes = _limits.model_sizes(path.stat().st_size, parse_model(path.read_bytes()))
    per = 256 * 256 * 4
    assert dict(sizes.external) == {"weights_0.bin": 2 * per, "weights_1.bin": 2 * per}
    assert sizes.total == path.stat().st_size + 4 * per
    assert (path.parent / "weights_1.bin").stat().st_size == 2 * per
    assert "512.0 KiB in 'weights_0.bin'" in sizes.parts()


def _over() -> _limits.ModelSizes:
    return _limits.ModelSizes(300, {"model.onnx.data": 9 * GiB // 2})


def test_a_model_over_the_wasm_heap_is_refused_when_wasm_is_all_there_is() -> None:
    with pytest.raises(ModelTooLarge) as info:
        _limits.fit_plan(Plan(["wasm"]), _over(), "model 'big.onnx'")
    text = str(info.value)
    for words in ("model 'big.onnx'", "4.50 GiB", "'model.onnx.data'", "4.00 GiB", "wasm32",
                  "webgpu"):
        assert words in text, words
    assert info.value.limit == _limits.ORT_HEAP_MAX and info.value.size == 9 * GiB // 2 + 300
    assert isinstance(info.value, MemoryError)


def test_over_the_wasm_heap_webgpu_is_still_tried_and_wasm_says_why_not() -> None:
    plan = _limits.fit_plan(Plan(["webgpu", "wasm"]), _over(), "m")
    assert plan.candidates == ["webgpu"] and "4.00 GiB" in plan.excluded["wasm"]
    with pytest.raises(ModelTooLarge):
        _limits.fit_plan(Plan(["webgpu", "wasm"], require="wasm"), _over(), "m")
    under = _limits.ModelSizes(300, {"d": 3 * GiB})
    assert _limits.fit_plan(Plan(["wasm"]), under, "m").candidates == ["wasm"]


def test_an_onnx_file_of_2_gib_is_refused_before_it_is_read(tmp_path) -> None:
    big = tmp_path / "big.onnx"
    with open(big, "wb") as f:
        f.truncate(_limits.PROTOBUF_MAX)  # a hole: no disk used
    with pytest.raises(ModelTooLarge, match=r"2\.00 GiB.*under 2 GiB.*save_as_external_data"):
        _limits.check_model_file(str(big), "model 'big.onnx'")
    with pytest.raises(ModelTooLarge, match="under 2 GiB"):
        _limits.check_model_size(_limits.PROTOBUF_MAX, "model 'https://x/big.onnx'")
    small = tmp_path / "small.onnx"
    small.write_bytes(b"\0" * 4096)
    _limits.check_model_file(small, "m")
    _limits.check_model_size(_limits.PROTOBUF_MAX - 1, "m")
    # URLs, bytes and missing files are left to their readers.
    _limits.check_model_file("https://example.org/big.onnx", "m")
    _limits.check_model_file(b"\0" * 10, "m")
    _limits.check_model_file(str(tmp_path / "missing.onnx"), "m")


def test_the_runtimes_bad_alloc_becomes_the_clear_error() -> None:
    sizes = _limits.ModelSizes(300, {"model.onnx.data": 7 * GiB // 2})
    exc = OrtRuntimeError("create session: Can't create a session. ERROR_CODE: 6, "
                          "ERROR_MESSAGE: std::bad_alloc", code=6, js_name="Error")
    clear = _limits.out_of_memory(exc, sizes, "model 'm.onnx'")
    assert isinstance(clear, ModelTooLarge)
    assert "3.50 GiB" in str(clear) and "4.00 GiB" in str(clear) and "bad_alloc" in str(clear)
    both = ProviderUnavailable("no provider", reasons={"wasm": "std::bad_alloc"})
    assert isinstance(_limits.out_of_memory(both, sizes, "m"), ModelTooLarge)
    assert _limits.out_of_memory(OrtRuntimeError("some other failure"), sizes, "m") is None


# -- in the browser: refused before loading ---------------------------------------------


@pytest.fixture(scope="module")
def over_limit(ortweb_runtime):
    """A model with 4.5 GiB of external data (a hole on disk), served at a URL."""
    path = large_model(4608, files=1, sparse=True)
    with ortweb_runtime.shared_folder() as (folder, prefix):
        for f in path.parent.iterdir():
            os.link(f, folder / f.name)
        yield prefix + "model.onnx"


@run_in_browser
async def _refused_then_usable(ortweb_page, url, small):
    import js
    import numpy as np

    import ortweb

    try:
        await ortweb.InferenceSession.create(js.location.origin + url, providers=["wasm"])
        got = None
    except ortweb.ModelTooLarge as exc:
        got = (type(exc).__name__, str(exc), exc.limit, exc.size)
    heap = ortweb.memory_info()["wasm_bytes"]
    # Every request the page made for this model's data file (fetch()'s resource timing).
    data = js.location.origin + url.removesuffix("model.onnx") + "model.onnx.data"
    asked = [e.name for e in js.performance.getEntriesByType("resource") if e.name == data]
    sess = await ortweb.InferenceSession.create(small, providers=["wasm"])
    (y,) = await sess.run_async(None, {"x": np.ones((1, 8), np.float32)})
    await sess.close_async()
    return got, heap, asked, y.shape


@pytest.mark.browser
def test_over_the_wasm_heap_by_url_is_refused_before_loading(ortweb_page, over_limit):
    got, heap, asked, shape = _refused_then_usable(ortweb_page, over_limit, matmul_relu_model(8))
    assert got is not None, "a 4.5 GiB model was not refused"
    name, text, limit, size = got
    assert name == "ModelTooLarge" and limit == 4 * GiB and size > 4.5 * GiB
    for words in ("4.50 GiB", "'model.onnx.data'", "4.00 GiB", "wasm32"):
        assert words in text, (words, text)
    assert heap < 1 * GiB  # nothing was fetched into the page
    assert asked == [], f"the 4.5 GiB data file was downloaded before the refusal: {asked}"
    assert shape == (1, 8)  # and the page runs a model afterwards


@run_in_browser
async def _onnx_over_2gib(ortweb_page):
    import os

    import pyodide_js

    import ortweb

    path = "/tmp/too_big.onnx"
    open(path, "wb").close()
    # From JavaScript: Python's truncate() takes no size past a 32-bit C long here.
    pyodide_js.FS.truncate(path, 2**31)
    try:
        await ortweb.InferenceSession.create(path, providers=["wasm"])
        return None
    except ortweb.ModelTooLarge as exc:
        return str(exc)
    finally:
        os.remove(path)


@pytest.mark.browser
def test_an_onnx_file_over_2_gib_by_path_is_refused_before_reading(ortweb_page):
    text = _onnx_over_2gib(ortweb_page)
    assert text is not None and "2.00 GiB" in text and "under 2 GiB" in text


# -- in the browser: real weights over 2 GiB (ORTWEB_BIGMEM=1) ---------------------------


def _native(path) -> np.ndarray:
    import onnxruntime as ort

    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    out = sess.run(None, {"x": large_input()})[0]
    del sess
    return np.asarray(out)


@run_in_browser
async def _load_and_run(ortweb_page, url, x):
    import js

    import ortweb

    source = js.location.origin + url if url.startswith("/_") else url  # else a path
    try:
        # Not kept: an off-the-record context holds OPFS in memory, GBs more here.
        sess = await ortweb.InferenceSession.create(source, providers=["wasm"], cache=False)
    except ortweb.ModelTooLarge as exc:
        return ("ModelTooLarge", str(exc)), None
    (y,) = await sess.run_async(None, {"x": x})
    await sess.close_async()
    return None, y


@pytest.fixture
def fresh_page(ortweb_module_page):
    """Every big test in a renderer of its own: ORT-web's heap never shrinks."""
    ortweb_module_page.discard("a fresh renderer for a large model")
    yield
    ortweb_module_page.discard("free the large model's memory")


@pytest.mark.browser
@BIGMEM
@pytest.mark.parametrize("files", [1, 4])
def test_a_model_over_2_gib_loads_by_url_and_equals_native(fresh_page, ortweb_runtime,
                                                          ortweb_page, files):
    path = large_model(2560, files=files)
    want = _native(path)
    with ortweb_runtime.shared_folder() as (folder, prefix):
        for f in path.parent.iterdir():
            os.link(f, folder / f.name)
        refused, y = _load_and_run(ortweb_page, prefix + "model.onnx", large_input())
    assert refused is None, refused
    np.testing.assert_allclose(y, want, rtol=1e-3, atol=1e-4)


@pytest.mark.browser
@BIGMEM
def test_a_model_that_exhausts_the_heap_fails_clearly_and_the_page_goes_on(
        fresh_page, ortweb_runtime, ortweb_page):
    path = large_model(3584, files=4)  # under 4 GiB, but not with ORT's working copies
    with ortweb_runtime.shared_folder() as (folder, prefix):
        for f in path.parent.iterdir():
            os.link(f, folder / f.name)
        refused, _ = _load_and_run(ortweb_page, prefix + "model.onnx", large_input())
        assert refused is not None and refused[0] == "ModelTooLarge", refused
        assert "3.50 GiB" in refused[1] and "bad_alloc" in refused[1], refused[1]
        small = large_model(128, files=2)
        for f in small.parent.iterdir():
            (folder / "small").mkdir(exist_ok=True)
            shutil.copyfile(f, folder / "small" / f.name)
        refused, y = _load_and_run(ortweb_page, prefix + "small/model.onnx", large_input())
    assert refused is None
    np.testing.assert_allclose(y, _native(small), rtol=1e-3, atol=1e-4)


@pytest.mark.browser
@BIGMEM
def test_a_model_over_2_gib_loads_by_path_and_equals_native(fresh_page, ortweb_runtime,
                                                           ortweb_page):
    path = large_model(2560, files=4)
    want = _native(path)
    with ortweb_runtime.shared_folder() as (folder, prefix):
        for f in path.parent.iterdir():
            os.link(f, folder / f.name)
            ortweb_page.write_file(prefix + f.name, f"/tmp/big/{f.name}")
    refused, y = _load_and_run(ortweb_page, "/tmp/big/model.onnx", large_input())
    assert refused is None, refused
    np.testing.assert_allclose(y, want, rtol=1e-3, atol=1e-4)
