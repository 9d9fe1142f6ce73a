"""Shares of variance along the first principal direction. MEV (Ethayarajh 2019, §3.2,
Definition 3), its column-centered variant, and the truncated-SVD ratio the paper's code
computed, for one matrix or for every contiguous group of a layer's rows at once.

The top eigenpair of each group's Gram matrix comes from batched LAPACK calls for the many
small groups and from Lanczos iteration (`top_singular_pair`) for the few large ones.
Accumulation is in float64 whatever the input dtype.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from contextuality.rows import group_sizes, groups_by_size


def explained_variance_first_component(matrix: np.ndarray, centered: bool = False) -> float:
    """MEV: share of variance of the rows explained by their first principal component.

    MEV = σ₁² / Σ_i σ_i², σ the singular values of the n×d matrix (paper §3.2,
    Definition 3; uncentered as in the paper, or column-centered with ``centered``).
    Uses the eigenvalues of the n×n Gram matrix or of the d×d scatter matrix, whichever
    is smaller; both have the σ_i² as non-zero eigenvalues.
    """
    matrix, stored = _widened(matrix)
    squares = np.sum(matrix**2)
    if centered:
        matrix = matrix - matrix.mean(axis=0)
    n, d = matrix.shape
    gram = matrix @ matrix.T if n <= d else matrix.T @ matrix
    total = np.trace(gram)
    if not _has_variance(total, squares, n, stored):
        return float("nan")
    top = np.linalg.eigvalsh(gram)[-1]
    return float(top / total)


def _widened(matrix: np.ndarray) -> tuple[np.ndarray, np.dtype]:
    """`matrix` as float64, and the dtype it was given in (whose rounding `_has_variance`
    discounts)."""
    return np.asarray(matrix, dtype=np.float64), np.asarray(matrix).dtype


def _has_variance(
    sum_of_squares: np.ndarray | float,
    uncentered_sum: np.ndarray | float,
    n: np.ndarray | int,
    stored: np.dtype | type = np.float64,
) -> np.ndarray | bool:
    """Whether a sum of squares over n rows (centered or not) exceeds what rounding leaves
    of zero, as a share of the rows' uncentered sum of squares Σ‖x‖²: n·eps of float64
    (sums over n rows are accurate to about that, and centering rows identical up to
    rounding leaves a residue of (n·eps)²), or, for rows `stored` in a coarser dtype,
    eps_stored²/12, the most variance rounding to it adds (ulp²/12 an element, ulp ≤
    eps·|x|). A GPU's pooling sums in no fixed order, so one word's identical contexts
    (ELMo's layer 0, GPT-2's first position) can be stored one float16 unit apart: a ratio
    of that rounding is no share of variance. Below the floor, a share is 0/0."""
    stored_eps = np.finfo(stored).eps if np.issubdtype(stored, np.floating) else 0.0
    floor = np.maximum(n * np.finfo(np.float64).eps, stored_eps**2 / 12)
    return sum_of_squares > floor * uncentered_sum


@dataclass(frozen=True)
class FirstComponentStatistics:
    """Per-group shares of variance along the first principal direction, each (n_groups,).

    mev: σ₁²/Σσ² of the uncentered rows (Definition 3). mev_centered: the same of the
    column-centered rows (PCA). truncated_svd: `truncated_svd_variance_ratio` of the rows,
    each repeated as often as its weight says (the estimator behind the paper's numbers).
    """

    mev: np.ndarray
    mev_centered: np.ndarray
    truncated_svd: np.ndarray


def _top_eigenpairs(stacked: np.ndarray, vectors: bool) -> tuple[np.ndarray, np.ndarray | None]:
    """Largest eigenvalue of each XXᵀ (n×n) or XᵀX (d×d), whichever is smaller, for stacked
    X (k, n, d); with `vectors`, also each top right singular vector (k, d) of X."""
    _, n, d = stacked.shape
    if min(n, d) > _LANCZOS_LIMIT:
        pairs = [top_singular_pair(matrix, with_vector=vectors) for matrix in stacked]
        values = np.array([value for value, _ in pairs])
        return values, np.array([vector for _, vector in pairs]) if vectors else None
    transposed = stacked.transpose(0, 2, 1)
    gram = stacked @ transposed if n <= d else transposed @ stacked
    if gram.shape[-1] > _BATCHED_EIGEN_LIMIT:
        values, top = _largest_eigenpairs(gram, vectors)
    elif not vectors:
        return np.linalg.eigvalsh(gram)[:, -1], None
    else:
        all_values, eigenvectors = np.linalg.eigh(gram)
        values, top = all_values[:, -1], eigenvectors[:, :, -1]
    if not vectors:
        return values, None
    if n <= d:  # v₁ = Xᵀu₁ / ‖Xᵀu₁‖ for the top eigenvector u₁ of XXᵀ
        top = np.einsum("kn,knd->kd", top, stacked)
        top /= np.maximum(np.linalg.norm(top, axis=1, keepdims=True), np.finfo(float).tiny)
    return values, top


_BATCHED_EIGEN_LIMIT = 32  # larger matrices: LAPACK for the top eigenpair only
_LANCZOS_LIMIT = 150  # larger in both dimensions: Lanczos (bench/results/lanczos-cpu.md)
_MEAN_START_SHARE = 1e-6  # ‖mean‖² / mean ‖x‖² above which the mean starts Lanczos


def _largest_eigenpairs(
    matrices: np.ndarray, vectors: bool
) -> tuple[np.ndarray, np.ndarray | None]:
    """Largest eigenvalue (k,) and, with `vectors`, its eigenvector (k, m) of each symmetric
    (k, m, m) matrix, by LAPACK's syevr on that one eigenpair: the full decomposition's
    eigenvectors cost several times its tridiagonal reduction at m in the hundreds."""
    from scipy.linalg import eigh

    k, m, _ = matrices.shape
    values = np.empty(k)
    top = np.empty((k, m)) if vectors else None
    for index, matrix in enumerate(matrices):
        found = eigh(matrix, subset_by_index=[m - 1, m - 1], eigvals_only=not vectors, driver="evr")
        if vectors:
            values[index], top[index] = found[0][0], found[1][:, 0]
        else:
            values[index] = found[0]
    return values, top


def _stacked_statistics(
    stacked: np.ndarray, weights: np.ndarray, stored: np.dtype
) -> tuple[np.ndarray, ...]:
    """`FirstComponentStatistics` fields of k equal-size groups: stacked (k, n, d) float64,
    weights (k, n) positive row repetitions, the rows `stored` in that dtype."""
    totals = np.einsum("knd,knd->k", stacked, stacked)
    centered = stacked - stacked.mean(axis=1, keepdims=True)
    centered_totals = np.einsum("knd,knd->k", centered, centered)
    unweighted = bool(np.all(weights == 1))
    top, direction = _top_eigenpairs(stacked, vectors=unweighted)
    top_centered, _ = _top_eigenpairs(centered, vectors=False)
    if not unweighted:
        _, direction = _top_eigenpairs(stacked * np.sqrt(weights)[:, :, None], vectors=True)
    defined = _has_variance(centered_totals, totals, stacked.shape[1], stored)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (
            np.where(totals > 0, top / totals, np.nan),
            np.where(defined, top_centered / centered_totals, np.nan),
            _variance_ratio_along(stacked, weights, direction, stored),
        )


def _variance_ratio_along(
    stacked: np.ndarray, weights: np.ndarray, direction: np.ndarray, stored: np.dtype
) -> np.ndarray:
    """Weighted variance of the projections on `direction` over the total weighted column
    variance, for stacked rows (k, n, d), weights (k, n) and unit directions (k, d); NaN
    where the rows have no variance beyond rounding (`_has_variance`, n the total weight).
    Rows are centered first: E‖x‖² − ‖E x‖² would leave a rounding residue of n·eps."""
    total_weight = weights.sum(axis=1)
    weighted_mean = np.einsum("kn,knd->kd", weights, stacked) / total_weight[:, None]
    centered = stacked - weighted_mean[:, None, :]
    projections = np.einsum("knd,kd->kn", centered, direction)
    projected_variance = np.einsum("kn,kn->k", weights, projections**2) / total_weight
    total_variance = np.einsum("kn,knd,knd->k", weights, centered, centered) / total_weight
    mean_square = np.einsum("kn,knd,knd->k", weights, stacked, stacked) / total_weight
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(
            _has_variance(total_variance, mean_square, total_weight, stored),
            projected_variance / total_variance,
            np.nan,
        )


def first_component_statistics(
    vectors: np.ndarray,
    starts: np.ndarray,
    weights: np.ndarray | None = None,
    order: np.ndarray | None = None,
    stored: np.dtype | str | None = None,
) -> FirstComponentStatistics:
    """`FirstComponentStatistics` of each contiguous group of the rows ``vectors[order]``
    (``vectors`` without `order`), e.g. a word's occurrences.

    weights: (N,) how many times each row of `vectors` counts in the truncated-SVD ratio
    (the paper's code kept every copy of a repeated sentence; default 1). stored: the dtype
    the rows were stored in before being widened to `vectors`' (default theirs): what it
    cannot resolve is no variance (`_has_variance`). Groups of equal size are solved in
    batched eigen-decompositions (see `groups_by_size`).
    """
    stored = np.dtype(vectors.dtype if stored is None else stored)
    starts = np.asarray(starts, dtype=np.int64)
    order = np.arange(len(vectors)) if order is None else np.asarray(order)
    sizes = group_sizes(starts, len(order))
    weights = np.ones(len(vectors)) if weights is None else np.asarray(weights, dtype=np.float64)
    results = np.full((3, len(starts)), np.nan)
    for chosen, stacked in groups_by_size(vectors, starts, order):
        if stacked is None:
            for group in chosen:
                rows = order[starts[group] : starts[group] + sizes[group]]
                matrix = np.asarray(vectors[rows], dtype=np.float64)[None]
                statistics = _stacked_statistics(matrix, weights[rows][None], stored)
                results[:, group] = np.ravel(statistics)
            continue
        rows = order[starts[chosen][:, None] + np.arange(sizes[chosen[0]])]
        results[:, chosen] = _stacked_statistics(stacked, weights[rows], stored)
    return FirstComponentStatistics(*results)


def top_component_share(matrix: np.ndarray, centered: bool) -> float:
    """σ₁²/Σσ² of a matrix's rows (`explained_variance_first_component`), σ₁² by Lanczos
    iteration (`top_singular_pair`): fast for the one value."""
    if min(np.shape(matrix)) < 2:
        return explained_variance_first_component(matrix, centered)
    matrix, stored = _widened(matrix)
    squares = np.sum(matrix**2)
    if centered:
        matrix = matrix - matrix.mean(axis=0)
    total = np.sum(matrix**2)
    if not _has_variance(total, squares, len(matrix), stored):
        return float("nan")
    return top_singular_pair(matrix)[0] / float(total)


def top_singular_pair(
    matrix: np.ndarray, with_vector: bool = False
) -> tuple[float, np.ndarray | None]:
    """σ₁² of a float64 matrix X (n, d) and, with `with_vector`, its top right singular
    vector v₁ (d,), up to sign.

    The largest eigenpair of XᵀX or XXᵀ, whichever is smaller, by Lanczos iteration (ARPACK,
    to machine precision, from a seeded start), each step two products with X: no Gram
    matrix is formed. An eigenvector u₁ of XXᵀ gives v₁ = Xᵀu₁ / ‖Xᵀu₁‖.
    """
    n, d = matrix.shape
    if min(n, d) < 3 or not np.any(matrix):  # too small for ARPACK, or no direction at all
        _, singular_values, right = np.linalg.svd(matrix, full_matrices=False)
        return float(singular_values[0] ** 2), right[0] if with_vector else None
    from scipy.sparse.linalg import LinearOperator, eigsh

    wide = n < d
    size = n if wide else d

    def gram_times(vectors: np.ndarray) -> np.ndarray:
        return matrix @ (matrix.T @ vectors) if wide else matrix.T @ (matrix @ vectors)

    operator = LinearOperator((size, size), matvec=gram_times, matmat=gram_times, dtype=np.float64)
    # Started along the rows' mean where it is a direction (the uncentered rows of an
    # anisotropic layer, whose v₁ it nearly is), with six Lanczos vectors between restarts,
    # a quarter faster than ARPACK's seeded random start with 20 (bench/results/lanczos-cpu.md);
    # otherwise ARPACK's defaults.
    mean = matrix.mean(axis=0)
    if mean @ mean > _MEAN_START_SHARE * np.einsum("ij,ij->", matrix, matrix) / n:
        start, vectors_kept = (matrix @ mean if wide else mean), min(size, 6)
    else:
        start, vectors_kept = np.random.default_rng(0).standard_normal(size), None
    solve = functools.partial(eigsh, operator, k=1, v0=start, ncv=vectors_kept)
    if not with_vector:
        return float(solve(return_eigenvectors=False)[0]), None
    values, vectors = solve()
    top = matrix.T @ vectors[:, 0] if wide else vectors[:, 0]
    return float(values[0]), top / max(np.linalg.norm(top), np.finfo(float).tiny)


def truncated_svd_variance_ratio(matrix: np.ndarray, weights: np.ndarray | None = None) -> float:
    """Share of column variance along the top right singular vector of the uncentered rows.

    This is ``sklearn.decomposition.TruncatedSVD(k).fit(X).explained_variance_ratio_[0]``
    computed exactly: var(X v₁) / Σ_j var(X_j), variances over rows, v₁ the top right
    singular vector of the uncentered X. The paper's code used it for its per-word
    "variance explained" and its baseline; it is not σ₁²/Σσ² (Definition 3) and is at most
    the centered PCA share. `weights`: row repetitions, as if row i appeared weights[i] times.
    """
    matrix, stored = _widened(matrix)
    weights = np.ones(len(matrix)) if weights is None else np.asarray(weights, dtype=np.float64)
    direction = top_singular_pair(matrix * np.sqrt(weights)[:, None], with_vector=True)[1]
    ratio = _variance_ratio_along(matrix[None], weights[None], direction[None], stored)
    return float(ratio[0])
