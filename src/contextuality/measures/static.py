"""Static word embeddings distilled from a contextual layer (paper §4.4, Table 1).

For every indexed word, its occurrence vectors at one layer form an n×d matrix X. Two
static vectors are derived from it:

- ``pc1``: the first principal direction of X (uncentered, as in the paper): the top
  right singular vector v₁, with its sign fixed so that v₁ · mean(X) ≥ 0. An SVD leaves
  the sign arbitrary, and the paper's code kept it so, which flips cosines between words.
- ``mean``: the mean of the word's occurrence vectors.

They are written in word2vec's text format by `contextuality.storage.word_vectors`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from contextuality.rows import group_sizes, groups_by_size

METHODS = ("pc1", "mean")


def first_principal_direction(matrix: np.ndarray) -> np.ndarray:
    """Unit top right singular vector of the uncentered rows, pointing along their mean."""
    matrix = np.asarray(matrix, dtype=np.float64)
    direction = np.linalg.svd(matrix, full_matrices=False)[2][0]
    return direction if direction @ matrix.mean(axis=0) >= 0 else -direction


def principal_directions_per_group(vectors: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """`first_principal_direction` of each contiguous group of rows, shape (groups, d).

    Groups of equal size n ≤ d are solved in one batched eigen-decomposition of their n×n
    Gram matrices (v₁ = Xᵀu₁ / ‖Xᵀu₁‖ for the top eigenvector u₁ of XXᵀ; see
    `contextuality.rows.groups_by_size`).
    """
    starts = np.asarray(starts, dtype=np.int64)
    sizes = group_sizes(starts, len(vectors))
    directions = np.empty((len(starts), vectors.shape[1]))
    for chosen, stacked in groups_by_size(vectors, starts):
        if stacked is None:
            for group in chosen:
                rows = vectors[starts[group] : starts[group] + sizes[group]]
                directions[group] = first_principal_direction(rows)
            continue
        top = np.linalg.eigh(stacked @ stacked.transpose(0, 2, 1))[1][:, :, -1]  # (k, n)
        found = np.einsum("kn,knd->kd", top, stacked)
        found /= np.linalg.norm(found, axis=1, keepdims=True)
        flip = np.einsum("kd,kd->k", found, stacked.mean(axis=1)) < 0
        found[flip] *= -1
        directions[chosen] = found
    return directions


def static_vectors(
    vectors: np.ndarray, occurrences: pd.DataFrame, vocab: pd.DataFrame, method: str
) -> tuple[list[str], np.ndarray]:
    """Static vectors of the indexed words of one layer, in vocabulary order.

    vectors: (n_occurrences, d) rows aligned with ``occurrences``; NaN rows are skipped.
    Returns the words and an (n_words, d) float32 matrix.
    """
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    valid = np.isfinite(vectors).all(axis=1)
    word_id = occurrences["word_id"].to_numpy()
    keep = valid & vocab["indexed"].to_numpy()[word_id]
    rows = np.flatnonzero(keep)
    rows = rows[np.argsort(word_id[rows], kind="stable")]
    ordered = word_id[rows]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]]) if len(rows) else rows
    matrix = np.asarray(vectors[rows], dtype=np.float64)
    if method == "pc1":
        result = principal_directions_per_group(matrix, starts)
    else:
        sums = np.add.reduceat(matrix, starts, axis=0) if len(rows) else matrix
        result = sums / group_sizes(starts, len(rows))[:, None]
    words = vocab["word"].to_numpy()[ordered[starts]].tolist()
    return words, result.astype(np.float32)
