"""Precompressed copies of a site's files: ``NAME.br`` and ``NAME.gz`` beside ``NAME``.

Static hosts that serve precompressed files (``ortweb serve``, nginx's
``brotli_static``/``gzip_static``, Caddy's ``precompressed``) send them with
``Content-Encoding`` to a browser that accepts it; the browser decodes them, so the
page's sha256 checks still read the file's own bytes.

Brotli at quality 11 (the strongest) and gzip at level 9 (the standard library's
strongest). Quality 11 takes about 3 s per MB of wasm here, so each compressed copy
is kept by the sha256 of its source under ``build/compressed/`` and made once per
machine; zopfli's gzip was left out: 4 % smaller than level 9 for 15 times the time,
and every browser that sends ``Accept-Encoding: gzip`` sends ``br`` too.

Quality 11 spends as long on a file that will not shrink (a model's float weights), and
its copy is then dropped, so a file of :data:`_PROBE_MIN` or more is probed first
(:func:`_estimate`): one that would not shrink is left plain, and that is kept too
(``SHA256.plain``).
"""

from __future__ import annotations

import contextlib
import gzip
import os
import shutil
import tempfile
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Final

__all__ = ["ENCODINGS", "Compressed", "compress_files"]

#: Content-Encoding token → file suffix.
ENCODINGS: Final = {"br": ".br", "gzip": ".gz"}
#: Below this, a compressed copy saves less than a round trip's worth of bytes.
_MIN_SIZE: Final = 1024
#: Formats that are compressed already (a zip, a wheel, the gzipped snapshot, images).
_PACKED: Final = frozenset({".whl", ".zip", ".gz", ".br", ".png", ".jpg", ".jpeg", ".gif",
                            ".webp", ".woff2", ".tar", ".bz2", ".xz"})
#: A copy is kept only when it is at most this share of the file.
_WORTH: Final = 0.9
#: Files this large are probed before quality 11 runs on them (:func:`_estimate`).
_PROBE_MIN: Final = 2 << 20
#: The probe reads this many windows, evenly spaced, of brotli's window size
#: (``lgwin`` 22, the default), and compresses the head of each at quality 11.
_SAMPLES: Final = 4
_WINDOW_BYTES: Final = 4 << 20
_SAMPLE_BYTES: Final = 128 << 10
#: A probed file whose estimated quality-11 copy is over this share of it is left plain
#: (the estimate's own error, on files that barely shrink, is under a hundredth).
_PLAIN_OVER: Final = _WORTH + 0.01


@dataclass(frozen=True)
class Compressed:
    """One file's compressed sizes (its encodings as written, by Content-Encoding)."""

    path: str
    size: int
    encoded: dict[str, int]


def _brotli(data: bytes) -> bytes:
    import brotli

    return bytes(brotli.compress(data, quality=11))


def _gzip(data: bytes) -> bytes:
    return gzip.compress(data, compresslevel=9, mtime=0)  # mtime 0: the same bytes each build


def _estimate(src: Path, size: int) -> float:
    """Brotli quality 11's ratio (compressed / raw) on the file ``src`` of ``size``
    bytes, estimated in a fraction of its time and memory: quality 5 on
    :data:`_SAMPLES` evenly spaced windows of :data:`_WINDOW_BYTES` (brotli's own
    window: the repeats that quality 11 would find), times quality 11's gain over 5
    on the first :data:`_SAMPLE_BYTES` of each."""
    import brotli

    step = max(_WINDOW_BYTES, size // _SAMPLES)
    raw = fast = 0
    head = bytearray()
    with open(src, "rb") as f:
        for start in range(0, size, step)[:_SAMPLES]:
            f.seek(start)
            window = f.read(_WINDOW_BYTES)
            raw += len(window)
            fast += len(brotli.compress(window, quality=5))
            head += window[:_SAMPLE_BYTES]
    sample = bytes(head)
    gain = len(brotli.compress(sample, quality=11)) / len(brotli.compress(sample, quality=5))
    return fast / raw * gain


def _kept(cache: Path, sha256: str, encoding: str) -> Path:
    """Where ``cache`` keeps the ``encoding`` copy of the file whose sha256 is given."""
    return cache / f"{sha256}{ENCODINGS[encoding]}"


def _shrinks(cache: Path, sha256: str, src: Path, size: int) -> bool:
    """Whether the file may shrink enough for its copies to be made: known from a copy
    or a ``.plain`` mark kept in ``cache``, else probed (:func:`_estimate`)."""
    plain = cache / f"{sha256}.plain"
    if plain.is_file():
        return False
    if any(_kept(cache, sha256, encoding).is_file() for encoding in ENCODINGS):
        return True
    if _estimate(src, size) <= _PLAIN_OVER:
        return True
    cache.mkdir(parents=True, exist_ok=True)
    plain.touch()
    return False


def _cached(cache: Path, sha256: str, encoding: str, src: Path) -> Path:
    """The compressed copy of ``src`` (whose sha256 is given) in ``cache``, made if new."""
    path = _kept(cache, sha256, encoding)
    if path.is_file():
        return path
    cache.mkdir(parents=True, exist_ok=True)
    # Builds at once (test workers) wait for the one that makes it rather than each
    # spending a minute on the same wasm; the rename keeps a half-written copy unseen.
    with open(cache / f".{path.name}.lock", "w") as lock:
        with contextlib.suppress(ImportError, OSError):
            import fcntl

            fcntl.flock(lock, fcntl.LOCK_EX)
        if not path.is_file():
            data = src.read_bytes()
            made = _brotli(data) if encoding == "br" else _gzip(data)
            fd, tmp = tempfile.mkstemp(dir=cache, prefix=".part-")
            with os.fdopen(fd, "wb") as f:
                f.write(made)
            os.replace(tmp, path)
    return path


def compress_files(root: Path, files: Iterable[tuple[str, int, str]], cache: Path
                   ) -> list[Compressed]:
    """Write ``.br`` and ``.gz`` beside each of ``files`` under ``root`` that gains.

    Parameters
    ----------
    root : Path
        The site folder.
    files : iterable of (path, size, sha256)
        The site's files, by their path under ``root``.
    cache : Path
        Where compressed copies are kept by their source's sha256.

    Returns
    -------
    list of Compressed
        One per file of ``files``, in order; ``encoded`` is empty for a file left plain
        (small, compressed already, or not smaller by a tenth).
    """
    todo = list(files)

    def one(item: tuple[str, int, str]) -> Compressed:
        rel, size, sha256 = item
        src = root / rel
        if size < _MIN_SIZE or src.suffix.lower() in _PACKED:
            return Compressed(rel, size, {})
        if size >= _PROBE_MIN and not _shrinks(cache, sha256, src, size):
            return Compressed(rel, size, {})
        encoded: dict[str, int] = {}
        for encoding, suffix in ENCODINGS.items():
            made = _cached(cache, sha256, encoding, src)
            length = made.stat().st_size
            if length > size * _WORTH:
                break  # gzip does no better than brotli
            shutil.copyfile(made, src.with_name(src.name + suffix))
            encoded[encoding] = length
        return Compressed(rel, size, encoded)

    # brotli and zlib release the GIL while they work.
    with ThreadPoolExecutor(max_workers=max(1, min(8, os.cpu_count() or 1))) as pool:
        return list(pool.map(one, todo))
