"""``center``: the mean of the fitting rows removed."""

from __future__ import annotations

import numpy as np

from contextuality.transforms.affine import row_mean
from contextuality.transforms.record import AffineParameters, Correction

ORDER = 1


def fit_center(vectors: np.ndarray, settings: object, stored_as: np.dtype) -> AffineParameters:
    """x ↦ x − mean, the mean of `vectors` (n, d)."""
    return row_mean(vectors), np.eye(vectors.shape[1]), {}


CORRECTIONS = (
    Correction(
        name="center",
        label="centered",
        caption="The mean of the fitting rows removed.",
        fit=fit_center,
    ),
)
