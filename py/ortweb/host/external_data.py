"""The external data files a model on the host names, found beside it.

``ortweb run``, ``ortweb site`` and ``ortweb lite`` carry these files with the model,
each under the name its tensors give it (its ``location``, relative to the model's
folder), so that the model finds them beside itself in the page as it does here.
"""

from __future__ import annotations

from pathlib import Path

from .._external import check_location, tensor_list
from .._onnxproto import ExternalTensor, parse_model
from ..errors import InvalidGraph

__all__ = ["model_data_files"]


def model_data_files(model: Path, data: bytes | None = None) -> dict[str, Path]:
    """Each external data file ``model`` names (its location) → the file beside it.

    Parameters
    ----------
    model : Path
    data : bytes, optional
        The model's bytes, when the caller has read them already.

    Returns
    -------
    dict
        Empty for a model without external data, or one ortweb's reader cannot
        parse (the page then says what is wrong with it).

    Raises
    ------
    ValueError
        For a location that leaves the model's folder (``..``, absolute).
    FileNotFoundError
        For a file that is not beside the model, naming it and its tensors.
    """
    try:
        tensors = parse_model(model.read_bytes() if data is None else data,
                              what=str(model)).external
    except InvalidGraph:
        return {}
    by_location: dict[str, list[ExternalTensor]] = {}
    for t in tensors:
        by_location.setdefault(t.location, []).append(t)
    files: dict[str, Path] = {}
    for location, named in by_location.items():
        try:
            check_location(location, named[0].name, f"model {model}")
        except InvalidGraph as exc:
            raise ValueError(str(exc)) from None
        path = model.parent / location
        if not path.is_file():
            raise FileNotFoundError(
                f"external data file {path} not found: model {model} keeps "
                f"{tensor_list(named)} in {location!r}, beside itself"
            )
        files[location] = path
    return files
