"""The paper's measures of contextuality (Ethayarajh 2019, §3.2) and anisotropy baselines (§4.1).

Pure functions over numpy arrays. Inputs are occurrence vectors f (rows) of one layer,
grouped into contiguous runs (all occurrences of a word, or all words of a sentence)
described by ``starts``: the first row of each group, increasing, with the group ending
where the next begins. Accumulation is in float64 whatever the input dtype.

Notation: u = f / ‖f‖ is a unit vector; a *context* is a sentence.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

_ROWS_PER_CHUNK = 65_536


def unit_rows(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to unit L2 norm, as float32. Zero or non-finite rows are an error."""
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    if not np.all(np.isfinite(norms)) or np.any(norms == 0):
        raise ValueError("unit_rows: every row must be finite and non-zero")
    return vectors / norms


def group_sizes(starts: np.ndarray, n_rows: int) -> np.ndarray:
    """Length of each contiguous group given its start rows."""
    return np.diff(np.append(np.asarray(starts, dtype=np.int64), n_rows))


def _group_sums(rows: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Float64 sum of the rows of each group, shape (n_groups, d)."""
    if len(starts) == 0:
        return np.zeros((0, rows.shape[1]))
    return np.add.reduceat(rows, starts, axis=0, dtype=np.float64)


def _squared_norms(rows: np.ndarray) -> np.ndarray:
    return np.einsum("ij,ij->i", rows, rows, dtype=np.float64)


def self_similarity(
    unit: np.ndarray, word_starts: np.ndarray, context_starts: np.ndarray
) -> np.ndarray:
    """SelfSim of each word: mean cosine between its occurrences in different contexts.

    SelfSim(w) = Σ_{j,k: s_j≠s_k} u_j·u_k / #{(j,k): s_j≠s_k}
               = (‖Σ_j u_j‖² − Σ_s ‖Σ_{j∈s} u_j‖²) / (n² − Σ_s n_s²)

    exactly, in O(n·d): no pair is formed or sampled. When every occurrence is in its own
    sentence this is the paper's 1/(n²−n) Σ_{j≠k} cos(f_j, f_k).

    unit: (N, d) unit vectors sorted by (word, sentence).
    word_starts: first row of each word, shape (n_words,).
    context_starts: first row of each (word, sentence) run; includes every word start.
    Returns (n_words,) float64; NaN for a word seen in only one context.
    """
    n_rows = len(unit)
    word_sums = _group_sums(unit, word_starts)
    context_sums = _group_sums(unit, context_starts)
    context_sizes = group_sizes(context_starts, n_rows)
    word_of_context = np.searchsorted(word_starts, context_starts, side="right") - 1
    same_context_dot = np.bincount(
        word_of_context, weights=_squared_norms(context_sums), minlength=len(word_starts)
    )
    same_context_pairs = np.bincount(
        word_of_context, weights=context_sizes.astype(np.float64) ** 2, minlength=len(word_starts)
    )
    n = group_sizes(word_starts, n_rows).astype(np.float64)
    pairs = n**2 - same_context_pairs
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(pairs > 0, (_squared_norms(word_sums) - same_context_dot) / pairs, np.nan)


def intra_similarity(vectors: np.ndarray, sentence_starts: np.ndarray) -> np.ndarray:
    """IntraSim of each sentence: mean cosine of its word vectors with their mean.

    IntraSim(s) = 1/n Σ_i cos(f_i, s̄),  s̄ = 1/n Σ_i f_i  (paper §3.2, Definition 2).

    vectors: (N, d) raw (not normalized) word vectors, sentences contiguous.
    Returns (n_sentences,) float64.
    """
    vectors = np.asarray(vectors)
    n_rows = len(vectors)
    sizes = group_sizes(sentence_starts, n_rows)
    means = _group_sums(vectors, sentence_starts)
    means /= np.linalg.norm(means, axis=1, keepdims=True)
    sentence_of_row = np.repeat(np.arange(len(sizes)), sizes)
    cosines = np.empty(n_rows)
    for begin in range(0, n_rows, _ROWS_PER_CHUNK):
        end = min(begin + _ROWS_PER_CHUNK, n_rows)
        unit = unit_rows(vectors[begin:end])
        cosines[begin:end] = np.einsum(
            "ij,ij->i", unit, means[sentence_of_row[begin:end]], dtype=np.float64
        )
    return np.bincount(sentence_of_row, weights=cosines, minlength=len(sizes)) / sizes


def explained_variance_first_component(matrix: np.ndarray, centered: bool = False) -> float:
    """MEV: share of variance of the rows explained by their first principal component.

    MEV = σ₁² / Σ_i σ_i², σ the singular values of the n×d matrix (paper §3.2,
    Definition 3; uncentered as in the paper, or column-centered with ``centered``).
    Uses the eigenvalues of the n×n Gram matrix or of the d×d scatter matrix, whichever
    is smaller; both have the σ_i² as non-zero eigenvalues.
    """
    matrix = np.asarray(matrix, dtype=np.float64)
    if centered:
        matrix = matrix - matrix.mean(axis=0)
    n, d = matrix.shape
    gram = matrix @ matrix.T if n <= d else matrix.T @ matrix
    total = np.trace(gram)
    if total <= 0:
        return float("nan")
    top = np.linalg.eigvalsh(gram)[-1]
    return float(top / total)


def groups_by_size(
    vectors: np.ndarray, starts: np.ndarray
) -> Iterator[tuple[np.ndarray, np.ndarray | None]]:
    """Yield (group indices, stacked rows) for each distinct size of contiguous groups.

    Groups of one size n ≤ d that occur more than once come stacked as a (k, n, d) float64
    array, so a per-group eigenproblem can be solved for all of them in one batched call
    on their n×n Gram matrices (far faster for the many words with few occurrences).
    Other groups come with None: solve those one at a time (larger ones on the d×d scatter).
    """
    starts = np.asarray(starts, dtype=np.int64)
    sizes = group_sizes(starts, len(vectors))
    for size in np.unique(sizes):
        chosen = np.flatnonzero(sizes == size)
        if size > vectors.shape[1] or len(chosen) == 1:
            yield chosen, None
        else:
            rows = starts[chosen][:, None] + np.arange(size)
            yield chosen, np.asarray(vectors[rows], dtype=np.float64)


def explained_variance_per_group(
    vectors: np.ndarray, starts: np.ndarray, centered: bool = False
) -> np.ndarray:
    """MEV of each contiguous group of rows (e.g. all occurrences of a word), float64,
    batched over groups of equal size (see `groups_by_size`)."""
    starts = np.asarray(starts, dtype=np.int64)
    sizes = group_sizes(starts, len(vectors))
    result = np.empty(len(starts))
    for chosen, stacked in groups_by_size(vectors, starts):
        if stacked is None:
            for group in chosen:
                rows = vectors[starts[group] : starts[group] + sizes[group]]
                result[group] = explained_variance_first_component(rows, centered)
            continue
        if centered:
            stacked -= stacked.mean(axis=1, keepdims=True)
        gram = stacked @ stacked.transpose(0, 2, 1)
        totals = np.trace(gram, axis1=1, axis2=2)
        with np.errstate(invalid="ignore", divide="ignore"):
            top = np.linalg.eigvalsh(gram)[:, -1]
            result[chosen] = np.where(totals > 0, top / totals, np.nan)
    return result


def anisotropy_baseline(unit: np.ndarray, sentence_starts: np.ndarray) -> float:
    """Exact expected cosine of two random word occurrences from different sentences.

    E[cos] = (‖Σ_i u_i‖² − Σ_s ‖Σ_{i∈s} u_i‖²) / (N² − Σ_s n_s²)

    over all ordered pairs of occurrences in different sentences (paper §4.1 estimates
    this from 1,000 sampled occurrences). unit: (N, d) with sentences contiguous.
    """
    total = unit.sum(axis=0, dtype=np.float64)
    sentence_sums = _group_sums(unit, sentence_starts)
    sizes = group_sizes(sentence_starts, len(unit)).astype(np.float64)
    pairs = len(unit) ** 2 - np.sum(sizes**2)
    if pairs <= 0:
        return float("nan")
    return float((total @ total - _squared_norms(sentence_sums).sum()) / pairs)


def explained_variance_baseline(
    vectors: np.ndarray,
    sample_size: int,
    rng: np.random.Generator,
    centered: bool = False,
    n_draws: int = 0,
) -> tuple[float, np.ndarray]:
    """MEV of a uniform random sample (without replacement) of `sample_size` occurrences
    (paper §4.1), and the MEV of `n_draws` further independent samples of the same size.

    The further draws are the estimator's sampling distribution: their percentiles are an
    interval for it. (A bootstrap that resamples one sample with replacement would not do:
    repeated rows inflate the first component's share.)
    """
    size = min(sample_size, len(vectors))

    def draw() -> np.ndarray:
        return np.sort(rng.choice(len(vectors), size=size, replace=False))

    value = explained_variance_first_component(vectors[draw()], centered)
    draws = np.array([_top_component_share(vectors[draw()], centered) for _ in range(n_draws)])
    return value, draws


def _top_component_share(matrix: np.ndarray, centered: bool) -> float:
    """σ₁²/Σσ² by a truncated SVD (ARPACK, machine precision): fast for the one value."""
    from scipy.sparse.linalg import svds

    matrix = np.asarray(matrix, dtype=np.float64)
    if centered:
        matrix = matrix - matrix.mean(axis=0)
    if min(matrix.shape) < 2:
        return explained_variance_first_component(matrix)
    top = svds(matrix, k=1, return_singular_vectors=False, random_state=0)[0]
    return float(top**2 / np.sum(matrix**2))


def percentile_interval(replicates: np.ndarray, level: float) -> tuple[float, float]:
    """Equal-tailed percentile interval of bootstrap replicates (e.g. level 0.95)."""
    tail = (1.0 - level) / 2.0
    low, high = np.quantile(replicates, [tail, 1.0 - tail])
    return float(low), float(high)


def bootstrap_means(values: np.ndarray, n_resamples: int, rng: np.random.Generator) -> np.ndarray:
    """Means of `n_resamples` resamples (with replacement) of `values`, shape (n_resamples,)."""
    values = np.asarray(values, dtype=np.float64)
    if len(values) == 0:
        return np.full(n_resamples, np.nan)
    counts = rng.multinomial(len(values), np.full(len(values), 1.0 / len(values)), n_resamples)
    return counts @ values / len(values)


def sampled_anisotropy_baseline(
    unit: np.ndarray,
    sentence_ids: np.ndarray,
    sample_size: int,
    n_resamples: int,
    rng: np.random.Generator,
) -> tuple[float, np.ndarray]:
    """The paper's estimate of the anisotropy baseline, and its bootstrap replicates.

    Draws `sample_size` occurrences uniformly without replacement and averages the cosine
    over the pairs among them that come from different sentences (paper §4.1 with 1,000).
    Each bootstrap replicate resamples the drawn occurrences with replacement (a resampled
    copy of one occurrence shares its sentence, so it never pairs with itself).
    """
    rows = rng.choice(len(unit), size=min(sample_size, len(unit)), replace=False)
    sample = np.asarray(unit[rows], dtype=np.float64)
    different = sentence_ids[rows][:, None] != sentence_ids[rows][None, :]
    cosines = np.where(different, sample @ sample.T, 0.0)
    estimate = float(cosines.sum() / different.sum())
    counts = rng.multinomial(len(rows), np.full(len(rows), 1.0 / len(rows)), n_resamples)
    counts = counts.astype(np.float64)
    numerators = np.einsum("bi,bi->b", counts @ cosines, counts)
    denominators = np.einsum("bi,bi->b", counts @ different, counts)
    return estimate, numerators / denominators


def truncated_svd_variance_ratio(matrix: np.ndarray) -> float:
    """Share of column variance along the top right singular vector of the uncentered rows.

    This is ``sklearn.decomposition.TruncatedSVD(1).fit(matrix).explained_variance_ratio_[0]``
    computed exactly: var(X v₁) / Σ_j var(X_j), variances over rows. The paper's published
    "variance explained for random words" used this estimator, which is not σ₁²/Σσ².
    """
    matrix = np.asarray(matrix, dtype=np.float64)
    direction = np.linalg.svd(matrix, full_matrices=False)[2][0]
    return float(np.var(matrix @ direction) / np.var(matrix, axis=0).sum())
