"""Intrinsic dimension of a layer's occurrence vectors, through scikit-dimension.

Two estimators on seeded samples of occurrences, exact duplicates removed first (an
embedding layer repeats a word's vector, and a zero distance to the nearest neighbour
breaks both estimators' ratios):

- TwoNN (Facco et al. 2017): from μ = r₂/r₁, the ratio of each point's distances to its
  second and first nearest neighbours, Pareto-distributed with exponent d on a locally
  uniform d-dimensional manifold (the 10 % largest ratios discarded, the line fit of the
  paper);
- GRIDE (Denti et al. 2022), multiscale: the maximum likelihood of d under the generalized
  ratio distribution of r_{2k}/r_k (TwoNN's Pareto law for k = 1), at a larger neighbour
  order k (`DimensionSettings.gride_scale`), which looks past short-scale noise.

Each estimate is repeated on `samples` independent samples; the value is their mean and
the interval their spread (`summary.sampled_summary`).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np

from contextuality.errors import check_integer

ESTIMATORS = ("twonn", "gride")

# Fewer distinct points than this in a sample, and a nearest-neighbour estimate of
# intrinsic dimension rests on too few neighbourhoods to mean much (a WARNING says so).
MIN_DIMENSION_POINTS = 100


@dataclass(frozen=True)
class DimensionSettings:
    """How the intrinsic dimension is estimated (config ``geometry.intrinsic_dimension``)."""

    sample_size: int = 1000
    samples: int = 5
    gride_scale: int = 4

    def __post_init__(self) -> None:
        section = "geometry.intrinsic_dimension"
        check_integer(section, "sample_size", self.sample_size, 10)
        check_integer(section, "samples", self.samples, 1)
        check_integer(section, "gride_scale", self.gride_scale, 1)


def distinct_rows(vectors: np.ndarray) -> np.ndarray:
    """The rows of `vectors` with exact repeats removed, in their first order."""
    contiguous = np.ascontiguousarray(vectors)
    as_records = contiguous.view(np.dtype((np.void, contiguous.dtype.itemsize * vectors.shape[1])))
    _, first = np.unique(as_records.ravel(), return_index=True)
    return contiguous[np.sort(first)]


def estimate(points: np.ndarray, settings: DimensionSettings) -> dict[str, float]:
    """TwoNN and GRIDE estimates of one sample of distinct `points` (n × d, float64);
    TwoNN from its first two nearest-neighbour distances, found once (`skdim.get_nn`)
    rather than from every distance sorted."""
    from skdim import get_nn
    from skdim.id import GRIDE, TwoNN

    neighbours, _ = get_nn(points, k=2)
    with warnings.catch_warnings():
        # Tied neighbour distances are dropped by the estimators; after removing exact
        # duplicates they are a handful of points at most.
        warnings.simplefilter("ignore", UserWarning)
        return {
            "twonn": float(TwoNN(dist=True).fit(neighbours).dimension_),
            "gride": float(GRIDE(n1=settings.gride_scale).fit(points).dimension_),
        }


def sampled_dimensions(
    vectors: np.ndarray, settings: DimensionSettings, rng: np.random.Generator
) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Each estimator's estimates on `settings.samples` samples of `settings.sample_size`
    rows of `vectors` (all rows when fewer), drawn from `rng` without replacement, each
    de-duplicated; returns them by estimator (`ESTIMATORS`) and each sample's number of
    distinct points. A sample of fewer distinct points than an estimator needs (2·k + 1
    for GRIDE's order k) has NaN estimates: a layer too degenerate to estimate is NaN, with
    the step's warning, not a failed run."""
    size = min(settings.sample_size, len(vectors))
    needed = 2 * settings.gride_scale + 1
    estimates: dict[str, list[float]] = {name: [] for name in ESTIMATORS}
    counts = []
    for _ in range(settings.samples):
        chosen = np.sort(rng.choice(len(vectors), size=size, replace=False))
        points = distinct_rows(np.asarray(vectors[chosen], dtype=np.float64))
        counts.append(len(points))
        found = estimate(points, settings) if len(points) >= needed else {}
        for name in ESTIMATORS:
            estimates[name].append(found.get(name, math.nan))
    return {name: np.array(values) for name, values in estimates.items()}, np.array(counts)
