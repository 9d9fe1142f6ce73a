"""Post-processing corrections of embedding spaces (isotropy fixes), fitted and then applied.

Every correction is affine, x ↦ (x − mean) @ matrix, with parameters estimated in float64:

- ``none``: the identity.
- ``center``: mean removal.
- ``standardize``: per-dimension z-score (ddof=0); a constant dimension is left unscaled.
- ``abtt``: all-but-the-top (Mu & Viswanath, "All-but-the-Top: Simple and Effective
  Postprocessing for Word Representations", ICLR 2018): remove the mean, then the
  projections on the top D principal directions.
- ``drop_rogue``: the top k rogue dimensions removed (Timkey & van Schijndel, "All
  Bark and No Bite: Rogue Dimensions in Transformer Language Models Obscure
  Representational Quality", EMNLP 2021): the dimensions i with the largest m_i², m the
  mean of the fitting rows scaled to unit length, whose sum Σ m_i² is the expected cosine
  of two random rows; the other dimensions are kept as they are (no mean removed).
- ``whiten``: BERT-whitening (Su et al. 2021, "Whitening Sentence Representations for
  Better Semantics and Faster Retrieval"): rotate onto the covariance's eigenvectors and
  scale each kept direction to unit variance, optionally keeping only the top k. By
  default every direction the fitting part spans is kept: hidden states after a layer
  normalization lie in a hyperplane, so their covariance has a null direction that no
  scaling can bring to unit variance (dropped, and counted as ``null_directions``). Stored
  as float16, such a direction still carries the rounding's variance, which whitening
  would blow up to unit variance: a direction whose variance is not clearly above what the
  storage dtype's rounding adds along it counts as null (`_null_floor`).

A correction is fitted on the rows passed to :func:`fit_transform` and nothing else.
Callers pass a held-out part of the corpus (:func:`fit_split`) and measure the
other part: parameters estimated on the very vectors being measured let each vector fit
its own correction, which flatters whitening in particular (with few rows per dimension
the fitted covariance is the sample's own, and the sample then looks exactly isotropic);
fitting on held-out sentences avoids that.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import DTypeLike

from contextuality.configuration.random_streams import generator
from contextuality.configuration.schema import default
from contextuality.errors import ConfigError, NonFiniteValueError, check_integer, check_number
from contextuality.rows import row_chunks, rows_with_vectors

TRANSFORMS = ("none", "center", "standardize", "abtt", "whiten", "drop_rogue")

_EIGENVALUE_FLOOR = 1e-12  # relative to the largest eigenvalue: float64 eigh's own error
_ROUNDING_MARGIN = 10.0  # a kept direction has ≥ 10× the variance rounding adds along it


# The schema's section of the corrections' fitting (config ``measures.transform_fit``).
_FIT = ("measures", "transform_fit")


@dataclass(frozen=True)
class TransformSettings:
    """Settings of the corrections (config section measures.transform_fit, with measures.seed)."""

    # share of sentences held out to fit corrections (0 < f < 1)
    fit_fraction: float = default(*_FIT, "fit_fraction")
    # D for abtt; None: max(1, round(d / 100))
    abtt_directions: int | None = default(*_FIT, "abtt_directions")
    whiten_dimensions: int | None = default(*_FIT, "whiten_dimensions")  # k; None: all d
    rogue_dimensions: int = default(*_FIT, "rogue_dimensions")  # k for drop_rogue
    # fit on the held-out sentences' later words only
    fit_without_first_words: bool = default(*_FIT, "fit_without_first_words")
    seed: int = default("measures", "seed")

    def __post_init__(self) -> None:
        check_number(
            "measures.transform_fit",
            "fit_fraction",
            self.fit_fraction,
            0,
            1,
            open_low=True,
            open_high=True,
        )
        for name in ("abtt_directions", "whiten_dimensions"):
            if getattr(self, name) is not None:  # null: the default number
                check_integer("measures.transform_fit", name, getattr(self, name), 1)
        check_integer("measures.transform_fit", "rogue_dimensions", self.rogue_dimensions, 1)


@dataclass(frozen=True)
class FittedTransform:
    """x ↦ (x − mean) @ matrix: every supported correction is affine.

    mean: (d,) float64; matrix: (d, k) float64; n_fit: rows it was fitted on;
    parameters: the correction's settings as fitted, reported by :meth:`describe`.
    """

    name: str
    mean: np.ndarray
    matrix: np.ndarray
    n_fit: int
    parameters: dict[str, Any] = field(default_factory=dict)

    def apply_to_occurrences(self, vectors: np.ndarray) -> np.ndarray:
        """`apply`, with the rows that have no vector (non-finite or all zero, see
        `rows.rows_with_vectors`) NaN in the output, so that the measures skip them."""
        out = self.apply(vectors)
        out[~rows_with_vectors(vectors)] = np.nan
        return out

    def apply(self, vectors: np.ndarray) -> np.ndarray:
        """(n, d) rows of any float dtype → (n, k) float32, by chunks of rows. The mean is
        subtracted in float64; a diagonal matrix (none, center, standardize) scales the
        columns in float64, any other is applied as a float32 product (the output's
        precision). Each output row depends only on its input row, so NaN rows stay NaN."""
        vectors = np.asarray(vectors)
        d, k = self.matrix.shape
        if vectors.ndim != 2 or vectors.shape[1] != d:
            raise ValueError(f"{self.name}: expected rows of {d} dimensions, got {vectors.shape}")
        diagonal = np.diagonal(self.matrix) if _is_diagonal(self.matrix) else None
        product = self.matrix.astype(np.float32)
        out = np.empty((len(vectors), k), dtype=np.float32)
        for rows in row_chunks(*vectors.shape):
            centered = vectors[rows].astype(np.float64) - self.mean
            if diagonal is not None:
                out[rows] = centered * diagonal
            else:
                out[rows] = centered.astype(np.float32) @ product
        return out

    def describe(self) -> dict[str, Any]:
        """JSON-able summary: name, n_fit, input and output dimensions, parameters."""
        return {
            "name": self.name,
            "n_fit": self.n_fit,
            "input_dimensions": int(self.matrix.shape[0]),
            "output_dimensions": int(self.matrix.shape[1]),
            "parameters": dict(self.parameters),
        }


def fit_transform(
    name: str, vectors: np.ndarray, settings: TransformSettings, stored_as: DTypeLike = None
) -> FittedTransform:
    """Fit the correction ``name`` on ``vectors`` (n, d), n ≥ 2 finite rows: the held-out
    fitting part, never the rows to be measured (see the module docstring). `stored_as`:
    the float dtype the vectors were stored in, whose rounding sets whiten's null floor
    (None: ``vectors.dtype``)."""
    if name not in TRANSFORMS:
        raise ConfigError(f"transform must be one of {TRANSFORMS}, not {name!r}")
    vectors = np.asarray(vectors)
    if vectors.ndim != 2:
        raise ValueError(f"{name}: expected a 2-D array of rows, got shape {vectors.shape}")
    n, d = vectors.shape
    if n < 2:
        raise ConfigError(
            f"{name}: needs at least 2 fitting rows, got {n}; "
            "raise measures.transform_fit.fit_fraction"
        )
    if not all(np.isfinite(vectors[rows]).all() for rows in row_chunks(n, d)):
        raise NonFiniteValueError(f"{name}: the fitting vectors contain ±inf or NaN")

    if name == "none":
        return FittedTransform(name, np.zeros(d), np.eye(d), n)
    mean = _mean(vectors)
    if name == "center":
        return FittedTransform(name, mean, np.eye(d), n)
    if name == "standardize":
        std = np.sqrt(_variances(vectors, mean))
        scale = np.ones(d)
        np.divide(1.0, std, out=scale, where=std > 0)
        return FittedTransform(name, mean, np.diag(scale), n)

    if name == "drop_rogue":
        return _without_rogue_dimensions(vectors, settings.rogue_dimensions)
    covariance = _covariance(vectors, mean)
    eigenvalues, eigenvectors = np.linalg.eigh(covariance)
    eigenvalues, eigenvectors = eigenvalues[::-1], eigenvectors[:, ::-1]  # descending
    if name == "abtt":
        directions = settings.abtt_directions
        if directions is None:
            directions = max(1, round(d / 100))
        if directions >= d:
            raise ConfigError(
                f"abtt: measures.transform_fit.abtt_directions {directions} must be less than "
                f"the dimension {d}"
            )
        top = eigenvectors[:, :directions]
        return FittedTransform(name, mean, np.eye(d) - top @ top.T, n, {"directions": directions})
    second_moments = np.diagonal(covariance) + mean**2
    stored_as = np.dtype(vectors.dtype if stored_as is None else stored_as)
    usable = eigenvalues > _null_floor(eigenvectors, eigenvalues, second_moments, stored_as)
    chosen = _whitened_directions(usable, settings.whiten_dimensions, n)
    parameters = {
        "dimensions": len(chosen),
        "smallest_eigenvalue": float(eigenvalues[chosen[-1]]),
        "null_directions": int(d - usable.sum()),
        "stored_as": str(stored_as),
    }
    matrix = eigenvectors[:, chosen] / np.sqrt(eigenvalues[chosen])
    return FittedTransform(name, mean, matrix, n, parameters)


def _without_rogue_dimensions(vectors: np.ndarray, count: int) -> FittedTransform:
    """``drop_rogue``: the columns of `vectors` (n, d) but the `count` whose squared mean
    of the unit rows, m_i², is largest (each dimension's share of the expected cosine)."""
    n, d = vectors.shape
    if count >= d:
        raise ConfigError(
            f"drop_rogue: measures.transform_fit.rogue_dimensions {count} must be less than "
            f"the dimension {d}"
        )
    unit_mean = np.zeros(d)
    for rows in row_chunks(n, d):
        block = vectors[rows].astype(np.float64)
        norms = np.linalg.norm(block, axis=1, keepdims=True)
        unit_mean += (block / np.where(norms > 0, norms, 1.0)).sum(axis=0)
    shares = (unit_mean / n) ** 2
    dropped = np.sort(np.argsort(-shares, kind="stable")[:count])
    kept = np.setdiff1d(np.arange(d), dropped)
    parameters = {
        "dimensions": [int(dimension) for dimension in dropped],
        "expected_cosine_share": float(shares[dropped].sum() / shares.sum()),
    }
    return FittedTransform("drop_rogue", np.zeros(d), np.eye(d)[:, kept], n, parameters)


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


def fit_split_settings(fit_fraction: float, seed: int) -> dict[str, Any]:
    """What a split is drawn with (`fit_split`), whose hash its table records."""
    return {"fit_fraction": fit_fraction, "seed": seed}


def fit_split(n_sentences: int, fit_fraction: float, seed: int) -> np.ndarray:
    """Bool mask (n_sentences,), True for the sentences of the fitting part:
    round(fit_fraction · n_sentences) of them, at least 1 and at most n_sentences − 1,
    the first of a permutation drawn from the correction-split stream (`random_streams`)."""
    if n_sentences < 2:
        raise ValueError(f"splitting needs at least 2 sentences, got {n_sentences}")
    if not 0 < fit_fraction < 1:
        raise ValueError(f"fit_fraction must be in (0, 1), got {fit_fraction}")
    n_fit = min(max(round(fit_fraction * n_sentences), 1), n_sentences - 1)
    mask = np.zeros(n_sentences, dtype=bool)
    mask[generator(seed, "fit_split").permutation(n_sentences)[:n_fit]] = True
    return mask


def _is_diagonal(matrix: np.ndarray) -> bool:
    """Whether a square matrix has zeros off its diagonal."""
    return matrix.shape[0] == matrix.shape[1] and not np.any(matrix - np.diag(np.diagonal(matrix)))


def _mean(vectors: np.ndarray) -> np.ndarray:
    """Float64 mean of the rows, (d,). Summed relative to the first row, so that the mean
    of a constant column is that constant exactly (and its variance exactly 0)."""
    shift = vectors[0].astype(np.float64)
    total = np.zeros_like(shift)
    for rows in row_chunks(*vectors.shape):
        total += (vectors[rows].astype(np.float64) - shift).sum(axis=0)
    return shift + total / len(vectors)


def _variances(vectors: np.ndarray, mean: np.ndarray) -> np.ndarray:
    """Float64 variance (ddof=0) of each column, (d,)."""
    total = np.zeros_like(mean)
    for rows in row_chunks(*vectors.shape):
        total += np.square(vectors[rows].astype(np.float64) - mean).sum(axis=0)
    return total / len(vectors)


def _covariance(vectors: np.ndarray, mean: np.ndarray) -> np.ndarray:
    """Float64 covariance (ddof=0) of the rows, (d, d)."""
    scatter = np.zeros((len(mean), len(mean)))
    for rows in row_chunks(*vectors.shape):
        centered = vectors[rows].astype(np.float64) - mean
        scatter += centered.T @ centered
    return scatter / len(vectors)


def corrected_occurrences(
    vectors: np.ndarray,
    sentence_id: np.ndarray,
    fit_sentences: np.ndarray,
    name: str,
    settings: TransformSettings,
) -> tuple[np.ndarray, FittedTransform]:
    """A layer's occurrence vectors under correction `name`, fitted on the held-out part.

    vectors: (n, d) rows; sentence_id: (n,) each row's sentence; fit_sentences: bool mask
    by sentence_id (`fit_split`). Rows with a vector (finite, not all zero) in fitting
    sentences fit the correction; the other sentences' rows are corrected. Returns the
    corrected (n, k) float32 rows, NaN wherever a row is in the fitting part or has no
    vector (so the measures skip it), and the fitted correction.
    """
    has_vector = rows_with_vectors(vectors)
    in_fit = np.asarray(fit_sentences, dtype=bool)[sentence_id]
    fitted = fit_transform(name, vectors[has_vector & in_fit], settings)
    measured = np.flatnonzero(~in_fit)
    corrected = np.full((len(vectors), fitted.matrix.shape[1]), np.nan, dtype=np.float32)
    for rows in row_chunks(len(measured), vectors.shape[1]):  # no second copy of the measured rows
        corrected[measured[rows]] = fitted.apply_to_occurrences(vectors[measured[rows]])
    return corrected, fitted
