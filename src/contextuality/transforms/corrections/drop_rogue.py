"""``drop_rogue``: the top k rogue dimensions removed, the others kept as they are (no
mean removed).

Timkey & van Schijndel, "All Bark and No Bite: Rogue Dimensions in Transformer Language
Models Obscure Representational Quality", EMNLP 2021: the rogue dimensions are the i with
the largest m_i², m the mean of the fitting rows scaled to unit length, whose sum Σ m_i²
is the expected cosine of two random rows."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from contextuality.errors import ConfigError
from contextuality.rows import row_chunks
from contextuality.transforms.record import AffineParameters, Correction

if TYPE_CHECKING:
    from contextuality.transforms.fitting import TransformSettings

ORDER = 5


def fit_drop_rogue(
    vectors: np.ndarray, settings: TransformSettings, stored_as: np.dtype
) -> AffineParameters:
    """The columns of `vectors` (n, d) but the ``rogue_dimensions`` whose squared mean of
    the unit rows, m_i², is largest (each dimension's share of the expected cosine)."""
    n, d = vectors.shape
    count = settings.rogue_dimensions
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
    return np.zeros(d), np.eye(d)[:, kept], parameters


CORRECTIONS = (
    Correction(
        name="drop_rogue",
        label="without rogue dimensions",
        caption=(
            "The rogue dimensions removed (Timkey & van Schijndel 2021): the k dimensions "
            "with the largest share of the expected cosine of two fitting rows, the mean kept."
        ),
        fit=fit_drop_rogue,
        settings=("rogue_dimensions",),
    ),
)
