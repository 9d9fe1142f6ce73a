"""Spearman's rank correlation with ties (``scipy.stats.spearmanr``, values an ulp apart
ranked as ties), and its confidence interval."""

from __future__ import annotations

from statistics import NormalDist

import numpy as np


def spearman_correlation(x: np.ndarray, y: np.ndarray) -> float:
    """Spearman ρ of paired values, pairs with a NaN dropped (``scipy.stats.spearmanr``,
    ties given the mean of their ranks). NaN below 3 pairs or when either side is
    constant.

    Values that agree to `RANK_TIE_TOLERANCE` of the largest magnitude are ranked as
    ties: two SelfSims of exactly 1 computed in different summation orders differ by an
    ulp, and ρ must not flip on which of them rounding made larger."""
    from scipy.stats import spearmanr  # on first use: a job that ranks nothing skips it

    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    kept = ~(np.isnan(x) | np.isnan(y))
    x, y = _round_to_tolerance(x[kept]), _round_to_tolerance(y[kept])
    if len(x) < 3 or np.all(x == x[0]) or np.all(y == y[0]):
        return float("nan")
    return float(spearmanr(x, y).statistic)


RANK_TIE_TOLERANCE = 1e-12


def _round_to_tolerance(values: np.ndarray) -> np.ndarray:
    """`values` rounded to multiples of `RANK_TIE_TOLERANCE` × their largest magnitude, an
    order-preserving map (ties stay ties, order never reverses)."""
    scale = np.max(np.abs(values), initial=0.0)
    if scale == 0 or not np.isfinite(scale):
        return values
    return np.round(values / scale / RANK_TIE_TOLERANCE)


def spearman_interval(
    rho: np.ndarray, n: np.ndarray, level: float
) -> tuple[np.ndarray, np.ndarray]:
    """Confidence interval at `level` of Spearman ρ from `n` pairs, each element its own:
    Fisher's z = atanh ρ ± the normal quantile × √((1 + ρ²/2)/(n − 3)) (Bonett & Wright
    2000), mapped back by tanh. Closed form, so no resampling; NaN where n ≤ 3."""
    rho, n = np.asarray(rho, dtype=np.float64), np.asarray(n, dtype=np.float64)
    quantile = NormalDist().inv_cdf(0.5 + level / 2)
    with np.errstate(divide="ignore", invalid="ignore"):
        spread = quantile * np.sqrt((1 + rho**2 / 2) / np.where(n > 3, n - 3, np.nan))
        centre = np.arctanh(rho)
    return np.tanh(centre - spread), np.tanh(centre + spread)
