"""Summary lines, per-case JSON, and the checked-in list of known failures."""

from __future__ import annotations

import json
import math
import re
import tomllib
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..browser.where import adapter_text
from .cases import Case
from .classify import Status

__all__ = ["KnownFailure", "KnownFailures", "default_known_failures_path", "summary_line",
           "write_json"]


def summary_line(suite: str, ep: str, statuses: Sequence[Status]) -> str:
    """One suite on one EP, e.g.
    ``conformance node wasm: 1650 passed, 0 failed, 180 native-fails, 54 unsupported (of 1884)``.
    """
    n = Counter(statuses)
    return (f"conformance {suite} {ep}: {n[Status.PASS]} passed, {n[Status.FAIL]} failed, "
            f"{n[Status.NATIVE_FAILS]} native-fails, {n[Status.UNSUPPORTED]} unsupported "
            f"(of {len(statuses)})")


def default_known_failures_path() -> Path:
    """``tests/conformance/known_failures.toml`` of this checkout."""
    return Path(__file__).resolve().parents[4] / "tests" / "conformance" / "known_failures.toml"


@dataclass
class KnownFailure:
    """One entry of the known-failures file.

    Attributes
    ----------
    suite : str
        A suite name, or ``'*'``.
    ep : str
        ``'wasm'``, ``'webgpu'`` or ``'*'``.
    cases : list of str
        Exact case names.
    pattern : str
        A regular expression matched (``re.fullmatch``) against case names, instead
        of or besides ``cases``.
    reason : str
        Why it fails.
    owner : str
        ``'upstream'`` (ORT-web) or ``'ortweb'``.
    upstream : str
        The upstream issue, e.g. ``'microsoft/onnxruntime#12345'``, when there is one.
    adapter : str
        When set, the entry holds only where the case ran on a WebGPU adapter whose
        vendor, architecture, device or description contains it (case-insensitive),
        e.g. ``'swiftshader'``: a SwiftShader-only failure is not excused on a real GPU.
    """

    suite: str
    ep: str
    reason: str
    owner: str = "upstream"
    upstream: str = ""
    cases: list[str] = field(default_factory=list)
    pattern: str = ""
    adapter: str = ""
    matched: set[str] = field(default_factory=set)

    def matches(self, case: Case, ep: str, where: dict[str, Any] | None = None) -> bool:
        """Whether the entry lists ``case`` on ``ep``, run where ``where`` says
        (:mod:`ortweb.host.browser.where`; None: unknown, and an adapter-scoped
        entry does not hold)."""
        if self.suite not in ("*", case.suite) or self.ep not in ("*", ep):
            return False
        if self.adapter and self.adapter.lower() not in adapter_text(where).lower():
            return False
        return case.name in self.cases or bool(
            self.pattern and re.fullmatch(self.pattern, case.name)
        )

    def describe(self) -> str:
        text = f"{self.owner}: {self.reason}"
        if self.adapter:
            text += f" [adapter {self.adapter}]"
        return f"{text} ({self.upstream})" if self.upstream else text


class KnownFailures:
    """The known-failures file: every remaining ``fail`` with its reason."""

    def __init__(self, entries: Sequence[KnownFailure] = ()):
        self.entries = list(entries)

    @classmethod
    def load(cls, path: Path) -> KnownFailures:
        """Read ``path`` (TOML, ``[[fail]]`` tables); a missing file is an empty list."""
        if not path.exists():
            return cls()
        data = tomllib.loads(path.read_text())
        entries = []
        for i, raw in enumerate(data.get("fail", [])):
            unknown = set(raw) - {"suite", "ep", "cases", "pattern", "reason", "owner",
                                  "upstream", "adapter"}
            if unknown or "reason" not in raw or not (raw.get("cases") or raw.get("pattern")):
                raise ValueError(
                    f"{path}: [[fail]] #{i + 1} needs 'reason' and 'cases' or 'pattern'"
                    + (f"; unknown keys {sorted(unknown)}" if unknown else "")
                )
            if raw.get("owner", "upstream") not in ("upstream", "ortweb"):
                raise ValueError(f"{path}: [[fail]] #{i + 1}: owner is 'upstream' or 'ortweb'")
            entries.append(KnownFailure(
                suite=raw.get("suite", "*"), ep=raw.get("ep", "*"), reason=raw["reason"],
                owner=raw.get("owner", "upstream"), upstream=raw.get("upstream", ""),
                cases=list(raw.get("cases", [])), pattern=raw.get("pattern", ""),
                adapter=str(raw.get("adapter", "")),
            ))
        return cls(entries)

    def lookup(self, case: Case, ep: str, where: dict[str, Any] | None = None) -> str | None:
        """The reason ``case`` fails on ``ep`` (run where ``where`` says), when listed."""
        for entry in self.entries:
            if entry.matches(case, ep, where):
                entry.matched.add(f"{case.id} [{ep}]")
                return entry.describe()
        return None

    def stale(self, cases: Sequence[Case], eps: Sequence[str],
              failing: set[tuple[str, str]],
              wheres: dict[tuple[str, str], Any] | None = None) -> list[str]:
        """Listed cases among ``cases`` × ``eps`` that no longer fail (``failing``: id, ep;
        ``wheres``: (id, ep) → where it ran, for adapter-scoped entries)."""
        out = []
        for case in cases:
            for ep in eps:
                where = (wheres or {}).get((case.id, ep))
                for entry in self.entries:
                    if entry.matches(case, ep, where) and (case.id, ep) not in failing:
                        out.append(f"{case.id} [{ep}]")
                        break
        return out


def _plain(value: Any) -> Any:
    # Strict JSON has no NaN or Infinity; an infinite error is still worth keeping.
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def write_json(path: Path, meta: dict[str, Any], records: list[dict[str, Any]]) -> None:
    """Write ``{"meta": ..., "cases": [...]}`` (one record per case and EP), strict JSON."""
    path.parent.mkdir(parents=True, exist_ok=True)
    data = _plain({"meta": meta, "cases": records})
    path.write_text(json.dumps(data, indent=1, default=str, allow_nan=False))
