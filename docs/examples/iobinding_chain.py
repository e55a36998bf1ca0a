"""IO binding from a script: run with `ortweb exec docs/examples/iobinding_chain.py --file m.onnx`.

Feeds a model from a GPU buffer the script fills itself, keeps the output on the
GPU, feeds it to the next run (no CPU round trip), reads the result, and disposes
everything it made. Prints the values and what ortweb still holds (nothing).
"""

import sys

import js
import numpy as np
from pyodide.ffi import to_js

import ortweb
from ortweb import OrtValue

model = sys.argv[1] if len(sys.argv) > 1 else "model.onnx"
x = np.array([[1.0, -2.0], [3.0, 4.0]], dtype=np.float32)

# 1. Buffers you feed must live on the device ORT's WebGPU sessions use.
device = ortweb.webgpu_device()
usage = js.GPUBufferUsage.STORAGE | js.GPUBufferUsage.COPY_SRC | js.GPUBufferUsage.COPY_DST
buffer = device.createBuffer(to_js({"size": x.nbytes, "usage": usage},
                                   dict_converter=js.Object.fromEntries))
device.queue.writeBuffer(buffer, 0, to_js(x.view(np.uint8).reshape(-1)))

# 2. Outputs stay on the GPU: ORT allocates them, you release them.
sess = ortweb.InferenceSession(model, providers=["webgpu"],
                               preferred_output_location="gpu-buffer")
with OrtValue.from_gpu_buffer(buffer, np.float32, [2, 2]) as x_gpu:  # your buffer: never destroyed
    double, negated = sess.run(None, {"x": x_gpu})
print("first run:", double.location, negated.location)

# 3. Chain: an output on the GPU is the next run's input, with no copy through the CPU.
double2, negated2 = sess.run(None, {"x": double})
print("x * 4 =", double2.numpy().tolist())           # download, keep
print("-(x * 2) =", (negated2.numpy()).tolist())

# 4. Release what ORT allocated; get_data(release=True) reads and releases at once.
for value in (double, negated, double2, negated2):
    value.dispose()
sess.close()
buffer.destroy()                                      # yours to destroy
print("live:", ortweb.live_handles())
