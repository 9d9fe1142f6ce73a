"""The summary values of a layer's measures, and the table that gathers them.

A summary value is a mean over words or sentences with a percentile-bootstrap interval
(`mean_summary`), or a sampled estimate: the mean of the estimates on independent samples,
with the spread of those estimates as its interval (`sampled_summary`); each raw value
comes with its baseline and the adjusted value, raw − baseline (paper §4.1).
`measures_table` lays every layer's summaries out as rows.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from contextuality.errors import InputDataError
from contextuality.files.provenance import read_json


@dataclass(frozen=True)
class Baseline:
    """A baseline value and, for a sampled one, its replicates (None: exact)."""

    value: float
    replicates: np.ndarray | None = None

    @classmethod
    def sampled(cls, estimates: np.ndarray) -> Baseline:
        """A baseline estimated on independent samples, one estimate each: their mean,
        with the estimates as the replicates whose spread is its interval."""
        estimates = np.asarray(estimates, dtype=np.float64)
        return cls(_sample_mean(estimates), estimates)


def _sample_mean(estimates: np.ndarray) -> float:
    """The mean of a sampled statistic's estimates, kept within their range: equal
    estimates (a sample as large as the data) would otherwise average to 1 ulp off them."""
    if not len(estimates):
        return float("nan")
    return float(np.clip(np.mean(estimates), np.min(estimates), np.max(estimates)))


def percentile_interval(replicates: np.ndarray, level: float) -> tuple[float, float]:
    """Equal-tailed percentile interval of bootstrap replicates (e.g. level 0.95)."""
    tail = (1.0 - level) / 2.0
    low, high = np.quantile(replicates, [tail, 1.0 - tail])
    return float(low), float(high)


def bootstrap_means(values: np.ndarray, n_resamples: int, rng: np.random.Generator) -> np.ndarray:
    """Means of `n_resamples` resamples (with replacement) of `values`, shape (n_resamples,).

    Not ``scipy.stats.bootstrap``: that draws its resamples from its own generator,
    whereas these come from the run's named stream (`random_streams`), the same draws for
    every layer, and each costs one multinomial draw and a product, not a copy of the
    values."""
    values = np.asarray(values, dtype=np.float64)
    if len(values) == 0:
        return np.full(n_resamples, np.nan)
    counts = rng.multinomial(len(values), np.full(len(values), 1.0 / len(values)), n_resamples)
    return counts @ values / len(values)


def interval(replicates: np.ndarray, level: float) -> tuple[float, float]:
    """The percentile interval of `replicates` at confidence `level`; NaN where there are
    none or one is not finite."""
    if len(replicates) and np.isfinite(replicates).all():
        return percentile_interval(replicates, level)
    return float("nan"), float("nan")


def mean_summary(
    values: pd.Series,
    baseline: Baseline,
    resamples: int,
    level: float,
    rng: np.random.Generator,
) -> dict[str, Any]:
    """Mean of `values` (NaN skipped) minus a baseline, each with an interval.

    The raw interval is a percentile bootstrap of `resamples` resamples of the values, at
    confidence `level`. An exact baseline (no replicates) has a zero-width interval; the
    adjusted interval pairs each resampled mean with a baseline replicate.
    """
    values = values.dropna()
    raw = bootstrap_means(values.to_numpy(), resamples, rng)
    replicates = baseline.replicates
    if replicates is None:
        replicates = np.full(resamples, baseline.value)
    else:  # pair each resampled mean with a baseline replicate, cycling through them
        replicates = np.resize(replicates, resamples)
    mean = float(values.mean()) if len(values) else float("nan")
    summary = {
        "raw": mean,
        "baseline": baseline.value,
        "adjusted": mean - baseline.value,
        "n": len(values),
        "interval": "bootstrap",
    }
    for name, draws in (("raw", raw), ("baseline", replicates), ("adjusted", raw - replicates)):
        summary[f"{name}_low"], summary[f"{name}_high"] = interval(
            draws if len(values) else np.zeros(0), level
        )
    return summary


def sampled_summary(
    estimates: np.ndarray, n: int, level: float, baseline: np.ndarray | None = None
) -> dict[str, Any]:
    """A sampled statistic from its `estimates` on independent samples of `n` each: the
    value is their mean and the interval their spread (the equal-tailed percentiles, where
    one sample's estimate falls at confidence `level`), so that the value lies inside it.
    With `baseline` (estimated on the same samples), also the baseline and the adjusted
    value, whose estimates pair sample by sample."""
    parts = [("raw", estimates)]
    if baseline is not None:
        parts += [("baseline", baseline), ("adjusted", estimates - baseline)]
    summary: dict[str, Any] = {"n": n, "interval": "sample spread"}
    for name, values in parts:
        summary[name] = _sample_mean(values)
        summary[f"{name}_low"], summary[f"{name}_high"] = interval(values, level)
    return summary


SUMMARY_COLUMNS = (
    "model",
    "transform",
    "layer",
    "n_layers",
    "relative_layer",
    "layer_output",
    "measure",
    "raw",
    "raw_low",
    "raw_high",
    "baseline",
    "baseline_low",
    "baseline_high",
    "adjusted",
    "adjusted_low",
    "adjusted_high",
    "interval",
    "n",
    "dimensions",
    "scale",
)


# The float columns of `measures_table`.
_VALUE_COLUMNS = tuple(
    f"{value}{bound}"
    for value in ("raw", "baseline", "adjusted")
    for bound in ("", "_low", "_high")
)


LAYER_SUMMARY_KEYS = ("model", "transform", "layer", "n_layers", "layer_output", "measures")


def read_layer_summaries(paths: Sequence[str | os.PathLike]) -> list[dict[str, Any]]:
    """The layer summaries in `paths`: a measure job's summary (one layer), or the layer
    geometry step's intrinsic dimension file (``layers``: one per layer). Anything else is
    refused in one line naming the file."""
    summaries = []
    for path in paths:
        content = read_json(path)
        layers = content.get("layers")
        per_layer = isinstance(layers, list) and all(isinstance(one, dict) for one in layers)
        found = layers if per_layer and "measures" not in content else [content]
        for layer_summary in found:
            missing = [key for key in LAYER_SUMMARY_KEYS if key not in layer_summary]
            if missing:
                raise InputDataError(
                    f"{path}: not a layer summary (no {', '.join(missing)}); give the .json "
                    "files the measure and intrinsic dimension steps write"
                )
        summaries += found
    return summaries


def check_measures_table(table: pd.DataFrame, path: str | os.PathLike) -> pd.DataFrame:
    """`table`, read from `path`, refused (InputDataError) unless it has the columns of a
    measures table (`SUMMARY_COLUMNS`)."""
    missing = [column for column in SUMMARY_COLUMNS if column not in table.columns]
    if missing:
        raise InputDataError(
            f"{path}: not a measures table (no {', '.join(missing[:4])} column); give the "
            "measures.tsv the measures table step writes"
        )
    return table


def measures_table(summaries: Sequence[dict[str, Any]]) -> pd.DataFrame:
    """One long table of every (model, transform, layer, measure) of the layer summaries.

    Columns (`SUMMARY_COLUMNS`): model, transform, layer, n_layers, relative_layer (layer /
    n_layers), layer_output (what the hidden state is: the embedding output, a block's
    output, the last block's before or after the final normalization), measure, raw,
    baseline and adjusted values each with their interval (``*_low``, ``*_high``; empty
    where a measure has none), interval (what the raw value's interval is: a percentile
    ``bootstrap`` of a mean over words or sentences, the ``sample spread`` of estimates on
    independent samples, the ``plateau range`` of an estimate over the scales it is read
    at, or ``none``), n, the dimensions a rogue-dimension share names, and the scales an
    intrinsic dimension is read at.
    Sorted by model, transform, measure and layer. A value the summary file holds as null
    (NaN, as `provenance.write_json` writes it) is NaN again here.
    """
    rows = []
    for summary in summaries:
        for measure, values in summary["measures"].items():
            rows.append(
                {
                    "model": summary["model"],
                    "transform": summary["transform"],
                    "layer": summary["layer"],
                    "n_layers": summary["n_layers"],
                    "relative_layer": summary["layer"] / summary["n_layers"],
                    "layer_output": summary["layer_output"],
                    "measure": measure,
                    **values,
                }
            )
    table = pd.DataFrame(rows, columns=list(SUMMARY_COLUMNS))
    table[list(_VALUE_COLUMNS)] = table[list(_VALUE_COLUMNS)].astype(np.float64)
    table["interval"] = table["interval"].where(table["raw_low"].notna(), "none")
    return table.sort_values(["model", "transform", "measure", "layer"])


# The columns that name a census's layer, before its entries' own (`Census.columns`).
CENSUS_LAYER_COLUMNS = ("model", "transform", "layer", "n_layers", "layer_output")


@dataclass(frozen=True)
class Census:
    """A table gathered from one summary row of every layer, ``results/tables/<name>.tsv``
    (`census_table`): a measure's record declares it (`record.Measure.census`).

    row: the summary row whose `entries` (a list of mappings, one a table row) it gathers,
    each beside its layer (`CENSUS_LAYER_COLUMNS`) and the row's values named in `totals`;
    columns: the table's columns, in order; key: what orders a layer's entries; caption:
    what the table holds, column by column (reStructuredText: the report's caption).
    """

    name: str
    row: str
    columns: tuple[str, ...]
    key: str
    caption: str
    totals: tuple[str, ...] = ()
    entries: str = "census"


def census_table(summaries: Sequence[dict[str, Any]], census: Census) -> pd.DataFrame:
    """Every layer's entries of `census` as one table, a row per (model, transform, layer,
    ``census.key``) with ``census.columns``; a layer without any has no row."""
    rows = []
    for summary in summaries:
        found = summary["measures"].get(census.row)
        if not found:
            continue
        layer = {key: summary[key] for key in CENSUS_LAYER_COLUMNS}
        totals = {key: found[key] for key in census.totals}
        rows += [{**layer, **entry, **totals} for entry in found[census.entries]]
    table = pd.DataFrame(rows, columns=list(census.columns))
    return table.sort_values(["model", "transform", "layer", census.key], ignore_index=True)
