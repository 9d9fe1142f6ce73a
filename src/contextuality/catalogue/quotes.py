"""Numbers a docs page quotes, looked up in committed tables when mkdocs builds it.

A page quotes a number by naming its table (a TSV path from the repository's root), the
columns that pick its row, its column and its format (docs/macros.py makes these its
macros), never by typing it: a row missing, or matched twice, fails the build.
"""

from __future__ import annotations

import functools
import itertools
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from contextuality.errors import InputDataError

ROOT = Path(__file__).resolve().parents[3]


@functools.cache
def _table(table: str) -> pd.DataFrame:
    path = ROOT / table
    if not path.is_file():
        raise InputDataError(f"{table}: no such table to quote from")
    return pd.read_csv(path, sep="\t")


def rows(table: str, **keys: Any) -> pd.DataFrame:
    """The rows of `table` whose columns equal `keys` (a list or range: any of its
    values), compared as text so that ``layer=3`` matches a column of integers."""
    frame = _table(table)
    unknown = sorted(set(keys) - set(frame.columns))
    if unknown:
        raise InputDataError(f"{table}: no column {unknown}; it has {list(frame.columns)}")
    chosen = frame
    for column, wanted in keys.items():
        values = [wanted] if isinstance(wanted, str | int | float) else list(wanted)
        chosen = chosen[chosen[column].astype(str).isin([str(value) for value in values])]
    if chosen.empty:
        raise InputDataError(f"{table}: no row where {keys}")
    return chosen


def row(table: str, **keys: Any) -> pd.Series:
    """The one row of `table` whose columns equal `keys` (`rows`)."""
    chosen = rows(table, **keys)
    if len(chosen) > 1:
        raise InputDataError(f"{table}: {len(chosen)} rows where {keys}; a quote names one")
    return chosen.iloc[0]


def _formatted(table: str, found: Any, column: str, format: str) -> str:
    if isinstance(found, float) and not np.isfinite(found):
        raise InputDataError(f"{table}: {column} is empty in the row quoted")
    return f"{found:{format}}".replace("-", "−")


def value(table: str, column: str, format: str = ".3f", **keys: Any) -> str:
    """`column` of the row `keys` pick (`row`), in `format` (a minus as U+2212)."""
    return _formatted(table, row(table, **keys)[column], column, format)


def bounds(
    table: str, low: str = "low", high: str = "high", format: str = ".3f", **keys: Any
) -> str:
    """The interval of the row `keys` pick: ``low–high``."""
    found = row(table, **keys)
    ends = (_formatted(table, found[end], end, format) for end in (low, high))
    return "–".join(ends)


def interval(
    table: str,
    column: str,
    low: str = "low",
    high: str = "high",
    format: str = ".3f",
    **keys: Any,
) -> str:
    """A value with its interval, as the pages write it: ``0.805 (0.786–0.823)``."""
    found = value(table, column, format, **keys)
    return f"{found} ({bounds(table, low, high, format, **keys)})"


def extreme(
    table: str,
    column: str,
    which: str = "max",
    give: str | None = None,
    format: str = ".3f",
    **keys: Any,
) -> str:
    """The largest (``which="max"``) or smallest value of `column` over the rows `keys`
    pick (`rows`), or, with `give`, that row's value of column `give` (the layer that
    scores best)."""
    chosen = rows(table, **keys)
    position = chosen[column].idxmax() if which == "max" else chosen[column].idxmin()
    if give is not None:
        return str(chosen.loc[position, give])
    return _formatted(table, chosen.loc[position, column], column, format)


def means(
    table: str,
    column: str,
    by: str,
    which: str = "range",
    format: str = ".3f",
    **keys: Any,
) -> str:
    """`column` averaged within each value of `by` over the rows `keys` pick (a block's
    heads, say): the smallest (``which="min"``), the largest (``"max"``) or both
    (``"range"``: ``low to high``) of those means."""
    averaged = rows(table, **keys).groupby(by)[column].mean()
    ends = {"min": [averaged.min()], "max": [averaged.max()]}
    ends["range"] = ends["min"] + ends["max"]
    if which not in ends:
        raise InputDataError(f"means: which is min, max or range, not {which!r}")
    return " to ".join(_formatted(table, end, column, format) for end in ends[which])


def change(
    table: str,
    column: str,
    by: str,
    contrast: str,
    against: str,
    which: str = "max",
    format: str = ".3f",
    **keys: Any,
) -> str:
    """How `column`, averaged within each value of `by`, differs where column `contrast` is
    the value `keys` name from where it is `against` (a block's attention with and without
    an intervention, each averaged over heads): the largest |difference| (``which="max"``),
    the smallest (``"min"``), or the value of `by` where either is (``"argmax"``,
    ``"argmin"``)."""
    changed = rows(table, **keys).groupby(by)[column].mean()
    base = {**keys, contrast: against}
    unchanged = rows(table, **base).groupby(by)[column].mean()
    difference = (changed - unchanged.reindex(changed.index)).abs()
    if difference.isna().any():
        raise InputDataError(f"{table}: {by} {list(changed.index)} not all found where {base}")
    if which in ("argmax", "argmin"):
        return str(difference.idxmax() if which == "argmax" else difference.idxmin())
    if which not in ("max", "min"):
        raise InputDataError(f"change: which is max, min, argmax or argmin, not {which!r}")
    found = difference.max() if which == "max" else difference.min()
    return _formatted(table, found, column, format)


@functools.cache
def smallest_significant_rho(n: int, level: float = 0.05) -> str:
    """The smallest |Spearman's ρ| between two orderings of `n` items whose exact two-sided
    permutation p-value is below `level` (the agreement's test in `measures.downstream`),
    to three decimals."""
    ranks = np.array(list(itertools.permutations(range(n))), dtype=np.float64)
    identity = np.arange(n, dtype=np.float64)
    rhos = 1 - 6 * ((ranks - identity) ** 2).sum(axis=1) / (n * (n * n - 1))
    magnitudes = np.round(np.abs(rhos), 12)
    for candidate in np.unique(magnitudes):
        if np.mean(magnitudes >= candidate) < level:
            return f"{candidate:.3f}"
    raise InputDataError(f"no Spearman ρ of {n} items reaches p < {level}")
