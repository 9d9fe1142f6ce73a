"""Each layer's best-matching layer of another model, and what that choice is worth. Its
margin over the second best, its bootstrap interval and the share of draws in which it
stays the best, and its calibration against the null of choosing the best of that many
layers (the best of the row under each permutation, calibrated-similarity's
``calibrate_layers`` with the maximum over the row)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from contextuality.geometry.alignment_catalogue import ALIGNMENT_MEASURES
from contextuality.geometry.resampling import (
    ResampledAlignment,
    best_of_nulls,
    bootstrap_interval,
    calibrate,
)

BEST_LAYER_COLUMNS = [
    "model",
    "layer",
    "other_model",
    "transform",
    "occurrences",
    "measure",
    "best_layer",
    "value",
    "low",
    "high",
    "null",
    "margin",
    "stays_best",
    "best_null",
    "best_threshold",
    "best_p",
    "best_calibrated",
    "depth",
    "best_depth",
]


def empty_best_layers() -> pd.DataFrame:
    """A best-layer table of no rows."""
    return pd.DataFrame(columns=BEST_LAYER_COLUMNS)


def _margin(row: np.ndarray, distance: bool) -> float:
    """How much closer the best of `row` is than the second best (≥ 0; NaN with fewer
    than two values)."""
    closer = np.sort((-row if distance else row)[np.isfinite(row)])[::-1]
    return float(closer[0] - closer[1]) if len(closer) > 1 else float("nan")


def _stays_best(draws: np.ndarray, best: int, record) -> float:
    """The share of bootstrap draws (draws × candidates) whose best candidate is `best`
    (NaN without draws; a draw with no finite value counts as a change)."""
    if not len(draws):
        return float("nan")
    finite = np.isfinite(draws).any(axis=1)
    chosen = np.full(len(draws), -1)
    chosen[finite] = record.closest(draws[finite], axis=1)
    return float(np.mean(chosen == best))


def best_matching_layers(
    found: ResampledAlignment,
    names: tuple[str, str],
    layers: tuple[list[int], list[int]],
    occurrences: str,
    confidence: float,
    transform: str = "none",
) -> pd.DataFrame:
    """For each layer of either model, its best-matching layer of the other by each
    measure of the catalogue (the most similar; the nearest by a distance) in `found`
    (left layers × right layers), as rows of `BEST_LAYER_COLUMNS`: the value and its
    interval, the null of that pair, the margin, the share of draws it stays best, and
    the calibration against the best of each permutation's row (`best_null` their mean,
    `best_threshold`, `best_p`, `best_calibrated`); depths are layer / the model's
    deepest layer."""
    rows = []
    for side in (0, 1):
        model, other_model = names[side], names[1 - side]
        own_layers, other_layers = layers[side], layers[1 - side]
        for record in ALIGNMENT_MEASURES:
            values, nulls, draws = (
                grids[record.name] if side == 0 else np.swapaxes(grids[record.name], -1, -2)
                for grids in (found.values, found.nulls, found.draws)
            )
            best_nulls = best_of_nulls(nulls, record.distance)
            for place, layer in enumerate(own_layers):
                row = values[place]
                if np.isnan(row).all():
                    continue
                best = int(record.closest(row))
                low, high, _ = bootstrap_interval(
                    draws[:, place, best], row[best], confidence, record.limits
                )
                pair = calibrate(
                    row[best], nulls[:, place, best], confidence, record.perfect, record.distance
                )
                chosen = calibrate(
                    row[best], best_nulls[:, place], confidence, record.perfect, record.distance
                )
                rows.append(
                    {
                        "model": model,
                        "layer": layer,
                        "other_model": other_model,
                        "transform": transform,
                        "occurrences": occurrences,
                        "measure": record.name,
                        "best_layer": other_layers[best],
                        "value": row[best],
                        "low": float(low),
                        "high": float(high),
                        "null": float(pair.null),
                        "margin": _margin(row, record.distance),
                        "stays_best": _stays_best(draws[:, place], best, record),
                        "best_null": float(chosen.null),
                        "best_threshold": float(chosen.threshold),
                        "best_p": float(chosen.p_value),
                        "best_calibrated": float(chosen.calibrated),
                        "depth": layer / max(max(own_layers), 1),
                        "best_depth": other_layers[best] / max(max(other_layers), 1),
                    }
                )
    return pd.DataFrame(rows, columns=BEST_LAYER_COLUMNS)
