"""What an alignment value is worth. Its interval from a bootstrap over sentences (the
percentile interval less the bootstrap's bias) and its permutation null, calibrated as
calibrated-similarity (Gröger et al. 2026) does.

A bootstrap draw resamples the sentences of the sample with replacement, each with all its
occurrences: every row counts as many times as its sentence was drawn, the same counts for
both sides of a pair (`sentence_weights`). A permutation pairs the right side's rows with
the left's at random, one permutation for every layer, so the best of a row of layers has a
null of its own, the best of the same row under each permutation (`best_of_nulls`).

Calibration of a value s against its K permutation values (calibrated-similarity's
``calibrate``, α = 1 − confidence): τ is the ⌈(1 − α)(K + 1)⌉-th smallest of {s} ∪ nulls,
the p-value (1 + #{null ≥ s}) / (K + 1), and the calibrated score
clip((s − τ) / (s_max − τ), 0, 1): 0 for a value the null reaches at level α, 1 for the
largest value the measure takes. A distance is calibrated as its negative (its best value
s_min in place of s_max).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class ResampledAlignment:
    """Every alignment measure between the layers of two models on one set of rows, by
    name: `values` (left layers × right layers), `nulls` under each permutation
    (permutations × …) and `draws` under each bootstrap draw (draws × …); `k` the
    neighbours per row, `n_rows` the rows; `recall` the share of the exact neighbours the
    searches found (left layers × right layers, the lower of the two; None: no search)."""

    values: dict[str, np.ndarray]
    nulls: dict[str, np.ndarray]
    draws: dict[str, np.ndarray]
    k: int
    n_rows: int
    recall: np.ndarray | None = None


def sentence_weights(
    sentences: np.ndarray, draws: int, random: np.random.Generator
) -> Iterator[np.ndarray]:
    """For each of `draws` bootstrap draws, how many times each row counts: the number of
    times its sentence (`sentences`, one id per row) is drawn when as many sentences as the
    rows hold are drawn with replacement."""
    unique, of_row = np.unique(sentences, return_inverse=True)
    for _ in range(draws):
        counts = np.bincount(random.integers(0, len(unique), len(unique)), minlength=len(unique))
        yield counts[of_row]


def bootstrap_interval(
    draws: np.ndarray,
    value: np.ndarray,
    confidence: float,
    limits: tuple[float, float] = (-np.inf, np.inf),
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The percentile interval of the bootstrap `draws` (draws × the value's shape) at
    `confidence`, less the bootstrap's estimate of bias (the draws' mean minus `value`)
    and kept within the measure's `limits`, and that bias; NaN where no draw is finite or
    there are none.

    A draw holds about 63% of the sentences, some twice: the biased estimators (CKA,
    Procrustes) move with the rows' count as they move with n (CKA's bias is about p/n),
    so their plain percentile interval sits beside the value where the value is near its
    null; less the bias, it is centred where the value is. The plain percentile interval
    is low + bias, high + bias."""
    value = np.asarray(value, dtype=float)
    if not len(draws):
        nothing = np.full(value.shape, np.nan)
        return nothing, nothing.copy(), nothing.copy()
    tail = 100 * (1 - confidence) / 2
    with _quiet_nan():
        low, high = np.nanpercentile(draws, [tail, 100 - tail], axis=0)
        bias = np.nanmean(draws, axis=0) - value
    return np.clip(low - bias, *limits), np.clip(high - bias, *limits), bias


@dataclass(frozen=True)
class Calibration:
    """A value against its permutation values, all arrays of the value's shape: the nulls'
    mean, τ the critical value at level α, the add-one p-value, and the calibrated score."""

    null: np.ndarray
    threshold: np.ndarray
    p_value: np.ndarray
    calibrated: np.ndarray


def calibrate(
    value: np.ndarray,
    nulls: np.ndarray,
    confidence: float,
    best: float,
    distance: bool = False,
) -> Calibration:
    """`value` (any shape) against its `nulls` (K × that shape), as calibrated-similarity's
    ``calibrate`` does (module docstring), `best` the value of a perfect match (s_max, or
    s_min for a distance); NaN where the value or a null is NaN."""
    value, nulls = np.asarray(value, dtype=float), np.asarray(nulls, dtype=float)
    sign = -1.0 if distance else 1.0
    observed, permuted, ceiling = sign * value, sign * nulls, sign * best
    count = len(permuted)
    combined = np.sort(np.concatenate([observed[None], permuted]), axis=0)
    place = min(max(math.ceil(confidence * (count + 1)) - 1, 0), count)
    threshold = combined[place]
    reached = np.sum(permuted >= observed, axis=0)
    p_value = (1.0 + reached) / (count + 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        calibrated = np.clip((observed - threshold) / np.maximum(ceiling - threshold, 1e-12), 0, 1)
    unknown = np.isnan(observed) | np.isnan(permuted).any(axis=0)
    return Calibration(
        null=np.where(unknown, np.nan, nulls.mean(axis=0)),
        threshold=np.where(unknown, np.nan, sign * threshold),
        p_value=np.where(unknown, np.nan, p_value),
        calibrated=np.where(unknown, np.nan, calibrated),
    )


def best_of_nulls(nulls: np.ndarray, distance: bool = False) -> np.ndarray:
    """The null of choosing the best of a row's layers: for each permutation (axis 0) and
    each left layer (axis 1), the best value of its row of right layers (axis 2), NaN
    skipped; (K × left layers)."""
    with _quiet_nan():
        return np.nanmin(nulls, axis=2) if distance else np.nanmax(nulls, axis=2)


@contextmanager
def _quiet_nan() -> Iterator[None]:
    """Silence numpy's warning for a slice that is all NaN (its result is NaN, as meant)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        yield
