"""The demo's classifier: trained on scikit-learn's bundled digits, exported to ONNX, cached."""

from __future__ import annotations

import hashlib
import json
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import numpy as np

from ..build.assets import find_assets

__all__ = [
    "INPUT",
    "OUTPUT",
    "DigitsModel",
    "digits_model",
    "export_mlp",
    "native_probabilities",
    "train_digits",
]

INPUT: Final = "pixels"
OUTPUT: Final = "probabilities"

# Bump when the training or the export changes, so cached models are rebuilt.
_RECIPE: Final = {"version": 1, "hidden": 32, "max_iter": 200, "tol": 1e-3, "seed": 0,
                  "test_size": 0.25}


@dataclass(frozen=True)
class DigitsModel:
    """The trained classifier, exported, with its held-out digits.

    Attributes
    ----------
    onnx : bytes
        ``pixels`` float32 [batch, 64] (the data set's values, 0..16) →
        ``probabilities`` float32 [batch, 10].
    x_test, y_test : numpy.ndarray
        Held-out digits (float32 [n, 64]) and their labels (int64 [n]).
    accuracy : float
        Native onnxruntime's accuracy on the held-out digits.
    n_train : int
        Digits the classifier was trained on.
    """

    onnx: bytes
    x_test: np.ndarray
    y_test: np.ndarray
    accuracy: float
    n_train: int


def export_mlp(weights: list[np.ndarray], biases: list[np.ndarray], scale: float) -> bytes:
    """An ONNX model of a ReLU MLP with a softmax output (opset 17, IR 8).

    Parameters
    ----------
    weights, biases : list of numpy.ndarray
        Per layer: weights ``(n_in, n_out)`` and biases ``(n_out,)``, as
        scikit-learn's ``coefs_`` and ``intercepts_``.
    scale : float
        Input scaling the classifier was trained with (``x * scale``); folded
        into the first layer's weights.
    """
    from onnx import TensorProto, helper, numpy_helper

    from ...testing.samples import IR_VERSION, OPSET

    nodes, inits = [], []
    current = INPUT
    for i, (w, b) in enumerate(zip(weights, biases, strict=True)):
        w = np.asarray(w, np.float64) * (scale if i == 0 else 1.0)
        inits += [numpy_helper.from_array(w.astype(np.float32), f"W{i}"),
                  numpy_helper.from_array(np.asarray(b, np.float32), f"B{i}")]
        out = f"h{i}" if i < len(weights) - 1 else "logits"
        nodes.append(helper.make_node("Gemm", [current, f"W{i}", f"B{i}"], [out], name=f"dense{i}"))
        current = out
        if i < len(weights) - 1:
            nodes.append(helper.make_node("Relu", [out], [f"r{i}"], name=f"relu{i}"))
            current = f"r{i}"
    nodes.append(helper.make_node("Softmax", [current], [OUTPUT], axis=-1, name="softmax"))
    n_in, n_out = int(weights[0].shape[0]), int(weights[-1].shape[1])
    graph = helper.make_graph(
        nodes, "digits_mlp",
        [helper.make_tensor_value_info(INPUT, TensorProto.FLOAT, ["batch", n_in])],
        [helper.make_tensor_value_info(OUTPUT, TensorProto.FLOAT, ["batch", n_out])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                              ir_version=IR_VERSION, producer_name="ortweb demo")
    model.doc_string = "ortweb demo: scikit-learn MLPClassifier on the bundled digits data set"
    return bytes(model.SerializeToString())


def native_probabilities(model: bytes, x: np.ndarray) -> np.ndarray:
    """The model's probabilities from native onnxruntime (CPU)."""
    import onnxruntime as ort

    sess = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    (probabilities,) = sess.run(None, {INPUT: np.asarray(x, np.float32)})
    return np.asarray(probabilities)


def train_digits() -> DigitsModel:
    """Train the classifier on scikit-learn's bundled digits and export it."""
    from sklearn.datasets import load_digits
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.model_selection import train_test_split
    from sklearn.neural_network import MLPClassifier

    data = load_digits()
    x = data.data.astype(np.float32)
    y = data.target.astype(np.int64)
    x_train, x_test, y_train, y_test = train_test_split(
        x, y, test_size=_RECIPE["test_size"], random_state=_RECIPE["seed"], stratify=y
    )
    clf = MLPClassifier(hidden_layer_sizes=(_RECIPE["hidden"],), max_iter=_RECIPE["max_iter"],
                        tol=_RECIPE["tol"], random_state=_RECIPE["seed"])
    with warnings.catch_warnings():
        # A few hundred iterations reach the accuracy the page shows; sklearn would still warn.
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf.fit(x_train / 16.0, y_train)
    onnx_bytes = export_mlp(list(clf.coefs_), list(clf.intercepts_), 1.0 / 16.0)
    native = native_probabilities(onnx_bytes, x_test)
    expected = clf.predict_proba(x_test / 16.0)
    if not np.allclose(native, expected, rtol=1e-4, atol=1e-5):
        raise RuntimeError("the exported ONNX model disagrees with scikit-learn's predict_proba")
    accuracy = float((native.argmax(axis=1) == y_test).mean())
    return DigitsModel(onnx_bytes, x_test, y_test, accuracy, len(x_train))


def _recipe_key() -> str:
    import sklearn

    recipe = {**_RECIPE, "sklearn": sklearn.__version__, "numpy": np.__version__}
    return hashlib.sha256(json.dumps(recipe, sort_keys=True).encode()).hexdigest()[:16]


def digits_model(cache: Path | None = None) -> DigitsModel:
    """The trained model, from ``cache`` when it holds one of the same recipe.

    Parameters
    ----------
    cache : Path, optional
        Folder for ``digits.onnx`` and the held-out digits (default
        ``build/demo`` of the checkout); None-existent folders are created.
    """
    cache = cache or find_assets().root / "build" / "demo"
    meta_path, model_path, data_path = (cache / "digits.json", cache / "digits.onnx",
                                        cache / "digits-heldout.npz")
    try:
        meta = json.loads(meta_path.read_text())
        if meta["key"] == _recipe_key():
            with np.load(data_path) as data:
                return DigitsModel(model_path.read_bytes(), data["x"], data["y"],
                                   float(meta["accuracy"]), int(meta["n_train"]))
    except (OSError, ValueError, KeyError):
        pass
    model = train_digits()
    cache.mkdir(parents=True, exist_ok=True)
    model_path.write_bytes(model.onnx)
    np.savez(data_path, x=model.x_test, y=model.y_test)
    meta_path.write_text(json.dumps({"key": _recipe_key(), "accuracy": model.accuracy,
                                     "n_train": model.n_train}))
    return model
