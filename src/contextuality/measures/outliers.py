"""Massive activations (Sun et al. 2024): the few activations of a layer whose magnitude
exceeds both 100 and 1,000 times the layer's median magnitude.

Sun et al. take the median over one sequence's hidden states (every token, every
dimension); here it is over every element of the layer's occurrence vectors on the corpus,
and the activations are those of the occurrence vectors (a word's mean over its subword
pieces, where a model splits it), so a census counts occurrences of words, not tokens.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from contextuality.measures.rows import row_chunks

# The two thresholds of a massive activation: an absolute magnitude and a multiple of the
# layer's median magnitude (Sun et al. 2024).
MASSIVE_MAGNITUDE = 100.0
MASSIVE_RATIO = 1000.0


@dataclass(frozen=True)
class MassiveActivations:
    """Every massive activation of a layer's rows: its row, dimension and value, with
    the layer's median magnitude and the threshold it passed."""

    median: float
    threshold: float
    rows: np.ndarray
    dimensions: np.ndarray
    values: np.ndarray


def _magnitude_counts(vectors: np.ndarray) -> np.ndarray:
    """How many elements of float16 rows (n, d) have each |a|, by its bit pattern (2¹⁵,):
    a non-negative float16's bits order as its value. A chunk of rows at a time."""
    counts = np.zeros(1 << 15, dtype=np.int64)
    for chunk in row_chunks(*vectors.shape):
        bits = np.ascontiguousarray(vectors[chunk]).view(np.uint16) & 0x7FFF  # |a|
        counts += np.bincount(bits.ravel(), minlength=1 << 15)
    return counts


def _median_of_counts(counts: np.ndarray) -> float:
    total = int(counts.sum())
    ranks = np.cumsum(counts)
    middle = np.searchsorted(ranks, [(total - 1) // 2, total // 2], side="right")
    return float(middle.astype(np.uint16).view(np.float16).astype(np.float64).mean())


def median_magnitude(vectors: np.ndarray) -> float:
    """The median of |a| over every element of `vectors` (n, d), the mean of the middle two
    for an even count, in float64: for float16 rows from their counts by bit pattern
    (O(n·d), no sort and no copy of the whole array)."""
    if vectors.dtype != np.float16:
        return float(np.median(np.abs(vectors.astype(np.float64))))
    return _median_of_counts(_magnitude_counts(vectors))


def massive_activations(
    vectors: np.ndarray, magnitude: float = MASSIVE_MAGNITUDE, ratio: float = MASSIVE_RATIO
) -> MassiveActivations:
    """The activations of rows (n, d) above `magnitude` and above `ratio` times the median
    of every |activation| (`median_magnitude`), found a chunk of rows at a time; float16
    rows are read once more only where their counts by magnitude show that some are."""
    if vectors.dtype == np.float16:
        counts = _magnitude_counts(vectors)
        median = _median_of_counts(counts)
        threshold = max(magnitude, ratio * median)
        magnitudes = np.arange(1 << 15, dtype=np.uint16).view(np.float16).astype(np.float64)
        if not counts[magnitudes > threshold].any():
            nothing = np.zeros(0, dtype=np.int64)
            return MassiveActivations(median, threshold, nothing, nothing, np.zeros(0))
    else:
        median = median_magnitude(vectors)
        threshold = max(magnitude, ratio * median)
    rows, dimensions, values = [], [], []
    for chunk in row_chunks(*vectors.shape):
        block = np.asarray(vectors[chunk], dtype=np.float32)
        found_rows, found_dimensions = np.nonzero(np.abs(block) > threshold)
        rows.append(found_rows + chunk.start)
        dimensions.append(found_dimensions)
        values.append(block[found_rows, found_dimensions])
    return MassiveActivations(
        median,
        threshold,
        np.concatenate(rows),
        np.concatenate(dimensions),
        np.concatenate(values).astype(np.float64),
    )
