"""Turn a drawing into the 64 features of scikit-learn's digits data set (numpy only).

Shipped into the digits demo's site, where the page's Python imports it; the
host tests import it too (``ortweb.host.inpage.digits_features``).

The data set's digits were scanned as 32x32 black-and-white bitmaps, the
digit scaled to fill the box, then counted in 4x4 blocks: each feature is the
number of ink pixels in one block, 0..16, on an 8x8 grid. A drawing goes the
same way: ink from the RGBA pixels, cropped to the strokes, padded to a
centred square, resampled to 32x32, thresholded, counted in 4x4 blocks.
"""

from __future__ import annotations

import numpy as np

__all__ = ["BITMAP", "GRID", "features_from_ink", "features_from_rgba", "ink_from_rgba"]

#: Side of the bitmap the data set's digits were scanned at.
BITMAP = 32
#: Side of the feature grid (BITMAP / 4).
GRID = 8

# Anti-aliased stroke edges are faint; anything above this counts as ink.
_CROP_LEVEL = 0.2
# Fraction of a bitmap cell that must be ink for the cell to be set.
_CELL_LEVEL = 0.3


def ink_from_rgba(rgba: np.ndarray | bytes | memoryview, width: int, height: int) -> np.ndarray:
    """Ink per pixel, 0..1: dark and opaque is ink; white or transparent is paper.

    Parameters
    ----------
    rgba : array-like of uint8
        ``height * width * 4`` bytes, as in a canvas ``ImageData``.
    width, height : int
        The canvas size.

    Returns
    -------
    numpy.ndarray
        float32, shape ``(height, width)``.
    """
    pixels = np.frombuffer(rgba, dtype=np.uint8) if not isinstance(rgba, np.ndarray) else rgba
    if pixels.size != width * height * 4:
        raise ValueError(f"expected {width}x{height} RGBA pixels ({width * height * 4} bytes), "
                         f"got {pixels.size}")
    img = pixels.reshape(height, width, 4).astype(np.float32) / 255.0
    darkness = 1.0 - img[..., :3].mean(axis=-1)
    return (darkness * img[..., 3]).astype(np.float32)


def _resample(square: np.ndarray, size: int) -> np.ndarray:
    """Area-average ``square`` (n x n) down to ``size`` x ``size``; nearest when n < size."""
    n = square.shape[0]
    if n < size:
        idx = np.arange(size) * n // size
        return square[np.ix_(idx, idx)]
    # intp: reduceat wants the platform index type (int32 in wasm32 Pyodide).
    edges = np.linspace(0, n, size + 1).round().astype(np.intp)
    sums = np.add.reduceat(np.add.reduceat(square, edges[:-1], axis=0), edges[:-1], axis=1)
    counts = np.diff(edges)
    return sums / np.outer(counts, counts)


def features_from_ink(ink: np.ndarray) -> np.ndarray:
    """The 64 features (float32, 0..16) of an ink image; all zeros when blank.

    Parameters
    ----------
    ink : numpy.ndarray
        2-D, values 0..1 (see :func:`ink_from_rgba`).
    """
    rows = np.flatnonzero((ink > _CROP_LEVEL).any(axis=1))
    cols = np.flatnonzero((ink > _CROP_LEVEL).any(axis=0))
    if rows.size == 0:
        return np.zeros(GRID * GRID, np.float32)
    crop = ink[rows[0]:rows[-1] + 1, cols[0]:cols[-1] + 1]
    h, w = crop.shape
    side = max(h, w)
    # Like the scans: the longer side fills the box, the other is centred.
    square = np.zeros((side, side), np.float32)
    top, left = (side - h) // 2, (side - w) // 2
    square[top:top + h, left:left + w] = crop
    bitmap = _resample(square, BITMAP) > _CELL_LEVEL
    blocks = bitmap.reshape(GRID, BITMAP // GRID, GRID, BITMAP // GRID).sum(axis=(1, 3))
    return blocks.astype(np.float32).ravel()


def features_from_rgba(
    rgba: np.ndarray | bytes | memoryview, width: int, height: int
) -> np.ndarray:
    """The 64 features of a canvas drawing (RGBA bytes); see :func:`features_from_ink`."""
    return features_from_ink(ink_from_rgba(rgba, width, height))
