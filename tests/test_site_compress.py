"""A site's precompressed copies (``ortweb.host.build.site_compress``): what would not
shrink is probed, not compressed at quality 11; what shrinks gets both copies."""

from __future__ import annotations

import gzip
import hashlib
from pathlib import Path

import brotli
import numpy as np
import pytest

from ortweb.host.build import site_compress


def _file(root: Path, name: str, data: bytes) -> tuple[str, int, str]:
    (root / name).write_bytes(data)
    return name, len(data), hashlib.sha256(data).hexdigest()


def _spy_quality_11(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    sizes: list[int] = []
    real = site_compress._brotli

    def recording(data: bytes) -> bytes:
        sizes.append(len(data))
        return real(data)

    monkeypatch.setattr(site_compress, "_brotli", recording)
    return sizes


def test_weights_that_would_not_shrink_are_probed_and_left_plain(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A model's float weights: quality 11 gets them to about 0.92 of their size, which
    # is not worth a copy, and would take a minute per 20 MB to find that out.
    weights = np.random.default_rng(0).standard_normal(3 << 18).astype(np.float32).tobytes()
    site, cache = tmp_path / "site", tmp_path / "cache"
    site.mkdir()
    item = _file(site, "model.onnx.data", weights)
    whole_runs = _spy_quality_11(monkeypatch)
    (done,) = site_compress.compress_files(site, [item], cache)
    assert done.encoded == {} and whole_runs == []
    assert sorted(p.name for p in site.iterdir()) == ["model.onnx.data"]
    assert (cache / f"{item[2]}.plain").is_file()
    # The verdict is kept: the next build does not probe again.
    monkeypatch.setattr(site_compress, "_estimate", lambda *a: pytest.fail("probed twice"))
    (again,) = site_compress.compress_files(site, [item], cache)
    assert again.encoded == {}


def test_a_large_file_that_shrinks_gets_both_copies(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    # A table whose rows repeat (quality 11 takes a moment on it, not a minute).
    rows = "".join(f"{i % 10},{i % 7},label_{i % 13}\n" for i in range(250_000)).encode()
    assert len(rows) >= site_compress._PROBE_MIN
    site, cache = tmp_path / "site", tmp_path / "cache"
    site.mkdir()
    item = _file(site, "table.csv", rows)
    assert site_compress._estimate(site / "table.csv", len(rows)) < 0.5
    whole_runs = _spy_quality_11(monkeypatch)
    (done,) = site_compress.compress_files(site, [item], cache)
    assert whole_runs == [len(rows)]
    assert set(done.encoded) == {"br", "gzip"}
    assert brotli.decompress((site / "table.csv.br").read_bytes()) == rows
    assert gzip.decompress((site / "table.csv.gz").read_bytes()) == rows
    assert not (cache / f"{item[2]}.plain").exists()
