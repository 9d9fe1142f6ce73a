"""A fitted transform, x ↦ (x − mean) @ matrix (`FittedTransform`), and the float64
moments of rows that the corrections are estimated from.

The moments are summed by chunks of rows (`rows.row_chunks`), so that no float64 copy of
the rows is ever held whole."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from contextuality.rows import row_chunks, rows_with_vectors


@dataclass(frozen=True)
class FittedTransform:
    """x ↦ (x − mean) @ matrix: every transform is affine (``none`` the identity).

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


def _is_diagonal(matrix: np.ndarray) -> bool:
    """Whether a square matrix has zeros off its diagonal."""
    return matrix.shape[0] == matrix.shape[1] and not np.any(matrix - np.diag(np.diagonal(matrix)))


def row_mean(vectors: np.ndarray) -> np.ndarray:
    """Float64 mean of the rows (n, d), (d,). Summed relative to the first row, so that the
    mean of a constant column is that constant exactly (and its variance exactly 0)."""
    shift = vectors[0].astype(np.float64)
    total = np.zeros_like(shift)
    for rows in row_chunks(*vectors.shape):
        total += (vectors[rows].astype(np.float64) - shift).sum(axis=0)
    return shift + total / len(vectors)


def column_variances(vectors: np.ndarray, mean: np.ndarray) -> np.ndarray:
    """Float64 variance (ddof=0) of each column of the rows (n, d) about `mean`, (d,)."""
    total = np.zeros_like(mean)
    for rows in row_chunks(*vectors.shape):
        total += np.square(vectors[rows].astype(np.float64) - mean).sum(axis=0)
    return total / len(vectors)


def row_covariance(vectors: np.ndarray, mean: np.ndarray) -> np.ndarray:
    """Float64 covariance (ddof=0) of the rows (n, d) about `mean`, (d, d)."""
    scatter = np.zeros((len(mean), len(mean)))
    for rows in row_chunks(*vectors.shape):
        centered = vectors[rows].astype(np.float64) - mean
        scatter += centered.T @ centered
    return scatter / len(vectors)


def descending_eigen(covariance: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The eigenvalues (d,) of a symmetric `covariance`, largest first, and their unit
    eigenvectors, the columns of a (d, d) array in the same order."""
    eigenvalues, eigenvectors = np.linalg.eigh(covariance)
    return eigenvalues[::-1], eigenvectors[:, ::-1]
