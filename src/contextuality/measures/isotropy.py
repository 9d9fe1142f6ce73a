"""Isotropy scores of a point cloud of embedding vectors (rows).

A representation space is *isotropic* when its points spread evenly in every direction.
Contextual embeddings are not: their mean cosine is far above 0 (Ethayarajh 2019), which
is why his measures subtract an anisotropy baseline. The mean cosine alone does not say
*how* a cloud is anisotropic, so this module offers scores that each see one side of it:

- IsoScore and IsoScore* (Rudman et al. 2022; Rudman & Eickhoff 2024): how evenly the
  variance spreads over dimensions, 0 (one line) to 1 (isotropic), invariant to rotation,
  translation and scale. IsoScore* shrinks a small sample's covariance toward a better
  estimate, since a small sample looks anisotropic even when the data are not.
- the partition-function ratio I(W) (Mu & Viswanath 2018): whether Z(c) = Σ_w exp(cᵀv_w)
  is the same in every direction c, 1 when it is; sensitive to a common mean vector.
- effective rank (Roy & Vetterli 2007): how many dimensions the centered data use, 1 to d.
- rogue dimensions (Timkey & van Schijndel 2021): the few dimensions whose contributions
  make up most of the expected cosine, so that a cosine mostly measures them.

All arithmetic is in float64 whatever the input dtype. Rows must be finite.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from contextuality.measures.equations import SentenceSums, sentence_sums
from contextuality.rows import row_chunks


@dataclass(frozen=True)
class Spread:
    """A layer's centered covariance (d, d), its eigenvalues (d,), largest first, and the
    eigenvectors of its uncentered Gram matrix (d, d), all float64."""

    covariance: np.ndarray
    eigenvalues: np.ndarray
    gram_directions: np.ndarray


def scatter(vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean (d,) and centered scatter matrix Σ_k (x_k − μ)(x_k − μ)ᵀ (d, d) of rows (n, d),
    both float64: the mean in float64, each chunk's product in float32 (BLAS), chunks summed
    in float64; centering first keeps a large common mean from cancelling digits."""
    chunks = list(row_chunks(*vectors.shape))
    mean = np.zeros(vectors.shape[1])
    for chunk in chunks:
        mean += vectors[chunk].sum(axis=0, dtype=np.float64)
    mean /= len(vectors)
    total = np.zeros((vectors.shape[1], vectors.shape[1]))
    for chunk in chunks:
        centered = (vectors[chunk] - mean).astype(np.float32)
        total += centered.T @ centered
    return mean, total


def spread(vectors: np.ndarray) -> Spread:
    """`Spread` of rows (n, d)."""
    n = len(vectors)
    mean, total = scatter(vectors)
    covariance = total / n
    eigenvalues = np.clip(np.linalg.eigvalsh(covariance)[::-1], 0.0, None)
    _, directions = np.linalg.eigh(total + n * np.outer(mean, mean))
    return Spread(covariance, eigenvalues, directions)


# Largest rows × directions block of projections held at once by log_partition_function
# (2²² float64 values: 32 MiB).
_PROJECTIONS_PER_BLOCK = 1 << 22


@dataclass(frozen=True)
class RogueDimensions:
    """Which dimensions carry the expected cosine (Timkey & van Schijndel 2021).

    dimensions: indices of the `top` dimensions with the largest contributions, largest first.
    contributions: their contributions C_i to the expected cosine, same order.
    total: the expected cosine itself, Σ_i C_i over all dimensions.
    """

    dimensions: tuple[int, ...]
    contributions: tuple[float, ...]
    total: float

    def share(self, k: int) -> float:
        """Share of the expected cosine carried by the top k dimensions: Σ_{i≤k} C_i / total."""
        if not 1 <= k <= len(self.dimensions):
            raise ValueError(f"share: k must be between 1 and {len(self.dimensions)}, got {k}")
        if self.total == 0:
            raise ValueError("share: the expected cosine is 0, so no share is defined")
        return sum(self.contributions[:k]) / self.total


def _rows(vectors: np.ndarray, name: str) -> np.ndarray:
    """Vectors as a float64 (n, d) array with n ≥ 1 and finite entries."""
    rows = np.asarray(vectors, dtype=np.float64)
    if rows.ndim != 2 or len(rows) == 0:
        raise ValueError(f"{name}: expected a non-empty 2-D array of rows, got shape {rows.shape}")
    if not np.all(np.isfinite(rows)):
        raise ValueError(f"{name}: every entry must be finite")
    return rows


def _sample(vectors: np.ndarray, name: str) -> np.ndarray:
    """Rows for a covariance-based score: at least 2 rows and 2 dimensions."""
    rows = _rows(vectors, name)
    if len(rows) < 2 or rows.shape[1] < 2:
        raise ValueError(f"{name}: needs at least 2 rows and 2 dimensions, got {rows.shape}")
    return rows


def _covariance(rows: np.ndarray) -> np.ndarray:
    """Covariance (d, d) of float64 rows (n, d), centered, divided by n (ddof=0)."""
    centered = rows - rows.mean(axis=0)
    return centered.T @ centered / len(rows)


def _descending_eigenvalues(symmetric: np.ndarray) -> np.ndarray:
    """Eigenvalues of a symmetric positive semi-definite matrix, descending, rounding
    errors below 0 clipped to 0."""
    return np.clip(np.linalg.eigvalsh(symmetric)[::-1], 0.0, None)


def covariance_eigenvalues(vectors: np.ndarray) -> np.ndarray:
    """Eigenvalues (d,), descending, of the covariance (centered, ddof=0) of rows (n, d).

    These are the variances of the cloud after reorienting it to its principal components.
    Negative rounding errors are clipped to 0.
    """
    return _descending_eigenvalues(_covariance(_rows(vectors, "covariance_eigenvalues")))


def isoscore_from_eigenvalues(eigenvalues: np.ndarray) -> float:
    """IsoScore from the d covariance eigenvalues Λ (Rudman et al., Findings ACL 2022).

    Λ̂ = √d·Λ/‖Λ‖₂;  δ = ‖Λ̂ − 1‖₂ / √(2(d − √d));  φ = (d − δ²(d − √d))² / d²;
    ι = (d·φ − 1) / (d − 1).

    δ is the isotropy defect (0 to 1), φ the fraction of dimensions used (1/d to 1), and
    ι is 1 for isotropic data and 0 when all variance lies on one line. Follows the paper's
    algorithm, as the authors' IsoScore package (PyPI 2.0.1) does: the two agree to about
    2e-7 on every layer of the default run. (The known bug of the authors' repository is in
    another function, its partition score: see `partition_ratio`.)
    Refuses fewer than 2 eigenvalues, negative or non-finite ones, and all zeros.
    """
    values = np.asarray(eigenvalues, dtype=np.float64)
    if values.ndim != 1 or values.size < 2:
        raise ValueError(f"isoscore: needs at least 2 eigenvalues, got shape {values.shape}")
    if not np.all(np.isfinite(values)) or np.any(values < 0):
        raise ValueError("isoscore: eigenvalues must be finite and non-negative")
    largest = values.max()
    if largest == 0:
        raise ValueError("isoscore: the data have no variance")
    scaled = values / largest  # keeps ‖Λ‖₂ from overflowing; Λ̂ does not depend on scale
    d = values.size
    root_d = np.sqrt(d)
    normalized = root_d * scaled / np.linalg.norm(scaled)
    defect = np.linalg.norm(normalized - 1.0) / np.sqrt(2.0 * (d - root_d))
    used = (d - defect**2 * (d - root_d)) ** 2 / d**2
    return float((d * used - 1.0) / (d - 1.0))


def isoscore(vectors: np.ndarray) -> float:
    """IsoScore ι of rows (n, d) (Rudman et al., Findings ACL 2022): see
    `isoscore_from_eigenvalues`. Refuses n < 2, d < 2 and data without variance."""
    rows = _sample(vectors, "isoscore")
    return isoscore_from_eigenvalues(_descending_eigenvalues(_covariance(rows)))


def isoscore_star(vectors: np.ndarray, shrinkage: float, target_covariance: np.ndarray) -> float:
    """IsoScore* (Rudman & Eickhoff, "Stable Anisotropic Regularization", ICLR 2024).

    IsoScore of the eigenvalues of the shrunk covariance Σ_ζ = (1 − ζ)·Σ_X + ζ·Σ_target:
    Σ_X the covariance (ddof=0) of the sample `vectors` (m, d), Σ_target (d, d) a covariance
    estimated from more points, ζ = `shrinkage` in [0, 1]. With ζ = 0 it is IsoScore.

    Why: m points in d dimensions have sample eigenvalues spread out around the true ones
    (Marchenko–Pastur), so isotropic data look anisotropic unless m ≫ d; shrinking toward
    a better-estimated covariance corrects that.
    """
    rows = _sample(vectors, "isoscore_star")
    if not 0.0 <= shrinkage <= 1.0:
        raise ValueError(f"isoscore_star: shrinkage must be in [0, 1], got {shrinkage}")
    target = np.asarray(target_covariance, dtype=np.float64)
    d = rows.shape[1]
    if target.shape != (d, d):
        raise ValueError(f"isoscore_star: target covariance must be {(d, d)}, got {target.shape}")
    if not np.all(np.isfinite(target)) or not np.allclose(target, target.T):
        raise ValueError("isoscore_star: target covariance must be finite and symmetric")
    shrunk = (1.0 - shrinkage) * _covariance(rows) + shrinkage * target
    return isoscore_from_eigenvalues(_descending_eigenvalues(shrunk))


def log_partition_function(vectors: np.ndarray, directions: np.ndarray) -> np.ndarray:
    """log Z(c) = log Σ_w exp(cᵀv_w) for each direction c (Mu & Viswanath, ICLR 2018).

    vectors: rows v_w (n, d). directions: rows c (k, d), used as given (not normalized).
    Returns (k,) float64, via logsumexp so that large norms do not overflow.
    """
    rows = _rows(vectors, "log_partition_function")
    directions = np.asarray(directions, dtype=np.float64)
    if directions.ndim != 2 or directions.shape[1] != rows.shape[1]:
        raise ValueError(
            f"log_partition_function: directions must be (k, {rows.shape[1]}), "
            f"got {directions.shape}"
        )
    from scipy.special import logsumexp

    log_z = np.empty(len(directions))
    block = max(1, _PROJECTIONS_PER_BLOCK // len(rows))
    for begin in range(0, len(directions), block):
        projections = rows @ directions[begin : begin + block].T
        log_z[begin : begin + block] = logsumexp(projections, axis=0)
    return log_z


def partition_ratio(vectors: np.ndarray) -> float:
    """I(W) = min_c Z(c) / max_c Z(c) (Mu & Viswanath, "All-but-the-Top", ICLR 2018).

    Z(c) = Σ_w exp(cᵀv_w) over rows v_w of W (n, d); c ranges over the eigenvectors of the
    uncentered Gram matrix WᵀW and their negations, since an eigenvector's sign is arbitrary.
    The eigenvectors are the columns of numpy.linalg.eigh's matrix: the ``partition_score``
    of the IsoScore repository (bcbi-edu/p_eickhoff_isoscore, GitHub issue #3) iterates
    over its rows, and multiplies elementwise where cᵀv is meant. Computed as
    exp(min log Z − max log Z); 1 is isotropic.
    """
    rows = _rows(vectors, "partition_ratio")
    _, eigenvectors = np.linalg.eigh(rows.T @ rows)
    directions = np.concatenate([eigenvectors.T, -eigenvectors.T])
    log_z = log_partition_function(rows, directions)
    return float(np.exp(log_z.min() - log_z.max()))


def effective_rank(vectors: np.ndarray) -> float:
    """Effective rank of rows (n, d) (Roy & Vetterli, EUSIPCO 2007).

    σ_i the singular values of the centered matrix, p_i = σ_i / Σ_j σ_j,
    erank = exp(−Σ_i p_i log p_i) with 0·log 0 = 0: 1 for a line, d for isotropic data.
    Refuses data without variance.
    """
    rows = _rows(vectors, "effective_rank")
    singular_values = np.linalg.svd(rows - rows.mean(axis=0), compute_uv=False)
    total = singular_values.sum()
    if total == 0:
        raise ValueError("effective_rank: the data have no variance")
    shares = singular_values[singular_values > 0] / total
    return float(np.exp(-np.sum(shares * np.log(shares))))


def rogue_dimensions(
    unit: np.ndarray, sentence_starts: np.ndarray, top: int = 3, normalize: bool = False
) -> RogueDimensions:
    """Dimensions that dominate the expected cosine (Timkey & van Schijndel, EMNLP 2021).

    The expected cosine between occurrences u_j, u_k from different sentences is Σ_i C_i,

        C_i = (S_i² − Σ_s S_{s,i}²) / (N² − Σ_s n_s²),

    S_i = Σ_k u_{k,i} over all N rows, S_{s,i} the same sum within sentence s of n_s rows;
    computed exactly in O(N·d), no pair is formed.

    unit: (N, d) unit-length rows (other lengths give the expected dot product instead),
    each sentence's rows contiguous; with `normalize`, any finite non-zero rows, scaled to
    unit length here. Read in chunks of rows, never copied whole. sentence_starts: first
    row of each sentence, strictly increasing from 0. top: how many dimensions to return
    (at most d); ties go to the lower index. Refuses data with no pair of rows in
    different sentences.
    """
    if np.ndim(unit) != 2 or len(unit) == 0:
        raise ValueError(
            f"rogue_dimensions: expected a non-empty 2-D array of rows, got shape {np.shape(unit)}"
        )
    n_rows = len(unit)
    starts = np.asarray(sentence_starts)
    if (
        starts.ndim != 1
        or starts.size == 0
        or not np.issubdtype(starts.dtype, np.integer)
        or starts[0] != 0
        or np.any(np.diff(starts) <= 0)
        or starts[-1] >= n_rows
    ):
        raise ValueError(
            "rogue_dimensions: sentence_starts must be integers increasing strictly from 0, "
            f"each below the {n_rows} rows"
        )
    if top < 1:
        raise ValueError(f"rogue_dimensions: top must be at least 1, got {top}")
    sizes = np.diff(np.append(starts, n_rows)).astype(np.float64)
    pairs = float(n_rows) ** 2 - np.sum(sizes**2)
    if pairs == 0:
        raise ValueError("rogue_dimensions: no pair of rows lies in different sentences")
    if not all(np.isfinite(unit[chunk]).all() for chunk in row_chunks(*unit.shape)):
        raise ValueError("rogue_dimensions: every entry must be finite")
    return rogue_dimensions_of(sentence_sums(unit, starts, unit=normalize), top)


def rogue_dimensions_of(sums: SentenceSums, top: int = 3) -> RogueDimensions:
    """`rogue_dimensions` from a layer's sums by sentence (`equations.SentenceSums`): the
    `top` largest contributions C_i. Refuses sums with no pair of rows in different
    sentences."""
    contributions = sums.cosine_contributions()
    if np.isnan(contributions).any():
        raise ValueError("rogue_dimensions: no pair of rows lies in different sentences")
    largest = np.argsort(-contributions, kind="stable")[:top]
    return RogueDimensions(
        dimensions=tuple(int(i) for i in largest),
        contributions=tuple(float(c) for c in contributions[largest]),
        total=float(contributions.sum()),
    )
