"""``abtt``: all-but-the-top, the mean and the projections on the top D principal
directions of the fitting rows removed.

Mu & Viswanath, "All-but-the-Top: Simple and Effective Postprocessing for Word
Representations", ICLR 2018."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from contextuality.errors import ConfigError
from contextuality.transforms.affine import descending_eigen, row_covariance, row_mean
from contextuality.transforms.record import AffineParameters, Correction

if TYPE_CHECKING:
    from contextuality.transforms.fitting import TransformSettings

ORDER = 3


def fit_abtt(
    vectors: np.ndarray, settings: TransformSettings, stored_as: np.dtype
) -> AffineParameters:
    """x ↦ (x − mean)(I − U Uᵀ), U (d, D) the top D eigenvectors of the covariance of
    `vectors` (n, d); D is ``abtt_directions`` (None: max(1, round(d / 100))), below d."""
    d = vectors.shape[1]
    mean = row_mean(vectors)
    _, eigenvectors = descending_eigen(row_covariance(vectors, mean))
    directions = settings.abtt_directions
    if directions is None:
        directions = max(1, round(d / 100))
    if directions >= d:
        raise ConfigError(
            f"abtt: measures.transform_fit.abtt_directions {directions} must be less than "
            f"the dimension {d}"
        )
    top = eigenvectors[:, :directions]
    return mean, np.eye(d) - top @ top.T, {"directions": directions}


CORRECTIONS = (
    Correction(
        name="abtt",
        label="all-but-the-top",
        caption=(
            "All-but-the-top (Mu & Viswanath 2018): the mean and the top principal "
            "directions of the fitting rows removed, by default max(1, round(d/100)) of them."
        ),
        fit=fit_abtt,
        settings=("abtt_directions",),
    ),
)
