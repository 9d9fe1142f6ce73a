"""A layer's spectrum and the shape of its sentences (beyond the paper): matrix entropy,
the power-law decay of the eigenspectrum, and the curvature of a sentence's trajectory.

Matrix-based Rényi entropy of order α = 1 (Skean et al., ICML 2025, "Layer by Layer"):
rows are centered and scaled to norm 1 (their ``normalize``), K = ZZᵀ their Gram matrix
over its trace, λ its eigenvalues, and

    S(K) = −Σ λ_i ln λ_i        (nats; 0 for one direction, ln r for r equal ones),

computed from the d × d matrix ZᵀZ where the rows outnumber the dimensions (the same
nonzero eigenvalues). Their code also clamps the Gram matrix's negative entries to 0 before
its eigenvalues; that is not the matrix the definition names, and it is not done here.

α-ReQ (Agrawal et al., NeurIPS 2022, fitted as reptrix fits it): the slope α of
log(λ_i / Σλ) against −log i over ranks i = 6 … 100 of the covariance eigenvalues, by least
squares weighted 1/i: a flat spectrum has α near 0, a fast-decaying one α above 1.
reptrix's `get_alpha` starts at rank 11 unless given another range, so its default call
gives another α on the same spectrum.

Curvature (Skean et al.): a sentence's rows in order, normalised as above, their
consecutive differences v_k = x_k − x_{k−1}, and the mean over k of
arccos(|v_{k+1}·v_k| / (‖v_{k+1}‖‖v_k‖)) in radians (0: a straight trajectory; π/2 at most).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from contextuality.rows import groups_by_size

# The ranks α-ReQ is fitted over (1-based; reptrix 0.1.0's `get_alpha` fits 11 to 100 by
# default) and the fewest it fits.
ALPHA_REQ_RANKS = (6, 100)
ALPHA_REQ_MIN_RANKS = 10
# A direction with less variance than this many times what float16 storage's rounding adds
# is a null direction (a layer normalization's), not part of the spectrum's decay.
ROUNDING_MARGIN = 10.0


def normalized_rows(vectors: np.ndarray, dtype: type = np.float64) -> np.ndarray:
    """Rows (..., n, d) centered on their mean and scaled to norm 1 in `dtype` (a row
    equal to the mean stays zero), each stack of the leading axes on its own."""
    centered = np.array(vectors, dtype=dtype)  # a copy: the caller's rows stay as they are
    centered -= centered.mean(axis=-2, keepdims=True)
    norms = np.sqrt(np.einsum("...i,...i->...", centered, centered))[..., None]
    centered /= np.where(norms > 0, norms, 1)
    return centered


def _entropy_of(eigenvalues: np.ndarray) -> np.ndarray:
    """−Σ p ln p of the positive eigenvalues (..., r) over their sum (NaN where none are),
    in float64; an eigenvalue within the solver's rounding of 0 (r · eps of its dtype times
    the largest) counts as 0."""
    floor = eigenvalues.shape[-1] * np.finfo(eigenvalues.dtype).eps
    eigenvalues = eigenvalues.astype(np.float64)
    floor = floor * eigenvalues.max(axis=-1, keepdims=True)
    positive = np.where(eigenvalues > floor, eigenvalues, 0.0)
    totals = positive.sum(axis=-1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        shares = positive / totals
        terms = np.where(shares > 0, shares * np.log(np.where(shares > 0, shares, 1.0)), 0.0)
    return np.where(totals[..., 0] > 0, -terms.sum(axis=-1), np.nan)


def matrix_entropy(rows: np.ndarray) -> float:
    """S(K) of the trace-normalised Gram matrix of `rows` (n, d), as they are (NaN without
    a nonzero row)."""
    gram = rows.T @ rows if len(rows) > rows.shape[1] else rows @ rows.T
    return float(_entropy_of(np.linalg.eigvalsh(gram)))


def dataset_entropy(vectors: np.ndarray) -> float:
    """Matrix entropy of rows (n, d) after `normalized_rows`."""
    return matrix_entropy(normalized_rows(vectors))


def _curvatures(unit: np.ndarray, zero_steps: str) -> np.ndarray:
    """Mean angle between consecutive steps of normalised rows (..., n, d), n ≥ 3; where a
    step is zero, NaN (`zero_steps` ``leave_out``) or that angle 0 (``zero``, Skean et
    al.'s ``compute_curvature``)."""
    steps = np.diff(unit, axis=-2)
    norms = np.linalg.norm(steps, axis=-1)
    products = norms[..., 1:] * norms[..., :-1]
    dots = np.abs(np.sum(steps[..., 1:, :] * steps[..., :-1, :], axis=-1))
    with np.errstate(divide="ignore", invalid="ignore"):
        angles = np.arccos(np.clip(dots / products, -1.0, 1.0))
    if zero_steps == "zero":
        return np.where(products > 0, angles, 0.0).mean(axis=-1)
    return np.where(np.all(products > 0, axis=-1), angles.mean(axis=-1), np.nan)


def curvature(rows: np.ndarray, zero_steps: str) -> float:
    """Mean angle (radians) between consecutive differences of `rows` (n, d) in order,
    normalised first; NaN below 3 rows; a zero difference as `_curvatures` takes it."""
    if len(rows) < 3:
        return float("nan")
    return float(_curvatures(normalized_rows(rows), zero_steps))


@dataclass(frozen=True)
class SentenceShapes:
    """Per sentence (n_sentences,): the matrix entropy of its own rows after
    `normalized_rows` (NaN for one row), the `curvature` of its rows in order, and the mean
    of its rows (n_sentences, d), of the rows read as float32 (exact for float16 shards),
    summed in float64."""

    entropies: np.ndarray
    curvatures: np.ndarray
    means: np.ndarray


def sentence_shapes(vectors: np.ndarray, starts: np.ndarray, zero_steps: str) -> SentenceShapes:
    """`SentenceShapes` of rows (n, d), the rows of sentence s ``starts[s]:starts[s + 1]``:
    the sentences of one length at a time, batched, their unit rows in float32, from one
    read of every row; a zero step in a curvature as `_curvatures` takes it."""
    entropies = np.full(len(starts), np.nan)
    curvatures = np.full(len(starts), np.nan)
    means = np.zeros((len(starts), vectors.shape[1]))
    for chosen, stacked in groups_by_size(vectors, starts, dtype=np.float32):
        if stacked is None:  # a length no other sentence has, or longer than d
            edges = np.append(starts, len(vectors))
            for sentence in chosen:
                rows = vectors[edges[sentence] : edges[sentence + 1]]
                means[sentence] = rows.mean(axis=0, dtype=np.float64)
                entropies[sentence] = dataset_entropy(rows) if len(rows) > 1 else np.nan
                curvatures[sentence] = curvature(rows, zero_steps)
            continue
        means[chosen] = stacked.mean(axis=1, dtype=np.float64)
        if stacked.shape[1] < 2:
            continue
        unit = normalized_rows(stacked, np.float32)  # float32 holds their angles and Gram
        gram = unit @ np.swapaxes(unit, -1, -2)
        entropies[chosen] = _entropy_of(np.linalg.eigvalsh(gram))
        if stacked.shape[1] >= 3:
            curvatures[chosen] = _curvatures(unit, zero_steps)
    return SentenceShapes(entropies, curvatures, means)


def rounding_floor(mean_square: float) -> float:
    """The variance below which a covariance direction is storage rounding (`alpha_req`):
    `ROUNDING_MARGIN` times what rounding to float16 (the shards' dtype; eps 9.8e-4) adds
    along a unit direction, eps²/12 · the rows' mean squared coordinate `mean_square`. A
    layer normalization's output lies on a hyperplane: the variance along its normal is
    that rounding alone (3.8e-8 in a 64-wide random BERT's embedding output, where its
    directions hold 0.11 to 2.8), and it differs between runs that round one value
    differently."""
    return ROUNDING_MARGIN * float(np.finfo(np.float16).eps) ** 2 / 12 * mean_square


def alpha_req(
    eigenvalues: np.ndarray, ranks: tuple[int, int] = ALPHA_REQ_RANKS, floor: float = 0.0
) -> float:
    """α-ReQ of covariance `eigenvalues` (largest first): the weighted least-squares slope
    of log λ_i against −log i, weights 1/i, over the ranks in `ranks` (inclusive) whose
    eigenvalue is above `floor` (0, or `rounding_floor`: a null direction's eigenvalue is
    rounding, and its log would weigh on the slope); NaN with fewer than
    `ALPHA_REQ_MIN_RANKS` of them."""
    values = np.asarray(eigenvalues, dtype=np.float64)
    rank = np.arange(1, len(values) + 1)
    chosen = (rank >= ranks[0]) & (rank <= ranks[1]) & (values > max(floor, 0.0))
    if chosen.sum() < ALPHA_REQ_MIN_RANKS:
        return float("nan")
    design = np.column_stack([-np.log(rank[chosen]), np.ones(chosen.sum())])
    weights = 1.0 / rank[chosen]
    target = np.log(values[chosen] / values[values > 0].sum())
    weighted = design * weights[:, None]
    slope, _ = np.linalg.solve(design.T @ weighted, weighted.T @ target)
    return float(slope)
