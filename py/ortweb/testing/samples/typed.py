"""One-op models over any tensor type: Identity, Cast, Add."""

from __future__ import annotations

from onnx import helper

from ._graph import ADD_TYPES, Shape, elem_type, finish, value_info

__all__ = ["add_model", "cast_model", "identity_model"]


def identity_model(type_str: str, shape: Shape) -> bytes:
    """Build ``y = Identity(x)``.

    Parameters
    ----------
    type_str : str
        An onnxruntime type string, any key of :data:`DTYPES`.
    shape : sequence of int, str or None
        Shape of ``x`` and ``y``: ints are fixed, strings are symbolic dims,
        ``None`` is an unnamed dynamic dim.

    Returns
    -------
    bytes
        The serialized model.
    """
    elem = elem_type(type_str)
    graph = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["y"])],
        "identity",
        [value_info("x", elem, shape)],
        [value_info("y", elem, shape)],
    )
    return finish(graph, f"Identity on {type_str}")


def cast_model(from_type: str, to_type: str, shape: Shape) -> bytes:
    """Build ``y = Cast(x, to=to_type)``.

    Parameters
    ----------
    from_type, to_type : str
        onnxruntime type strings (keys of :data:`DTYPES`).
    shape : sequence of int, str or None
        Shape of ``x`` and ``y``.

    Returns
    -------
    bytes
        The serialized model.
    """
    src = elem_type(from_type)
    dst = elem_type(to_type)
    graph = helper.make_graph(
        [helper.make_node("Cast", ["x"], ["y"], to=dst)],
        "cast",
        [value_info("x", src, shape)],
        [value_info("y", dst, shape)],
    )
    return finish(graph, f"Cast {from_type} -> {to_type}")


def add_model(type_str: str, shape: Shape) -> bytes:
    """Build ``y = Add(a, b)`` with ``a``, ``b`` and ``y`` of one type and shape.

    Parameters
    ----------
    type_str : str
        A numeric onnxruntime type string; ``tensor(bool)`` and
        ``tensor(string)`` are rejected because onnx's Add does not take them.
    shape : sequence of int, str or None
        Shape of all three tensors.

    Returns
    -------
    bytes
        The serialized model.

    Raises
    ------
    ValueError
        If ``type_str`` is unknown or not numeric.
    """
    elem = elem_type(type_str)
    if type_str not in ADD_TYPES:
        raise ValueError(f"onnx Add does not support {type_str}")
    graph = helper.make_graph(
        [helper.make_node("Add", ["a", "b"], ["y"])],
        "add",
        [value_info("a", elem, shape), value_info("b", elem, shape)],
        [value_info("y", elem, shape)],
    )
    return finish(graph, f"Add on {type_str}")
