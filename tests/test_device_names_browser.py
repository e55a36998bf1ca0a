"""Device names in any case, in a real page on WebGPU (SwiftShader).

``preferred_output_location``, ``IOBinding.bind_output`` and ``OrtValue`` read one
table (``ortweb._devices``); ``preferred_output_location="WebGPU"`` used to be
refused while ``bind_output(..., "WebGPU")`` was accepted. tests/test_devices.py
checks the table itself on the host.
"""

from __future__ import annotations

import numpy as np
import pytest

from ortweb.testing import run_in_browser, samples

pytestmark = [pytest.mark.browser, pytest.mark.webgpu]


@pytest.fixture(scope="module")
def two(ortweb_module_page) -> str:
    return ortweb_module_page.put_file("two.onnx", samples.two_outputs_model())


@pytest.fixture(scope="module")
def x() -> np.ndarray:
    return np.array([[1.5, -2.0], [3.25, 4.0]], dtype=np.float32)


@run_in_browser
async def test_preferred_output_location_any_case(ortweb_page, two, x):
    import ortweb

    seen = []
    for loc in ("WebGPU", {"negated": "GPU"}, "Gpu-Buffer", "CPU"):
        sess = await ortweb.InferenceSession.create(two, providers=["webgpu"],
                                                    preferred_output_location=loc)
        outs = await sess.run_async(None, {"x": x})
        values = [(await o.get_data(release=True)) if isinstance(o, ortweb.OrtValue) else o
                  for o in outs]
        seen.append([[type(o).__name__ for o in outs],
                     [sess.output_location("double"), sess.output_location("negated")]])
        assert values[0].tolist() == (x * 2).tolist() and values[1].tolist() == (-x).tolist()
        await sess.close_async()
    assert seen == [
        [["OrtValue", "OrtValue"], ["gpu-buffer", "gpu-buffer"]],
        [["ndarray", "OrtValue"], ["cpu", "gpu-buffer"]],
        [["OrtValue", "OrtValue"], ["gpu-buffer", "gpu-buffer"]],
        [["ndarray", "ndarray"], ["cpu", "cpu"]],
    ]
    try:
        await ortweb.InferenceSession.create(two, providers=["webgpu"],
                                             preferred_output_location="TPU")
    except ortweb.InvalidArgument as exc:
        assert str(exc) == ("preferred_output_location: expected 'cpu' or 'gpu-buffer', "
                            "got 'TPU'")
    else:
        raise AssertionError("preferred_output_location='TPU' was accepted")


@run_in_browser
async def test_iobinding_and_ortvalue_any_case(ortweb_page, two, x):
    import ortweb

    sess = await ortweb.InferenceSession.create(two, providers=["webgpu"],
                                                preferred_output_location={"negated": "WEBGPU"})
    value = await ortweb.OrtValue.ortvalue_from_numpy_async(x, "WebGpu")
    binding = sess.io_binding()
    binding.bind_ortvalue_input("x", value)
    binding.bind_output("double", "CPU")
    binding.bind_output("negated", "WebGPU")
    await sess.run_with_iobinding_async(binding)
    double, negated = binding.get_outputs()
    # 'negated' has a fixed shape, so ortweb allocates its buffer (owner 'ortweb').
    assert [value.location, double.location, negated.location, negated.owner] == [
        "gpu-buffer", "cpu", "gpu-buffer", "ortweb"]
    assert double.numpy().tolist() == (x * 2).tolist()
    assert (await negated.get_data(release=True)).tolist() == (-x).tolist()
    value.dispose()
    await sess.close_async()
