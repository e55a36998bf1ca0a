import os

import numpy as np

import ortweb

# The site puts its model in the working directory and names it in ORTWEB_MODEL.
sess = await ortweb.InferenceSession.create(os.environ["ORTWEB_MODEL"], providers=["wasm"])
print("inputs:", sess.get_inputs())

x = np.linspace(-1.0, 1.0, 8, dtype=np.float32).reshape(1, 8)
(probabilities,) = await sess.run_async(None, {"x": x})
print("probabilities:", probabilities.round(4).tolist(), "on", sess.provider)


def classify(rows):
    """Callable from the page as window.ortweb.call("classify", rows)."""
    (out,) = sess.run(None, {"x": np.asarray(rows, np.float32)})
    return out
