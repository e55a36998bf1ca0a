"""Bridge error envelopes become the most specific ortweb exception, with the code kept."""

from __future__ import annotations

import pytest

import ortweb
from ortweb import errors
from ortweb.errors import (
    InvalidArgument,
    InvalidGraph,
    ModelTooLarge,
    NoSuchFile,
    NotImplementedByRuntime,
    OrtRuntimeError,
    OrtWebError,
    OutputMismatch,
    ProviderUnavailable,
    SessionClosed,
    SyncUnavailable,
    from_envelope,
)

ALL = [
    InvalidArgument, NoSuchFile, InvalidGraph, NotImplementedByRuntime,
    ProviderUnavailable, SyncUnavailable, SessionClosed, ModelTooLarge, OutputMismatch,
    OrtRuntimeError,
]

# onnxruntime_c_api.h's OrtErrorCode, and the class each must become.
BY_CODE = {
    1: OrtRuntimeError,  # ORT_FAIL
    2: InvalidArgument,  # ORT_INVALID_ARGUMENT
    3: NoSuchFile,  # ORT_NO_SUCHFILE
    4: InvalidGraph,  # ORT_NO_MODEL
    5: OrtRuntimeError,  # ORT_ENGINE_ERROR
    6: OrtRuntimeError,  # ORT_RUNTIME_EXCEPTION
    7: InvalidGraph,  # ORT_INVALID_PROTOBUF
    8: OrtRuntimeError,  # ORT_MODEL_LOADED
    9: NotImplementedByRuntime,  # ORT_NOT_IMPLEMENTED
    10: InvalidGraph,  # ORT_INVALID_GRAPH
    11: OrtRuntimeError,  # ORT_EP_FAIL
}


@pytest.mark.parametrize(("code", "cls"), sorted(BY_CODE.items()))
def test_code_field(code: int, cls: type[OrtWebError]) -> None:
    exc = from_envelope({"name": "Error", "message": "boom", "code": code})
    assert type(exc) is cls
    assert exc.code == code
    assert exc.js_name == "Error"
    assert str(exc) == exc.message == "boom"


@pytest.mark.parametrize(("code", "cls"), sorted(BY_CODE.items()))
def test_code_in_message_text(code: int, cls: type[OrtWebError]) -> None:
    # ORT-web's wasm errors carry the status only inside the message.
    message = f"Failed to run. ERROR_CODE: {code}, ERROR_MESSAGE: something"
    exc = from_envelope({"name": "Error", "message": message})
    assert type(exc) is cls
    assert exc.code == code
    assert exc.message == message


def test_code_in_text_without_space_and_null_code() -> None:
    exc = from_envelope({"name": "Error", "message": "x ERROR_CODE:2 y", "code": None})
    assert type(exc) is InvalidArgument and exc.code == 2


def test_code_field_wins_over_text() -> None:
    exc = from_envelope({"name": "Error", "message": "ERROR_CODE: 9", "code": 3})
    assert type(exc) is NoSuchFile and exc.code == 3


def test_code_given_as_numeric_string() -> None:
    exc = from_envelope({"name": "Error", "message": "m", "code": "7"})
    assert type(exc) is InvalidGraph
    assert exc.code == 7 and isinstance(exc.code, int)


@pytest.mark.parametrize(
    ("name", "cls"),
    [
        ("InvalidArgument", InvalidArgument),
        ("NoSuchFile", NoSuchFile),
        ("InvalidGraph", InvalidGraph),
        ("NotImplemented", NotImplementedByRuntime),
        ("ProviderUnavailable", ProviderUnavailable),
        ("SessionClosed", SessionClosed),
    ],
)
def test_name_field(name: str, cls: type[OrtWebError]) -> None:
    exc = from_envelope({"name": name, "message": "because"})
    assert type(exc) is cls
    assert exc.js_name == name
    assert exc.code is None


def test_name_wins_over_code() -> None:
    exc = from_envelope({"name": "SessionClosed", "message": "m", "code": 2})
    assert type(exc) is SessionClosed
    assert exc.code == 2


def test_provider_unavailable_has_empty_reasons() -> None:
    exc = from_envelope({"name": "ProviderUnavailable", "message": "no GPU"})
    assert isinstance(exc, ProviderUnavailable)
    assert exc.reasons == {}


@pytest.mark.parametrize(
    ("message", "cls"),
    [
        ("protobuf parsing failed.", InvalidGraph),
        ("Can't create a session: PROTOBUF PARSING FAILED", InvalidGraph),
        ("Failed to load model because of reasons", InvalidGraph),
        ("Op Foo is not implemented", NotImplementedByRuntime),
        ("status NOT_IMPLEMENTED", NotImplementedByRuntime),
        ("memory access out of bounds", OrtRuntimeError),
        ("", OrtRuntimeError),
    ],
)
def test_prose_fallback(message: str, cls: type[OrtWebError]) -> None:
    exc = from_envelope({"name": "RuntimeError", "message": message})
    assert type(exc) is cls
    assert exc.code is None


def test_unknown_code_falls_back_to_prose_then_runtime_error() -> None:
    assert type(from_envelope({"message": "protobuf parsing failed", "code": 42})) is InvalidGraph
    exc = from_envelope({"message": "odd", "code": 42})
    assert type(exc) is OrtRuntimeError
    assert exc.code == 42


def test_empty_envelope() -> None:
    exc = from_envelope({})
    assert type(exc) is OrtRuntimeError
    assert exc.message == "Error"
    assert exc.js_name == "Error"
    assert exc.code is None


def test_message_defaults_to_name() -> None:
    exc = from_envelope({"name": "TypeError", "message": None})
    assert exc.message == "TypeError" and exc.js_name == "TypeError"


def test_context_prefix() -> None:
    exc = from_envelope({"name": "Error", "message": "ERROR_CODE: 2, bad"}, "run")
    assert str(exc) == "run: ERROR_CODE: 2, bad"
    assert exc.message == str(exc)
    assert type(exc) is InvalidArgument
    assert str(from_envelope({"message": "m"}, "")) == "m"


def test_context_does_not_affect_classification() -> None:
    # A context mentioning a model must not turn a generic failure into InvalidGraph.
    exc = from_envelope({"message": "boom"}, "Failed to load model x.onnx")
    assert type(exc) is OrtRuntimeError


# -- hierarchy --------------------------------------------------------------------------


@pytest.mark.parametrize("cls", ALL, ids=lambda c: c.__name__)
def test_every_class_is_an_ortweb_error(cls: type[OrtWebError]) -> None:
    assert issubclass(cls, OrtWebError)
    exc = cls("m", code=5, js_name="E")
    assert (exc.message, exc.code, exc.js_name) == ("m", 5, "E")
    assert str(exc) == "m"
    with pytest.raises(OrtWebError):
        raise exc


def test_builtin_bases() -> None:
    assert issubclass(InvalidArgument, ValueError)
    assert issubclass(NoSuchFile, FileNotFoundError)
    assert issubclass(NoSuchFile, OSError)
    assert issubclass(OrtRuntimeError, RuntimeError)
    assert issubclass(NotImplementedByRuntime, NotImplementedError)
    assert issubclass(OrtWebError, Exception)
    for cls in (InvalidGraph, ProviderUnavailable, SyncUnavailable, SessionClosed):
        assert not issubclass(cls, (ValueError, OSError, RuntimeError))
    assert not issubclass(InvalidArgument, RuntimeError)
    assert not issubclass(OrtRuntimeError, ValueError)


def test_docstring_tree_matches_classes() -> None:
    doc = errors.__doc__ or ""
    for cls in ALL:
        assert f"── {cls.__name__}" in doc
        assert cls.__bases__[0] is OrtWebError
    # Every exported class, and nothing else, hangs from the root.
    exported = {getattr(errors, n) for n in errors.__all__ if n != "from_envelope"}
    assert exported == {OrtWebError, *ALL}


def test_defaults_and_reasons() -> None:
    exc = OrtWebError("m")
    assert exc.code is None and exc.js_name is None
    reasons = {"webgpu": "no adapter"}
    pu = ProviderUnavailable("none", reasons=reasons, code=1)
    assert pu.reasons == reasons and pu.reasons is not reasons
    assert pu.code == 1


def test_no_such_file_caught_as_file_not_found() -> None:
    with pytest.raises(FileNotFoundError):
        raise from_envelope({"name": "NoSuchFile", "message": "gone.onnx"})


def test_package_reexports_the_same_classes() -> None:
    for cls in (OrtWebError, *ALL):
        assert getattr(ortweb, cls.__name__) is cls
    assert ortweb.errors is errors
