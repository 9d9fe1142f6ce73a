"""``whiten``: BERT-whitening, the rows rotated onto the covariance's eigenvectors and
each kept direction scaled to unit variance, optionally keeping only the top k.

Su et al. 2021, "Whitening Sentence Representations for Better Semantics and Faster
Retrieval".

By default every direction the fitting rows span is kept: hidden states after a layer
normalization lie in a hyperplane, so their covariance has a null direction that no
scaling can bring to unit variance (dropped, and counted as ``null_directions``). Stored
as float16, such a direction still carries the rounding's variance, which whitening would
blow up to unit variance: a direction whose variance is not clearly above what the
storage dtype's rounding adds along it counts as null (`_null_floor`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from contextuality.errors import ConfigError
from contextuality.transforms.affine import descending_eigen, row_covariance, row_mean
from contextuality.transforms.record import AffineParameters, Correction

if TYPE_CHECKING:
    from contextuality.transforms.fitting import TransformSettings

ORDER = 4

_EIGENVALUE_FLOOR = 1e-12  # relative to the largest eigenvalue: float64 eigh's own error
_ROUNDING_MARGIN = 10.0  # a kept direction has ≥ 10× the variance rounding adds along it


def fit_whiten(
    vectors: np.ndarray, settings: TransformSettings, stored_as: np.dtype
) -> AffineParameters:
    """x ↦ (x − mean) V Λ^(−1/2), V the kept eigenvectors of the covariance of `vectors`
    (n, d) and Λ their eigenvalues: the first ``whiten_dimensions`` (None: all) of those
    above the null floor of `stored_as`'s rounding."""
    n, d = vectors.shape
    mean = row_mean(vectors)
    covariance = row_covariance(vectors, mean)
    eigenvalues, eigenvectors = descending_eigen(covariance)
    second_moments = np.diagonal(covariance) + mean**2
    usable = eigenvalues > _null_floor(eigenvectors, eigenvalues, second_moments, stored_as)
    chosen = _whitened_directions(usable, settings.whiten_dimensions, n)
    parameters = {
        "dimensions": len(chosen),
        "smallest_eigenvalue": float(eigenvalues[chosen[-1]]),
        "null_directions": int(d - usable.sum()),
        "stored_as": str(stored_as),
    }
    return mean, eigenvectors[:, chosen] / np.sqrt(eigenvalues[chosen]), parameters


def _whitened_directions(usable: np.ndarray, dimensions: int | None, n: int) -> np.ndarray:
    """Positions of the directions to whiten, the first `dimensions` (None: all) of those
    `usable` (bool, (d,), descending eigenvalues, above `_null_floor`); a ConfigError
    when there are not that many (n: the fitting rows, for the message)."""
    d, spanned = len(usable), int(usable.sum())
    kept = spanned if dimensions is None else dimensions
    if kept > d:
        raise ConfigError(
            f"whiten: measures.transform_fit.whiten_dimensions {kept} exceeds the dimension {d}"
        )
    if kept == 0 or kept > spanned:
        raise ConfigError(
            f"whiten: the fitting part is rank-deficient ({n} rows, {d} dimensions; "
            f"{spanned} covariance eigenvalues above the null floor), "
            f"so {kept} directions cannot be scaled to unit variance: set "
            f"measures.transform_fit.whiten_dimensions to at most {spanned}, or fit on more rows"
        )
    return np.flatnonzero(usable)[:kept]


def _null_floor(
    eigenvectors: np.ndarray,
    eigenvalues: np.ndarray,
    second_moments: np.ndarray,
    stored_as: np.dtype,
) -> np.ndarray:
    """The variance (d,) each covariance direction (columns of `eigenvectors`, eigenvalues
    descending) must exceed to be whitened rather than dropped as null.

    Storing x_j as `stored_as` adds an error of at most half its spacing, ≤ eps·|x_j|/2
    (eps: the dtype's relative resolution, 9.8e-4 for float16): a uniform error of variance
    ≤ (eps·x_j)²/12, independent across coordinates, so along a unit direction v about
    eps²/12 · Σ_j v_j² E[x_j²] (`second_moments`: E[x_j²] per coordinate). A direction
    needs `_ROUNDING_MARGIN` times that (in all-MiniLM-L6-v2's float16 layers the layer
    normalization's null direction has about half of it, the real directions over 10⁵
    times it), and at least `_EIGENVALUE_FLOOR` of the largest eigenvalue, the float64
    decomposition's own error."""
    eps = float(np.finfo(stored_as).eps)
    rounding = eps**2 / 12 * (eigenvectors**2).T @ second_moments
    return np.maximum(_EIGENVALUE_FLOOR * eigenvalues[0], _ROUNDING_MARGIN * rounding)


CORRECTIONS = (
    Correction(
        name="whiten",
        label="whitened",
        caption=(
            "BERT-whitening (Su et al. 2021): the rows rotated onto the covariance's "
            "eigenvectors and each kept direction scaled to unit variance; by default every "
            "direction the fitting rows span, one with under ten times the variance that "
            "rounding to the shard's dtype adds along it counting as null (as a layer "
            "normalization's null direction does), so rounding noise is never scaled up."
        ),
        fit=fit_whiten,
        settings=("whiten_dimensions",),
    ),
)
