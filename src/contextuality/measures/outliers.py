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

from contextuality.rows import row_chunks

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


def _magnitude_counts(vectors: np.ndarray) -> np.ndarray | None:
    """How many elements of rows (n, d) have each |a|, by its float16 bit pattern (2¹⁵,):
    a non-negative float16's bits order as its value. A chunk of rows at a time; None for
    rows of a wider dtype unless every element is a float16 value exactly (a layer widened
    from its float16 shard is; a correction's rows are not)."""
    counts = np.zeros(1 << 15, dtype=np.int64)
    for chunk in row_chunks(*vectors.shape):
        block = np.asarray(vectors[chunk])
        with np.errstate(over="ignore"):  # a value beyond float16's range fails the check
            halves = block.astype(np.float16)
        if block.dtype != np.float16 and not np.array_equal(halves, block):
            return None
        bits = halves.view(np.uint16) & 0x7FFF  # |a|
        counts += np.bincount(bits.ravel(), minlength=1 << 15)
    return counts


def _median_of_counts(counts: np.ndarray) -> float:
    total = int(counts.sum())
    ranks = np.cumsum(counts)
    middle = np.searchsorted(ranks, [(total - 1) // 2, total // 2], side="right")
    return float(middle.astype(np.uint16).view(np.float16).astype(np.float64).mean())


def median_magnitude(vectors: np.ndarray) -> float:
    """The median of |a| over every element of `vectors` (n, d), the mean of the middle two
    for an even count, in float64: for float16 values from their counts by bit pattern
    (O(n·d), no sort and no copy of the whole array)."""
    counts = _magnitude_counts(vectors)
    return _exact_median(vectors) if counts is None else _median_of_counts(counts)


def _exact_median(vectors: np.ndarray) -> float:
    return float(np.median(np.abs(vectors.astype(np.float64))))


def massive_activations(
    vectors: np.ndarray, magnitude: float = MASSIVE_MAGNITUDE, ratio: float = MASSIVE_RATIO
) -> MassiveActivations:
    """The activations of rows (n, d) above `magnitude` and above `ratio` times the median
    of every |activation| (`median_magnitude`), found a chunk of rows at a time; rows of
    float16 values are read once more only where their counts by magnitude show that some
    are."""
    counts = _magnitude_counts(vectors)
    median = _exact_median(vectors) if counts is None else _median_of_counts(counts)
    threshold = max(magnitude, ratio * median)
    if counts is not None:
        magnitudes = np.arange(1 << 15, dtype=np.uint16).view(np.float16).astype(np.float64)
        if not counts[magnitudes > threshold].any():
            nothing = np.zeros(0, dtype=np.int64)
            return MassiveActivations(median, threshold, nothing, nothing, np.zeros(0))
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
