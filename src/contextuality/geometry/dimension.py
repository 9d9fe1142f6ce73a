"""Intrinsic dimension of a layer's occurrence vectors as a curve over scale, and the value
on its plateau (scikit-dimension's estimators).

A nearest-neighbour estimate of intrinsic dimension depends on the length scale it looks
at: noise inflates it at the smallest scales, curvature and density changes at large
ones. Facco et al. (2017) and Denti et al. (2022) therefore read it off a curve over
scale, where it is flat. Two curves, on the same distinct points (repeats removed first,
`neighbourhoods`: an embedding layer repeats a word's vector, and a zero distance to the
nearest neighbour breaks every ratio):

- **TwoNN by decimation** (Facco et al. 2017): μ = r₂/r₁, the ratio of a point's distances
  to its second and first nearest neighbours, is Pareto-distributed with exponent d on a
  locally uniform d-dimensional manifold; d is the slope of the line fit with the 10 %
  largest ratios discarded. The points are cut at random into 1, 2, 4, … disjoint subsets
  of at least `min_points` each; fewer points per subset means larger neighbour distances
  (read from the one search of every point, `twonn_curve`). Scale: points per subset;
  interval: the spread of the subsets' estimates.
- **GRIDE** (Denti et al. 2022): the maximum likelihood of d under the generalized ratio
  distribution of r₂ₖ/rₖ (k = 1 is TwoNN's Pareto law, by likelihood rather than line
  fit), at neighbour orders k = 1, 2, 4, … with 2k ≤ `range_max`, on every point. Scale:
  k; interval: ± z standard errors from the observed Fisher information.

The plateau of a curve is the run of `plateau_width` consecutive scales whose estimates
differ least, relative to their mean, if that is at most `plateau_tolerance`; the value is
their mean and its interval their range. A curve without one has no value (NaN): its
estimate moves with the scale it is read at, and the curve says how.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field, replace
from statistics import NormalDist
from typing import Any

import numpy as np

from contextuality.configuration.schema import default
from contextuality.errors import ConfigError, check_integer
from contextuality.geometry.index import distinct_rows, euclidean_neighbours
from contextuality.geometry.search import SearchSettings, exact_nearest

ESTIMATORS = ("twonn", "gride")

# What each estimator's scale counts, and what its interval at one scale is.
SCALE_UNITS = {"twonn": "points per subset", "gride": "neighbour order k"}
SCALE_INTERVALS = {"twonn": "subset spread", "gride": "likelihood"}

# Fewer distinct points than this, and a nearest-neighbour estimate of intrinsic dimension
# rests on too few neighbourhoods to mean much (a WARNING says so).
MIN_DIMENSION_POINTS = 100


# The schema's section of these settings.
_SECTION = ("geometry", "intrinsic_dimension")


@dataclass(frozen=True)
class DimensionSettings:
    """How the intrinsic dimension is estimated (config ``geometry.intrinsic_dimension``)
    and how its neighbours are searched (``geometry.search``)."""

    range_max: int = default(*_SECTION, "range_max")
    min_points: int = default(*_SECTION, "min_points")
    plateau_width: int = default(*_SECTION, "plateau_width")
    plateau_tolerance: float = default(*_SECTION, "plateau_tolerance")
    search: SearchSettings = field(default_factory=SearchSettings)

    def __post_init__(self) -> None:
        if isinstance(self.search, dict):
            object.__setattr__(self, "search", SearchSettings(**self.search))
        section = "geometry.intrinsic_dimension"
        check_integer(section, "range_max", self.range_max, 2)
        check_integer(section, "min_points", self.min_points, 3)
        check_integer(section, "plateau_width", self.plateau_width, 2)
        tolerance = self.plateau_tolerance
        if isinstance(tolerance, bool) or not isinstance(tolerance, int | float) or tolerance <= 0:
            raise ConfigError(
                f"{section}.plateau_tolerance: expected a number above 0, got {tolerance!r}"
            )


@dataclass(frozen=True)
class Curve:
    """One estimator's intrinsic dimension at each scale, ordered from the smallest length
    scale to the largest: `scales` (`SCALE_UNITS`), `radius` (mean distance to the
    farther neighbour of the ratio there), `dimension` and its interval `low`, `high`
    (`SCALE_INTERVALS`; NaN where there is none); `recall`: the lowest share of the exact
    neighbours its searches found (1 where they were exact)."""

    estimator: str
    scales: np.ndarray
    radius: np.ndarray
    dimension: np.ndarray
    low: np.ndarray
    high: np.ndarray
    recall: float = 1.0


@dataclass(frozen=True)
class Plateau:
    """Where a curve is flat: scales `start` to `stop` (indices, inclusive) of the curve,
    their mean `value` and their range `low`, `high`."""

    start: int
    stop: int
    value: float
    low: float
    high: float

    def scale(self, curve: Curve) -> str:
        """The scales of the plateau, as a table cell: ``k=1–4``, ``n=2,500–10,000``."""
        symbol = "k" if curve.estimator == "gride" else "n"
        ends = sorted(int(curve.scales[index]) for index in (self.start, self.stop))
        return f"{symbol}={ends[0]:,}–{ends[1]:,}"


@dataclass(frozen=True)
class Neighbourhoods:
    """Distinct points (float64, n × d), each one's distances to its `k` nearest other
    points (n × k, nearest first; k is 0 where there are fewer than 3 points) and their
    rows (`indices`, n × k; −1 where the search found none), with the `recall` of the
    search that found them (`index.euclidean_neighbours`; of k + `REPEAT_SPARE`
    neighbours for rows stored in a floating dtype)."""

    points: np.ndarray
    distances: np.ndarray
    indices: np.ndarray
    recall: float = 1.0


# Neighbours found beyond the k asked for, so that taking out a point's near-repeats
# (`_near_repeats`) leaves it k without a second search of every point.
REPEAT_SPARE = 8
# The most points left fewer than k neighbours by that that are searched alone (brute
# force, each against every point); past it every point is searched again.
SHORT_POINTS_SEARCHED = 1000


def neighbourhoods(
    vectors: np.ndarray,
    k: int,
    search: SearchSettings | None = None,
    random: np.random.Generator | None = None,
) -> Neighbourhoods:
    """The rows of `vectors` that repeat no earlier row, as float64 in their first order,
    and their `k` nearest neighbours' distances (fewer where fewer points remain).

    A repeat is an exact one or, for rows stored in a floating dtype, one within one unit in
    the last place of that dtype in every element: a GPU pools subword vectors in no fixed
    order, so contexts whose vectors are identical on a CPU can come out an ulp apart in
    float16. As points they are one, and a neighbour distance made of rounding would break
    every ratio. Such rows are nearest neighbours at a distance under 2 eps · their norm,
    so the one search finds them, `REPEAT_SPARE` neighbours more than `k` a point, so
    that taking them out leaves each point its k nearest without a second search (only
    the points left short are searched again, exactly, or every point where many are).
    `search`: where an index finds them past its size (`index.euclidean_neighbours`, its
    training sample and recall queries from `random`)."""
    distinct = distinct_rows(vectors)
    points = np.asarray(vectors if distinct is None else distinct.rows, dtype=np.float64)
    floating = np.issubdtype(vectors.dtype, np.floating)
    distances, indices, recall = _nearest(
        points, k + (REPEAT_SPARE if floating else 0), search, random
    )
    if floating and distances.shape[1]:
        repeats = _near_repeats(points, distances, indices, vectors.dtype)
        if repeats.any():
            points, distances, indices = _without_repeats(points, distances, indices, repeats, k)
            if distances is None:  # many points left short: all searched again
                distances, indices, recall = _nearest(points, k, search, random)
    width = min(k, distances.shape[1])
    return Neighbourhoods(points, distances[:, :width], indices[:, :width], recall)


def _without_repeats(
    points: np.ndarray, distances: np.ndarray, indices: np.ndarray, repeats: np.ndarray, k: int
) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
    """The points not `repeats`, each one's distances to its `k` nearest others among
    them and their rows there: the first k of its neighbours found (`distances`,
    `indices`: more than k) that are not repeats, and for a point left fewer, its k
    nearest by brute force (float64); None for both where more than
    `SHORT_POINTS_SEARCHED` points are."""
    kept = points[~repeats]
    k = min(k, len(kept) - 1)
    if k < 2:
        return kept, np.empty((len(kept), 0)), np.empty((len(kept), 0), dtype=np.intp)
    renumbered = np.cumsum(~repeats) - 1  # a kept point's row among the kept
    found = indices[~repeats]
    present = (found >= 0) & ~repeats[np.maximum(found, 0)]
    order = np.argsort(~present, axis=1, kind="stable")[:, :k]
    nearest = np.take_along_axis(distances[~repeats], order, 1)
    rows = renumbered[np.maximum(np.take_along_axis(found, order, 1), 0)]
    neighbours = np.where(np.take_along_axis(present, order, 1), rows, -1)
    short = np.flatnonzero(present.sum(axis=1) < k)
    if len(short) > SHORT_POINTS_SEARCHED:
        return kept, None, None
    if len(short):
        nearest[short], neighbours[short] = _brute_force_nearest(kept, short, k)
    return kept, nearest, neighbours


def _brute_force_nearest(
    points: np.ndarray, queries: np.ndarray, k: int
) -> tuple[np.ndarray, np.ndarray]:
    """The distances (float64, from the differences) of rows `queries` of `points` to
    their `k` nearest other rows, nearest first, and those rows (queries × k each)."""
    candidates = exact_nearest(points, queries, k, True, "cpu")
    gaps = np.linalg.norm(points[candidates] - points[queries, None, :], axis=2)
    order = np.argsort(gaps, axis=1, kind="stable")
    return np.take_along_axis(gaps, order, 1), np.take_along_axis(candidates, order, 1)


def _nearest(
    points: np.ndarray,
    k: int,
    search: SearchSettings | None = None,
    random: np.random.Generator | None = None,
) -> tuple[np.ndarray, np.ndarray, float]:
    """Each point's distances to its `k` nearest other points (at most n − 1, none below
    2), nearest first, their rows (n × k each) and the search's recall."""
    k = min(k, len(points) - 1)
    if k < 2:
        return np.empty((len(points), 0)), np.empty((len(points), 0), dtype=np.intp), 1.0
    return euclidean_neighbours(points, k, search, random)


def _near_repeats(
    points: np.ndarray, distances: np.ndarray, indices: np.ndarray, stored: np.dtype
) -> np.ndarray:
    """Which rows of `points` (float64 copies of rows in dtype `stored`) are within one ulp
    of `stored` of an earlier row in every element (n,), among each row's neighbours
    closer than 2 eps · its norm (one ulp an element is at most eps · the larger norm)."""
    reach = 2.0 * float(np.finfo(stored).eps) * np.linalg.norm(points, axis=1)
    repeats = np.zeros(len(points), dtype=bool)
    for row, column in zip(*np.nonzero(distances <= reach[:, None]), strict=True):
        other = indices[row, column]
        larger = np.maximum(np.abs(points[row]), np.abs(points[other])).astype(stored)
        if np.all(np.abs(points[row] - points[other]) <= np.spacing(larger)):
            repeats[max(row, other)] = True  # the later of the pair
    return repeats


def _empty(estimator: str) -> Curve:
    nothing = np.empty(0)
    return Curve(estimator, nothing, nothing, nothing, nothing, nothing)


def _twonn(distances: np.ndarray) -> float:
    """TwoNN's line fit (10 % largest ratios discarded) from the first two neighbour
    distances of each point."""
    from skdim.id import TwoNN

    return float(TwoNN(dist=True).fit(distances[:, :2]).dimension_)


def twonn_curve(
    found: Neighbourhoods, min_points: int, level: float, rng: np.random.Generator
) -> Curve:
    """TwoNN on 1, 2, 4, … disjoint random subsets of the distinct points `found`, as long
    as each keeps at least `min_points`: per level the mean of the subsets' estimates,
    their percentile spread at confidence `level` (none for one subset), and the mean
    distance to the second neighbour; the curve's recall that of the search `found`.

    A point's two nearest within its subset are the first two of its subset among its
    nearest in all (`found`): a nearer one of its subset would stand before them there,
    so they are the subset's exact two wherever `found` is exact. A point with fewer than
    two of its subset in that list is searched in its subset by brute force: no index is
    built again for a subset."""
    points = found.points
    order = rng.permutation(len(points))
    subset_of = np.zeros(len(points), dtype=np.intp)
    sizes, radius, dimension, low, high = [], [], [], [], []
    subsets = 1
    while len(points) // subsets >= min_points:
        parts = np.array_split(order, subsets)
        for number, part in enumerate(parts):
            subset_of[part] = number
        nearest = _two_nearest_within(found, subset_of)
        estimates, second = [], []
        for part in parts:
            two = nearest[part]
            short = np.flatnonzero(np.isnan(two[:, 1]))
            if len(short):
                two[short] = _brute_force_nearest(points[part], short, 2)[0]
            estimates.append(_twonn(two))
            second.append(two[:, 1])
        sizes.append(len(points) // subsets)
        radius.append(float(np.mean(np.concatenate(second))))
        dimension.append(float(np.mean(estimates)))
        tail = (1.0 - level) / 2.0
        bounds = np.quantile(estimates, [tail, 1.0 - tail]) if subsets > 1 else (math.nan,) * 2
        low.append(float(bounds[0]))
        high.append(float(bounds[1]))
        subsets *= 2
    values = (sizes, radius, dimension, low, high)
    arrays = (np.array(value, dtype=np.float64) for value in values)
    return Curve("twonn", *arrays, recall=found.recall)


def _two_nearest_within(found: Neighbourhoods, subset_of: np.ndarray) -> np.ndarray:
    """Each point's distances to the first two points of its own subset (`subset_of`: a
    point's subset) among its nearest `found` (n × 2); NaN where fewer stand there."""
    neighbours = found.indices
    same = (neighbours >= 0) & (subset_of[np.maximum(neighbours, 0)] == subset_of[:, None])
    rank = np.cumsum(same, axis=1, dtype=np.int32)
    nearest = np.full((len(neighbours), 2), np.nan)
    for place in (1, 2):
        column = np.argmax(same & (rank == place), axis=1)
        has = rank[:, -1] >= place
        nearest[has, place - 1] = found.distances[has, column[has]]
    return nearest


def gride(distances: np.ndarray, order: int) -> tuple[float, float]:
    """GRIDE's maximum-likelihood dimension and its standard error at neighbour order
    `order` = n₁ (n₂ = 2n₁), from each point's sorted neighbour distances (n × ≥ 2n₁).

    μ = r₂ₖ/rₖ has density d (μ^d − 1)^(n₂−n₁−1) / (B(n₂−n₁, n₁) μ^((n₂−1)d+1)) on a locally
    uniform d-dimensional manifold (Denti et al. 2022). As dadapy does: ratios of tied
    distances dropped, those above q₅₀ + 20 (q₉₅ − q₅₀) cut as overlapping points, and
    (N − 1) log d in the likelihood (unbiased for n₁ = 1). The score is decreasing in d,
    so its one root is bracketed and found by Brent's method; the standard error is
    1/√(observed information)."""
    from scipy.optimize import brentq

    farther = 2 * order
    with np.errstate(divide="ignore", invalid="ignore"):
        log_ratio = np.log(distances[:, farther - 1] / distances[:, order - 1])
    log_ratio = log_ratio[np.isfinite(log_ratio) & (log_ratio > 0)]
    ratio = np.exp(log_ratio)
    q95, q50 = np.percentile(ratio, [95, 50])
    log_ratio = log_ratio[ratio < q50 + 20 * (q95 - q50)]
    n, gap, total = len(log_ratio), farther - order - 1, log_ratio.sum()

    def score(d: float) -> float:
        return (
            (n - 1) / d
            + gap * np.sum(log_ratio / -np.expm1(-d * log_ratio))
            - (farther - 1) * total
        )

    high = 1.0
    while score(high) > 0:
        high *= 2.0
    d = brentq(score, 1e-8, high, xtol=1e-12, rtol=1e-12)
    information = (n - 1) / d**2 + gap * np.sum(
        (log_ratio / (2.0 * np.sinh(d * log_ratio / 2.0))) ** 2
    )
    return float(d), float(1.0 / np.sqrt(information))


def gride_curve(distances: np.ndarray, level: float) -> Curve:
    """GRIDE at neighbour orders k = 1, 2, 4, … while 2k is within the neighbour
    `distances` found (n × k_max, sorted), each ± z standard errors at confidence
    `level`; the radius is the mean distance to the 2k-th neighbour."""
    orders = 2 ** np.arange(int(np.log2(max(distances.shape[1], 1))))
    found = np.array([gride(distances, int(order)) for order in orders]).reshape(-1, 2)
    spread = NormalDist().inv_cdf(0.5 + level / 2.0) * found[:, 1]
    return Curve(
        "gride",
        orders.astype(np.float64),
        distances[:, 2 * orders - 1].mean(axis=0),
        found[:, 0],
        found[:, 0] - spread,
        found[:, 0] + spread,
    )


def dimension_curves(
    found: Neighbourhoods, settings: DimensionSettings, level: float, rng: np.random.Generator
) -> dict[str, Curve]:
    """Both estimators' curves (`ESTIMATORS`) on the distinct points `found`, from their
    one search of `range_max` nearest neighbours (GRIDE's, and every level of TwoNN's); a
    curve with no scale where too few points remain; each with that search's recall."""
    if found.distances.shape[1] < 2:
        return {name: _empty(name) for name in ESTIMATORS}
    with warnings.catch_warnings():
        # TwoNN drops tied neighbour distances; after removing repeats they are a
        # handful of points at most.
        warnings.simplefilter("ignore", UserWarning)
        return {
            "twonn": twonn_curve(found, settings.min_points, level, rng),
            "gride": replace(gride_curve(found.distances, level), recall=found.recall),
        }


def plateau(curve: Curve, width: int, tolerance: float) -> Plateau | None:
    """The run of `width` consecutive scales of `curve` with the smallest relative range
    (max − min) / mean, the smaller length scale on a tie, if that range is at most
    `tolerance`; None when no run is that flat or the curve is shorter than `width`."""
    best = None
    for start in range(len(curve.dimension) - width + 1):
        window = curve.dimension[start : start + width]
        if not np.isfinite(window).all():
            continue
        spread = (window.max() - window.min()) / window.mean()
        if spread <= tolerance and (best is None or spread < best[0]):
            best = (spread, start)
    if best is None:
        return None
    start = best[1]
    window = curve.dimension[start : start + width]
    return Plateau(
        start, start + width - 1, float(window.mean()), float(window.min()), float(window.max())
    )


# The columns of a model's intrinsic-dimension curves, a row per layer, estimator and scale
# (`curve_rows`; the geometry step's curves table).
CURVE_COLUMNS = (
    "model",
    "layer",
    "n_layers",
    "layer_output",
    "transform",
    "estimator",
    "scale_unit",
    "scale",
    "radius",
    "dimension",
    "dimension_low",
    "dimension_high",
    "interval",
    "on_plateau",
    "n",
    "knn_recall",
)


def plateau_summary(curve: Curve, found: Plateau | None, n: int) -> dict[str, Any]:
    """The measures-table values of one curve: its plateau's mean, with their range as
    interval and its scales, or NaN with ``no plateau``."""
    if found is None:
        return {"raw": math.nan, "n": n, "interval": "none", "scale": "no plateau"}
    return {
        "raw": found.value,
        "raw_low": found.low,
        "raw_high": found.high,
        "n": n,
        "interval": "plateau range",
        "scale": found.scale(curve),
    }


def curve_rows(
    layer_fields: dict[str, Any], curve: Curve, found: Plateau | None, n: int
) -> list[dict[str, Any]]:
    """One row per scale of `curve` (`CURVE_COLUMNS`)."""
    return [
        {
            **layer_fields,
            "estimator": curve.estimator,
            "scale_unit": SCALE_UNITS[curve.estimator],
            "scale": int(curve.scales[index]),
            "radius": curve.radius[index],
            "dimension": curve.dimension[index],
            "dimension_low": curve.low[index],
            "dimension_high": curve.high[index],
            "interval": SCALE_INTERVALS[curve.estimator]
            if np.isfinite(curve.low[index])
            else "none",
            "on_plateau": found is not None and found.start <= index <= found.stop,
            "n": n,
            "knn_recall": curve.recall,
        }
        for index in range(len(curve.scales))
    ]
