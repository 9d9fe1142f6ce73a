"""``standardize``: every dimension scaled to unit variance about the mean (a
per-dimension z-score, ddof=0).

The remedy of Timkey & van Schijndel ("All Bark and No Bite: Rogue Dimensions in
Transformer Language Models Obscure Representational Quality", EMNLP 2021) for rogue
dimensions."""

from __future__ import annotations

import numpy as np

from contextuality.transforms.affine import column_variances, row_mean
from contextuality.transforms.record import AffineParameters, Correction

ORDER = 2


def fit_standardize(vectors: np.ndarray, settings: object, stored_as: np.dtype) -> AffineParameters:
    """x ↦ (x − mean) / std per column of `vectors` (n, d); a constant column is left
    unscaled (only its mean removed)."""
    mean = row_mean(vectors)
    std = np.sqrt(column_variances(vectors, mean))
    scale = np.ones(len(mean))
    np.divide(1.0, std, out=scale, where=std > 0)
    return mean, np.diag(scale), {}


CORRECTIONS = (
    Correction(
        name="standardize",
        label="standardized",
        caption=(
            "Each dimension scaled to unit variance after the mean is removed (a z-score, "
            "Timkey & van Schijndel 2021's remedy for rogue dimensions); a constant "
            "dimension is left unscaled."
        ),
        fit=fit_standardize,
    ),
)
