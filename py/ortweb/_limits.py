"""The browser's memory limits a model must fit under, checked before it is loaded.

Three limits stop a large model, and each would otherwise show up as an opaque
failure deep inside a runtime (``std::bad_alloc`` from onnxruntime-web, a
``MemoryError`` or an abort from Pyodide):

- protobuf reads no message of 2 GiB or more, so an ``.onnx`` file must stay under
  it (larger models keep their weights in external data files);
- onnxruntime-web's WebAssembly heap stops at 4 GiB (wasm32), and the wasm EP
  copies every initializer into it, external data included; all the page's
  sessions share it;
- Pyodide's own heap (4 GiB too) holds none of a model opened by path or URL:
  those bytes stay in JavaScript (see :mod:`._model`), so only bytes the caller
  already holds in Python count against it.

Each check uses what is known before any byte reaches a runtime: the file's size
and the model's own description (its external tensors' lengths, see
:mod:`._onnxproto`). A model under the hard limits can
still exhaust onnxruntime-web's heap while it loads (the weights plus its working
copies); :func:`out_of_memory` turns that ``bad_alloc`` into the same clear error.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import urlparse

from ._external import URL_SCHEMES
from ._onnxproto import ModelInfo
from ._policy import Plan
from .errors import ModelTooLarge, OrtWebError

__all__ = [
    "ORT_HEAP_MAX", "PROTOBUF_MAX", "ModelSizes", "check_model_file", "check_model_size",
    "fit_plan", "human", "model_sizes", "out_of_memory",
]

#: onnxruntime-web's WebAssembly memory maximum: 65536 pages of 64 KiB (wasm32).
ORT_HEAP_MAX = 65536 * 65536
#: protobuf refuses to parse a message this large or larger.
PROTOBUF_MAX = 2**31

_OOM = re.compile(r"bad_alloc|out of memory|Cannot enlarge memory|Array buffer allocation failed",
                  re.I)


def human(nbytes: int) -> str:
    """``nbytes`` for a message: ``'2.50 GiB'``, ``'64.0 MiB'``, ``'269 B'``."""
    if nbytes >= 1 << 30:
        return f"{nbytes / (1 << 30):.2f} GiB"
    if nbytes >= 1 << 20:
        return f"{nbytes / (1 << 20):.1f} MiB"
    if nbytes >= 1 << 10:
        return f"{nbytes / (1 << 10):.1f} KiB"
    return f"{nbytes} B"


@dataclass(frozen=True)
class ModelSizes:
    """What a model brings into onnxruntime-web's heap.

    Attributes
    ----------
    model : int
        The ``.onnx`` bytes (inline initializers included).
    external : dict of str to int
        Each external data file → the bytes the model's tensors take in it.
    """

    model: int
    external: Mapping[str, int]

    @property
    def total(self) -> int:
        return self.model + sum(self.external.values())

    def parts(self) -> str:
        """``"the .onnx file 269 B + external data 2.50 GiB in 'model.onnx.data'"``."""
        files = sorted(self.external.items(), key=lambda kv: -kv[1])
        shown = ", ".join(f"{human(n)} in {name!r}" for name, n in files[:3])
        more = f" and {len(files) - 3} more files" if len(files) > 3 else ""
        text = f"the .onnx file {human(self.model)}"
        return text + (f" + external data {shown}{more}" if files else "")


def model_sizes(model_nbytes: int, model: ModelInfo | None) -> ModelSizes:
    """The sizes of a model as its own description gives them (no file is read)."""
    external: dict[str, int] = {}
    for t in model.external if model is not None else []:
        external[t.location] = external.get(t.location, 0) + (t.length or 0)
    return ModelSizes(model_nbytes, external)


def check_model_size(nbytes: int, what: str) -> None:
    """Refuse ``.onnx`` bytes protobuf cannot parse, before any runtime is given them.

    Raises
    ------
    ModelTooLarge
        For 2 GiB or more.
    """
    if nbytes >= PROTOBUF_MAX:
        raise ModelTooLarge(
            f"{what} is {human(nbytes)}, and an .onnx file must be under 2 GiB (protobuf, "
            "which onnxruntime reads it with, refuses larger messages); save the model "
            "with its weights in external data (onnx.save(model, path, "
            "save_as_external_data=True)) and open the .onnx beside its data file",
            limit=PROTOBUF_MAX, size=nbytes)


def check_model_file(source: Any, what: str) -> None:
    """:func:`check_model_size` on a model file in Pyodide's file system, before it is
    read (URLs and bytes are checked once they are there; a missing file is left to
    the reader, which names it)."""
    if not isinstance(source, str | os.PathLike):
        return
    path = os.fspath(source)
    if urlparse(path).scheme in URL_SCHEMES:
        return
    try:
        size = os.stat(path).st_size
    except OSError:
        return
    check_model_size(size, what)


def _heap_message(what: str, sizes: ModelSizes) -> str:
    return (
        f"{what} cannot fit in onnxruntime-web's WebAssembly heap on the wasm execution "
        f"provider: its weights take {human(sizes.total)} ({sizes.parts()}), and the wasm "
        f"EP copies every one into that heap, which stops at {human(ORT_HEAP_MAX)} (wasm32, "
        "shared by all the page's sessions); use smaller weights (float16, int8), or the "
        "webgpu provider, which copies the external data of the nodes it runs straight "
        "into GPU buffers"
    )


def fit_plan(plan: Plan, sizes: ModelSizes, what: str) -> Plan:
    """The provider plan without ``wasm`` when the model cannot fit in its heap.

    Raises
    ------
    ModelTooLarge
        When ``wasm`` was the only provider to try.
    """
    if sizes.total <= ORT_HEAP_MAX or "wasm" not in plan.candidates:
        return plan
    message = _heap_message(what, sizes)
    rest = [p for p in plan.candidates if p != "wasm"]
    if not rest or plan.require == "wasm":
        raise ModelTooLarge(message, limit=ORT_HEAP_MAX, size=sizes.total)
    return replace(plan, candidates=rest, excluded={**plan.excluded, "wasm": message})


def _texts(exc: OrtWebError) -> list[str]:
    reasons: Any = getattr(exc, "reasons", None) or {}
    return [exc.message, *(str(r) for r in reasons.values())]


def out_of_memory(exc: OrtWebError, sizes: ModelSizes, what: str) -> ModelTooLarge | None:
    """The clear error for a runtime that ran out of memory creating the session, or
    None when ``exc`` is something else."""
    if isinstance(exc, ModelTooLarge) or not any(_OOM.search(t) for t in _texts(exc)):
        return None
    return ModelTooLarge(
        f"{what} did not fit in onnxruntime-web's WebAssembly heap, which stops at "
        f"{human(ORT_HEAP_MAX)} (wasm32) and is shared by all the page's sessions: its "
        f"weights take {human(sizes.total)} ({sizes.parts()}), and loading needs room for "
        "them and for the runtime's working copies besides (a float32 MatMul model took "
        "1.4 times its weights); close other sessions, or use smaller weights (float16, "
        f"int8) or the webgpu provider. onnxruntime-web said: {exc.message}",
        limit=ORT_HEAP_MAX, size=sizes.total, code=exc.code, js_name=exc.js_name)
