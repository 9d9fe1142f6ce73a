"""The unigram direction of a language model's output layer, and how a layer's rows line up
with it.

A model that ignores context does best by predicting the unigram distribution p from every
hidden state. Its output layer scores token t as E_t·h (E the (V, d) output embeddings, h a
hidden state), and softmax ignores a constant added to every score, so h predicts p when
E h = log p + c for some c. The direction it must take for that is the one
`unigram_direction` returns; `direction_cosines` says whether a layer's mean and its first
principal direction point along it, that is whether the direction all of a layer's rows
share (its anisotropy) is the unigram prior. Accumulation is in float64.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np


class DirectionCosines(NamedTuple):
    """The cosine of a layer's mean row with a direction (signed: the side the rows lean
    to), and |cos| of their first principal direction with it (a principal direction has
    no sign); NaN where the mean is zero or the rows do not vary."""

    mean: float
    first_component: float


def _unit(vector: np.ndarray, what: str) -> np.ndarray:
    """`vector` scaled to unit length; refused if it is zero or not finite."""
    norm = float(np.linalg.norm(vector))
    if not np.isfinite(norm) or norm == 0.0:
        raise ValueError(f"{what} has no direction (its norm is {norm})")
    return vector / norm


def centered_log_frequencies(counts: np.ndarray) -> np.ndarray:
    """w_t = log(c_t + 1) − mean_s log(c_s + 1) (V,): each token's add-one smoothed
    log-frequency, less its mean over the vocabulary.

    Add-one smoothing gives an unseen token a finite weight; the normalizer Σ_s (c_s + 1)
    shifts every log-frequency alike, and centering removes any such shift, so w is the
    log-frequency up to the constant softmax ignores. Hence w is unchanged when every
    c_t + 1 is multiplied by one factor, but not when the counts c_t themselves are (the
    +1 does not scale with them). counts: (V,) finite, non-negative, not all equal.
    """
    counts = np.asarray(counts, dtype=np.float64)
    if counts.ndim != 1 or len(counts) < 2:
        raise ValueError(f"counts: expected one count per token (V,), V ≥ 2, got {counts.shape}")
    if not np.all(np.isfinite(counts)) or np.any(counts < 0):
        raise ValueError("counts: every count must be finite and non-negative")
    logs = np.log1p(counts)
    return logs - logs.mean()


def unigram_direction(output_embeddings: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """The unit direction u (d,) along which a hidden state raises each token's score in
    proportion to its log-frequency: the hidden-state direction of the unigram prediction.

        u = Σ_t w_t E_t / ‖Σ_t w_t E_t‖ = Eᵀw / ‖Eᵀw‖,   w = `centered_log_frequencies`

    output_embeddings: E (V, d), row t the output embedding of token t (tied models: the
    input embeddings); counts: (V,) each token's count in the training tokens.

    Why Eᵀw: it is the gradient of w·(E h) in h, the direction that moves the scores E h
    fastest towards log p, and the least-squares solution E⁺w itself when EᵀE ∝ I (rows
    spread evenly). It needs no inversion of E, so a poorly conditioned E (a young model's)
    does not blow it up; it does not model an output bias or a transform between the layer
    and E (BERT's head has both). As Σ_t w_t = 0, adding one vector to every row of E
    leaves u unchanged. Refused where Eᵀw is zero (uniform counts give w = 0).
    """
    embeddings = np.asarray(output_embeddings, dtype=np.float64)
    if embeddings.ndim != 2:
        raise ValueError(f"output_embeddings: expected (V, d), got shape {embeddings.shape}")
    weights = centered_log_frequencies(counts)
    if len(weights) != len(embeddings):
        raise ValueError(
            f"counts has {len(weights)} tokens and output_embeddings {len(embeddings)} rows: "
            "expected one count per row"
        )
    if not np.all(np.isfinite(embeddings)):
        raise ValueError("output_embeddings: every entry must be finite")
    return _unit(embeddings.T @ weights, "the unigram direction Eᵀw")


def _cosine(vector: np.ndarray, unit: np.ndarray) -> float:
    """cos(vector, unit) for a unit vector `unit`; NaN where `vector` is zero."""
    norm = float(np.linalg.norm(vector))
    return float(vector @ unit / norm) if norm > 0 else float("nan")


def first_principal_direction(centered: np.ndarray) -> np.ndarray:
    """v₁ (d,), up to sign: the top right singular vector of centered rows X (n, d), as
    the top eigenvector of the smaller of XᵀX (d, d) and XXᵀ (n, n), v₁ = Xᵀu₁ / ‖Xᵀu₁‖ from
    the latter. A dense solve: for a hidden size in the hundreds it takes milliseconds
    where an iterative one can stall on the near-equal eigenvalues of a random model."""
    n, d = centered.shape
    if n < d:
        top = centered.T @ np.linalg.eigh(centered @ centered.T)[1][:, -1]
    else:
        top = np.linalg.eigh(centered.T @ centered)[1][:, -1]
    return top / np.linalg.norm(top)


def direction_cosines(rows: np.ndarray, direction: np.ndarray) -> DirectionCosines:
    """How a layer's rows (n, d) line up with `direction` (d,), as `DirectionCosines`.

        mean:            cos(x̄, u),  x̄ = 1/n Σ_i x_i
        first_component: |cos(v₁, u)|, v₁ the top right singular vector of the centered
                         rows X − 1x̄ᵀ (their first principal direction)

    The mean is the shared offset that makes every pair of rows alike (anisotropy); v₁ is
    the direction along which they differ most. n ≥ 2 rows, all finite.
    """
    matrix = np.asarray(rows, dtype=np.float64)
    if matrix.ndim != 2 or len(matrix) < 2:
        raise ValueError(f"rows: expected at least 2 rows (n, d), got shape {matrix.shape}")
    if not np.all(np.isfinite(matrix)):
        raise ValueError("rows: every entry must be finite")
    target = np.asarray(direction, dtype=np.float64)
    if target.shape != (matrix.shape[1],):
        raise ValueError(
            f"direction: expected shape ({matrix.shape[1]},) to match the rows, got {target.shape}"
        )
    unit = _unit(target, "direction")
    mean = matrix.mean(axis=0)
    centered = matrix - mean
    # Rows equal up to rounding leave a residue of about (n·eps)² of their sum of squares.
    rounding = (len(matrix) * np.finfo(np.float64).eps) ** 2 * np.sum(matrix**2)
    if np.sum(centered**2) <= rounding:
        return DirectionCosines(_cosine(mean, unit), float("nan"))
    first = first_principal_direction(centered)
    return DirectionCosines(_cosine(mean, unit), abs(_cosine(first, unit)))
