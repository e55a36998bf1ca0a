"""An engine's operator table, made from its run of the ONNX node suite.

Each single-operator case of the suite counts for its operator at the version of
the operator its model uses: passed, ran with wrong values, or failed with an error
(cases native onnxruntime fails, whose types ortweb cannot carry, or that ortweb
refused before the engine saw them, do not count). The engines see each case as a
real model holds the operator: inputs after the first as initializers
(``cases.constant_inputs``). ``ortweb conformance --op-table PATH`` writes the
table; ``py/ortweb/_engines.py`` reads the shipped ones
(``py/ortweb/_engine_ops/<engine>.json``) to refuse a model before the engine loads.

Versions matter: the suite holds cases of an operator's newest versions only, and
an engine may run an older one (tract 0.4's ``Unsqueeze`` takes ``axes`` as an
attribute, as before opset 13, and fails every case of ``Unsqueeze``-13). Versions
are told apart by their signature (:func:`_history`); a model whose opset picks a
version the suite never measured is left to the engine.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any

from ..._engines import op_version
from .classify import Status
from .runner import CaseResult

__all__ = ["op_table", "write_op_table"]


def _key(domain: str, op: str) -> str:
    return op if domain in ("", "ai.onnx") else f"{domain}.{op}"


def _signature(schema: Any) -> tuple[Any, ...]:
    return (tuple((i.name, int(i.option)) for i in schema.inputs),
            tuple((o.name, int(o.option)) for o in schema.outputs),
            tuple(sorted(schema.attributes)))


@cache
def _history() -> dict[str, tuple[list[int], list[int]]]:
    """Operator (``_key``) → the opsets where its signature (inputs, outputs,
    attributes) changes, and the opsets of all its versions, from onnx's schemas.

    Versions that only add types (``Unsqueeze``-21, -23, -24, -25 after -13) count as
    one: the suite's cases, made at the newest opset, then say what an engine does
    with the older version of the same signature that a real model uses.
    """
    import onnx.defs

    schemas: dict[str, list[Any]] = {}
    for schema in onnx.defs.get_all_schemas_with_history():
        schemas.setdefault(_key(schema.domain, schema.name), []).append(schema)
    history: dict[str, tuple[list[int], list[int]]] = {}
    for key, versions in schemas.items():
        versions.sort(key=lambda s: s.since_version)
        history[key] = ([s.since_version for i, s in enumerate(versions)
                         if i == 0 or _signature(s) != _signature(versions[i - 1])],
                        [s.since_version for s in versions])
    return history


def op_table(results: Sequence[CaseResult], meta: Mapping[str, Any]) -> dict[str, Any]:
    """The operator table of one provider's results.

    Returns
    -------
    dict
        ``meta`` (how it was measured) and ``ops``: operator (``'Relu'``, or
        ``'domain.Op'`` outside the default domain) → ``since`` (the opsets where
        each of its signatures begins), ``schemas`` (the opsets of all its
        versions, which messages name) and ``versions``: signature (its first
        ``since_version``, a string) → ``pass``, ``wrong``, ``error`` (case counts)
        and ``wrong_cases`` (their names).
    """
    ops: dict[str, dict[str, Any]] = {}
    for r in results:
        kinds = {(d, o) for d, o, _ in r.case.ops}
        if len(kinds) != 1 or r.status in (Status.NATIVE_FAILS, Status.UNSUPPORTED):
            continue
        if r.browser is not None and r.browser.error_type == "ProviderUnavailable":
            continue  # ortweb refused it before the engine saw it: says nothing of the op
        domain, op = kinds.pop()
        key = _key(domain, op)
        opset = max(v for _, _, v in r.case.ops)
        since, schemas = _history().get(key, ([], []))
        entry = ops.setdefault(key, {"since": since, "schemas": schemas, "versions": {}})
        counts = entry["versions"].setdefault(str(op_version(entry["since"], opset)), {
            "pass": 0, "wrong": 0, "error": 0, "wrong_cases": []})
        if r.status is Status.PASS:
            counts["pass"] += 1
        elif r.browser is not None and r.browser.ok:
            counts["wrong"] += 1
            counts["wrong_cases"].append(r.case.name)
        else:
            counts["error"] += 1
    for entry in ops.values():
        entry["versions"] = dict(sorted(entry["versions"].items(), key=lambda kv: int(kv[0])))
    return {"meta": dict(meta), "ops": dict(sorted(ops.items()))}


def write_op_table(path: Path, results: Sequence[CaseResult], meta: Mapping[str, Any]) -> str:
    """Write :func:`op_table` to ``path``; returns a one-line summary."""
    table = op_table(results, meta)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(table, indent=1, sort_keys=False) + "\n")
    versions = [c for e in table["ops"].values() for c in e["versions"].values()]
    ok = sum(1 for c in versions if c["pass"] and not c["wrong"])
    wrong = sum(1 for c in versions if c["wrong"])
    none = sum(1 for c in versions if not c["pass"] and not c["wrong"])
    return (f"op table {path}: {len(table['ops'])} operators in {len(versions)} versions, "
            f"{ok} ran right, {wrong} gave wrong values in some case, {none} never ran")
