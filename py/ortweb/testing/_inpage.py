"""The page's half of ``ortweb.testing``: runs inside Pyodide, never imported on the host.

The host ships this file's text once per page and executes it as the module
``_ortweb_testing`` (compiled with the file name ``<ortweb-testing>``, so its
frames can be told apart from the test's). It provides

- :func:`run`, which receives a test function's AST and pickled arguments,
  calls the function and sends back a pickled report (the return value, or the
  exception with its frames);
- the helpers that pytest's rewritten ``assert`` statements call (the names of
  ``_pytest.assertion.rewrite``), because pytest itself is not installed here;
- :func:`reset`, the per-test clean-up, and :func:`unpack`, which installs the
  project's own packages.

Only the standard library, numpy-free, is used at import time: the module must
load before anything else the test needs.
"""

from __future__ import annotations

import ast
import base64
import gc
import importlib
import inspect
import os
import pickle
import reprlib
import sys
import traceback
import zipfile
from typing import Any

HOME = "/home/pyodide"
#: Where the project's own packages are unpacked (first on ``sys.path``).
SITE = HOME + "/.ortweb-testing/site"
#: The file name this module's code carries; frames with it are the runner's.
RUNNER_FILE = "<ortweb-testing>"
#: Buffers at least this large leave the pickle and travel as raw bytes.
INLINE_LIMIT = 1 << 20
#: Stands for the detailed comparison the host adds (pytest's own explanation).
COMPARE_MARK = "<<ortweb-compare:{}>>"

_state: dict[str, Any] = {"maxsize": 240, "compares": [], "urls": []}


# -- the helpers of pytest's rewritten asserts ------------------------------------


class _SafeRepr(reprlib.Repr):
    def __init__(self, maxsize: int | None):
        super().__init__()
        self.maxstring = maxsize if maxsize is not None else 1_000_000_000
        self.maxsize = maxsize

    def repr(self, x: object) -> str:
        try:
            s = super().repr(x)
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as exc:
            s = f"<[{type(exc).__name__}({exc!s}) raised in repr()] {type(x).__name__} object>"
        return _ellipsize(s, self.maxsize)

    def repr_instance(self, x: object, level: int) -> str:
        try:
            s = repr(x)
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as exc:
            s = f"<[{type(exc).__name__}({exc!s}) raised in repr()] {type(x).__name__} object>"
        return _ellipsize(s, self.maxsize)


def _ellipsize(s: str, maxsize: int | None) -> str:
    if maxsize is not None and len(s) > maxsize:
        i = max(0, (maxsize - 3) // 2)
        j = max(0, maxsize - 3 - i)
        return s[:i] + "..." + s[len(s) - j :]
    return s


def _saferepr(obj: object) -> str:
    if inspect.ismethod(obj):
        return obj.__name__
    return _SafeRepr(_state["maxsize"]).repr(obj).replace("\n", "\\n")


def _format_assertmsg(obj: object) -> str:
    replaces = [("\n", "\n~"), ("%", "%%")]
    if not isinstance(obj, str):
        obj = _saferepr(obj)
        replaces.append(("\\n", "\n~"))
    for old, new in replaces:
        obj = obj.replace(old, new)
    return obj


def _should_repr_global_name(obj: object) -> bool:
    if callable(obj):
        return False
    try:
        return not hasattr(obj, "__name__")
    except Exception:
        return True


def _format_boolop(explanations: Any, is_or: bool) -> str:
    explanation = "(" + (" or " if is_or else " and ").join(explanations) + ")"
    return explanation.replace("%", "%%")


def _call_reprcompare(ops: Any, results: Any, expls: Any, each_obj: Any) -> str:
    i = 0
    for i in range(len(results)):
        try:
            done = not results[i]
        except Exception:
            done = True
        if done:
            break
    # pytest's detailed explanation (diffs) is computed on the host from the
    # operands; a marker line keeps its place in the message.
    index = len(_state["compares"])
    _state["compares"].append((ops[i], each_obj[i], each_obj[i + 1]))
    return str(expls[i]) + "\n~" + COMPARE_MARK.format(index)


def _call_assertion_pass(lineno: int, orig: str, expl: str) -> None:
    return None


def _check_if_assertion_pass_impl() -> bool:
    return False


def _format_explanation(explanation: str) -> str:
    raw_lines = (explanation or "").split("\n")
    lines = [raw_lines[0]]
    for values in raw_lines[1:]:
        if values and values[0] in ("{", "}", "~", ">"):
            lines.append(values)
        else:
            lines[-1] += "\\n" + values
    result = list(lines[:1])
    stack = [0]
    stackcnt = [0]
    for line in lines[1:]:
        if line.startswith("{"):
            s = "and   " if stackcnt[-1] else "where "
            stack.append(len(result))
            stackcnt[-1] += 1
            stackcnt.append(0)
            result.append(" +" + "  " * (len(stack) - 1) + s + line[1:])
        elif line.startswith("}"):
            stack.pop()
            stackcnt.pop()
            result[stack[-1]] += line[1:]
        else:
            stack[-1] += 1
            indent = len(stack) if line.startswith("~") else len(stack) - 1
            result.append("  " * indent + line[1:])
    return "\n".join(result)


# -- page state ----------------------------------------------------------------------


def reset(providers: list[str] | None) -> dict[str, int]:
    """Start a test from a known state: home directory, default providers.

    Returns what is alive at its start (see :func:`tidy`): sessions and GPU values
    or buffers that a module's fixture made before the test are not the test's.
    """
    os.makedirs(HOME, exist_ok=True)
    os.chdir(HOME)
    import ortweb

    ortweb.set_default_providers(providers)
    from ortweb import _bridge

    return _alive(_bridge.meters())


def _alive(meters: dict[str, Any]) -> dict[str, int]:
    from ortweb import _bridge

    stats = _bridge.stats()
    return {"sessions": stats["sessions"], "values": stats["values"]["gpu"],
            "buffers": meters["gpuBuffers"]}


#: Modules whose functions and classes a test must not leave replaced (monkeypatched):
#: these top-level names and their submodules (numpy: its top level only).
WATCHED = ("ortweb", "onnxruntime", "os", "sys", "json", "asyncio", "builtins")

_clean: dict[str, Any] = {}


def _callables() -> dict[str, int]:
    """``module.name`` → id of each function and class of the watched modules."""
    out: dict[str, int] = {}
    for name, module in list(sys.modules.items()):
        top = name.split(".")[0]
        if module is None or not (top in WATCHED or name == "numpy"):
            continue
        for attr, value in list(vars(module).items()):
            if callable(value) and not attr.startswith("__"):
                out[f"{name}.{attr}"] = id(value)
    return out


def _settings() -> dict[str, Any]:
    from ortweb import _bridge

    settings = dict(_bridge.settings())
    settings.pop("defaultProviders", None)  # reset() sets it for every test
    return settings


def remember() -> None:
    """Take the page's state now (just booted) as the one every test starts from."""
    import ortweb  # noqa: F401  (its modules are watched from the start)

    _clean.update(path=list(sys.path), environ=dict(os.environ), settings=_settings(),
                  callables=_callables())


async def tidy(start: dict[str, int] | None = None) -> list[str]:
    """After a test: undo what can be undone, and say what cannot.

    The working directory, ``sys.path`` and ``os.environ`` are set back. What a test
    left alive or replaced (a session, an ortweb tensor, a GPU buffer, the bridge's
    settings, a function or class of a watched module) cannot be undone from here:
    it is returned, and the host gives the next test a new page. ``start``: what
    :func:`reset` found alive when the test began (default: nothing).
    """
    from ortweb import _bridge

    os.makedirs(HOME, exist_ok=True)
    os.chdir(HOME)
    if not _clean:
        return []
    sys.path[:] = _clean["path"]
    if dict(os.environ) != _clean["environ"]:
        os.environ.clear()
        os.environ.update(_clean["environ"])
    before = start or {}
    now = _alive(_bridge.meters())
    if any(value > before.get(key, 0) for key, value in now.items()):
        # Maybe garbage not yet collected (a tensor the test dropped): collected in
        # both runtimes, then counted again. Only then: a full collection costs tens
        # of milliseconds, most of a test's overhead.
        gc.collect()
        now = _alive(await _bridge.settled_meters("ortweb.testing"))
    added = {key: value - before.get(key, 0) for key, value in now.items()}
    left = []
    if added["sessions"] > 0:
        left.append(f"{added['sessions']} inference session(s) still open")
    if added["values"] > 0:
        left.append(f"{added['values']} ortweb GPU value(s) still alive")
    if added["buffers"] > 0:
        left.append(f"{added['buffers']} GPU buffer(s) not destroyed")
    settings = _settings()
    if settings != _clean["settings"]:
        left.append(f"the bridge's settings changed: {settings} (were {_clean['settings']})")
    callables = _callables()
    patched = sorted(name for name, ident in _clean["callables"].items()
                     if callables.get(name) != ident)
    if patched:
        left.append("replaced or deleted: " + ", ".join(patched[:5])
                    + (f" and {len(patched) - 5} more" if len(patched) > 5 else ""))
    return left


def unpack(archive: str) -> list[str]:
    """Unpack a zip (a wheel, or a package the host zipped) into :data:`SITE`."""
    os.makedirs(SITE, exist_ok=True)
    with zipfile.ZipFile(archive) as zf:
        zf.extractall(SITE)
        names = sorted({n.split("/", 1)[0] for n in zf.namelist()})
    os.remove(archive)
    if SITE not in sys.path:
        sys.path.insert(0, SITE)
    importlib.invalidate_caches()
    return names


def where() -> dict[str, str]:
    """Folders the host maps back to its own files in tracebacks."""
    import ortweb

    return {"ortweb": os.path.dirname(ortweb.__file__), "site": SITE}


# -- moving bytes ---------------------------------------------------------------------


async def _fetch(url: str) -> bytearray:
    import js

    response = await js.fetch(url)
    if not response.ok:
        raise RuntimeError(f"cannot fetch {url}: HTTP {response.status}")
    buffer = await response.arrayBuffer()
    data = bytearray(buffer.byteLength)
    # One copy into writable memory: numpy arrays built on it stay writable.
    buffer.assign_to(data)
    return data


def _download(name: str, data: memoryview) -> None:
    # The host receives a download as a file, without the data ever passing
    # through JSON or base64.
    import js
    from pyodide.ffi import to_js

    blob = js.Blob.new([to_js(data)], type="application/octet-stream")
    url = js.URL.createObjectURL(blob)
    _state["urls"].append(url)
    link = js.document.createElement("a")
    link.href = url
    link.download = name
    js.document.body.appendChild(link)
    link.click()
    link.remove()


def _dumps(value: object, token: str, prefix: str) -> tuple[bytes, list[str]]:
    names: list[str] = []

    def out_of_band(buffer: pickle.PickleBuffer) -> bool:
        raw = buffer.raw()
        if raw.nbytes < INLINE_LIMIT:
            return True
        name = f"{token}-{prefix}{len(names)}.bin"
        _download(name, raw)
        names.append(name)
        return False

    return pickle.dumps(value, protocol=5, buffer_callback=out_of_band), names


# -- running a test ---------------------------------------------------------------


def _fix_ast(tree: ast.AST) -> None:
    # An AST pickled by another Python version can lack fields this one requires
    # (3.12 added ``type_params``).
    for node in ast.walk(tree):
        for name in node._fields:
            if not hasattr(node, name):
                setattr(node, name, [] if name == "type_params" else None)


def _local_reprs(frame: Any) -> dict[str, str]:
    out = {}
    for name, value in list(frame.f_locals.items()):
        if name.startswith("@"):
            continue
        out[name] = _SafeRepr(240).repr(value)
    return out


def _describe(exc: BaseException | None, showlocals: bool, seen: set[int]) -> dict | None:
    if exc is None or id(exc) in seen:
        return None
    seen.add(id(exc))
    frames = []
    tb = exc.__traceback__
    while tb is not None:
        code = tb.tb_frame.f_code
        if code.co_filename != RUNNER_FILE:
            frames.append({
                "filename": code.co_filename,
                "lineno": tb.tb_lineno,
                "name": code.co_name,
                "firstlineno": code.co_firstlineno,
                "locals": _local_reprs(tb.tb_frame) if showlocals else None,
            })
        tb = tb.tb_next
    try:
        pickled: bytes | None = pickle.dumps(exc, protocol=5)
    except Exception:
        pickled = None
    try:
        message = str(exc)
    except Exception as err:
        message = f"<str() failed: {err!r}>"
    cls = type(exc)
    return {
        "module": cls.__module__,
        "qualname": cls.__qualname__,
        "message": message,
        "exconly": "".join(traceback.format_exception_only(cls, exc)),
        "pickled": pickled,
        "frames": frames,
        "name": getattr(exc, "name", None) if isinstance(exc, NameError) else None,
        "cause": _describe(exc.__cause__, showlocals, seen),
        "context": _describe(exc.__context__, showlocals, seen),
        "suppress_context": exc.__suppress_context__,
    }


def _compares() -> list[tuple[str, bytes | None, bytes | None]]:
    out: list[tuple[str, bytes | None, bytes | None]] = []
    for op, left, right in _state["compares"]:
        pair: list[bytes | None] = []
        for value in (left, right):
            try:
                pair.append(pickle.dumps(value, protocol=5))
            except Exception:
                pair.append(None)
        out.append((op, pair[0], pair[1]))
    return out


def _load(data: bytes, buffers: list[bytearray], what: str) -> Any:
    try:
        return pickle.loads(data, buffers=buffers)
    except Exception as exc:
        raise RuntimeError(f"{what} cannot be unpickled inside the page: "
                           f"{type(exc).__name__}: {exc}") from None


async def run(payload_b64: str, urls: list[str], token: str) -> str:
    """Run one shipped test function; returns the pickled report, base64-encoded."""
    import js

    for url in _state["urls"]:
        js.URL.revokeObjectURL(url)
    _state["urls"] = []
    _state["compares"] = []
    payload = pickle.loads(base64.b64decode(payload_b64))
    _state["maxsize"] = payload["maxsize"]
    report: dict[str, Any] = {"ok": True}
    try:
        buffers = [await _fetch(url) for url in urls]
        args = []
        for data, start, stop in payload["args"]:
            args.append(_load(data, buffers[start:stop], "an argument"))
        kwargs = {}
        for name, data, start, stop in payload["kwargs"]:
            kwargs[name] = _load(data, buffers[start:stop], f"the argument {name!r}")
        del buffers
        namespace: dict[str, Any] = {
            "__name__": payload["modname"],
            "__file__": payload["filename"],
            "__builtins__": __builtins__,
        }
        for module in pickle.loads(payload["imports"]):
            _fix_ast(module)
            try:
                exec(compile(module, payload["filename"], "exec"), namespace)
            except Exception:
                pass  # host-only imports (pytest, onnxruntime, ...) are not needed here
        module = pickle.loads(payload["module"])
        _fix_ast(module)
        exec(compile(module, payload["filename"], "exec"), namespace)
        func = namespace[payload["name"]]
        value = func(None, *args, **kwargs)
        if inspect.isawaitable(value):
            value = await value
        del args, kwargs
        try:
            report["value"], report["value_files"] = _dumps(value, token, "r")
        except Exception as exc:
            raise TypeError(f"the return value ({type(value).__name__}) cannot be pickled: "
                            f"{exc}") from None
    except BaseException as exc:
        report = {
            "ok": False,
            "error": _describe(exc, payload["showlocals"], set()),
            "compares": _compares(),
        }
    finally:
        _state["compares"] = []
    return base64.b64encode(pickle.dumps(report, protocol=5)).decode("ascii")
