"""Numbers a docs page quotes, looked up in committed tables when mkdocs builds it.

A page quotes a number by naming its table (`quoted_sources.table`: a TSV path from the
repository's root, a bench's JSON records, a report's Markdown table), the columns that
pick its row, its column and its format (docs/macros.py makes these its macros), or a
constant of the code by its name, never by typing it: a row missing, or matched twice,
fails the build.
"""

from __future__ import annotations

import fnmatch
import functools
import itertools
from typing import Any

import numpy as np
import pandas as pd

from contextuality.catalogue import quoted_sources
from contextuality.errors import InputDataError


def rows(table: str, /, **keys: Any) -> pd.DataFrame:
    """The rows of `table` whose columns equal `keys` (a list or range: any of its
    values; ``like:<pattern>``: every value a shell pattern matches, every seed's run at one
    step, ``like:tiny-gpt2-*.step20``), compared as text so that ``layer=3`` matches a
    column of integers (and ``breadth=64`` one of floats, where a missing value made it
    float)."""
    frame = quoted_sources.table(table)
    unknown = sorted(set(keys) - set(frame.columns))
    if unknown:
        raise InputDataError(f"{table}: no column {unknown}; it has {list(frame.columns)}")
    chosen = frame
    for column, wanted in keys.items():
        values = [wanted] if isinstance(wanted, str | int | float) else list(wanted)
        chosen = chosen[_matches(_as_text(chosen[column]), [str(value) for value in values])]
    if chosen.empty:
        raise InputDataError(f"{table}: no row where {keys}")
    return chosen


def _as_text(column: pd.Series) -> pd.Series:
    """A column's values as text, a whole float without its ``.0``."""
    if not pd.api.types.is_float_dtype(column):
        return column.astype(str)
    return column.map(lambda value: f"{value:.0f}" if value % 1 == 0 else str(value))


# A key's value that is a shell pattern, not a value: ``like:tiny-gpt2-*.step20``.
PATTERN = "like:"


def _matches(cells: pd.Series, wanted: list[str]) -> pd.Series:
    """Whether each cell is one of `wanted`, or matches one given as ``like:<pattern>``
    (a shell pattern matched whole; a cell such as ``isoscore*`` is a value)."""
    found = cells.isin([value for value in wanted if not value.startswith(PATTERN)])
    for pattern in (value.removeprefix(PATTERN) for value in wanted if value.startswith(PATTERN)):
        found |= cells.map(lambda cell, pattern=pattern: fnmatch.fnmatchcase(cell, pattern))
    return found


def row(table: str, /, **keys: Any) -> pd.Series:
    """The one row of `table` whose columns equal `keys` (`rows`)."""
    chosen = rows(table, **keys)
    if len(chosen) > 1:
        raise InputDataError(f"{table}: {len(chosen)} rows where {keys}; a quote names one")
    return chosen.astype(object).iloc[0]  # each column its own type: an int stays one


def _matching(table: str, where: str | None, **keys: Any) -> pd.DataFrame:
    """The rows `keys` pick (`rows`) that satisfy `where`, a pandas query (all without)."""
    chosen = rows(table, **keys)
    return chosen if where is None else chosen.query(where)


def _chosen(table: str, where: str | None, **keys: Any) -> pd.DataFrame:
    """The rows `_matching` picks, InputDataError where there are none to quote."""
    chosen = _matching(table, where, **keys)
    if chosen.empty:
        raise InputDataError(f"{table}: no row where {keys} and {where}")
    return chosen


def _ends(values: pd.Series, which: str, caller: str, allowed: tuple[str, ...]) -> list[Any]:
    """What `which` names of `values`: its smallest (``"min"``), largest (``"max"``), both
    (``"range"``) or its one value (``"one"``, where it holds one); InputDataError for a
    `which` outside `allowed`."""
    ends = {
        "min": [values.min()],
        "max": [values.max()],
        "range": [values.min(), values.max()],
        "one": list(values),
    }
    if which not in allowed or (which == "one" and len(values) != 1):
        named = f"{', '.join(allowed[:-1])} or {allowed[-1]}" + (" (of one)" * ("one" in allowed))
        raise InputDataError(f"{caller}: which is {named}, not {which!r}")
    return ends[which]


def _formatted(table: str, found: Any, column: str, format: str) -> str:
    if isinstance(found, float) and not np.isfinite(found):
        raise InputDataError(f"{table}: {column} is empty in the row quoted")
    return f"{found:{format}}".replace("-", "−")


def constant(name: str, format: str = "") -> str:
    """A constant of the code (`quoted_sources.constant`: ``module:NAME[key]``), in
    `format`: a setting's default or a bound a page states."""
    return _formatted(name, quoted_sources.constant(name), name, format)


def value(
    table: str, column: str, /, format: str = ".3f", empty: str | None = None, **keys: Any
) -> str:
    """`column` of the row `keys` pick (`row`), in `format` (a minus as U+2212), or `empty`
    where the cell is empty and the page says what that means (an intrinsic dimension
    without a plateau: ``none``), else refused; a key may be named ``table`` or
    ``column``, as a report's columns are."""
    found = row(table, **keys)[column]
    if empty is not None and isinstance(found, float) and np.isnan(found):
        return empty
    return _formatted(table, found, column, format)


def median(
    table: str, column: str, format: str = ".3f", where: str | None = None, **keys: Any
) -> str:
    """The median of `column` over the rows `keys` pick that satisfy `where` (a pandas
    query): a norm typical of a sentence's later positions."""
    values = _chosen(table, where, **keys)[column].astype(float)
    return _formatted(table, values.median(), column, format)


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
    where: str | None = None,
    **keys: Any,
) -> str:
    """The largest (``which="max"``) or smallest value of `column` over the rows `keys`
    pick (`rows`) that satisfy `where` (a pandas query), or, with `give`, that row's value
    of column `give` (the layer that scores best)."""
    chosen = _chosen(table, where, **keys)
    position = chosen[column].idxmax() if which == "max" else chosen[column].idxmin()
    if give is not None:
        return str(chosen.loc[position, give])
    return _formatted(table, chosen.loc[position, column], column, format)


def span(
    table: str,
    column: str,
    format: str = ".3f",
    where: str | None = None,
    sep: str = " to ",
    **keys: Any,
) -> str:
    """The smallest and the largest `column` over the rows `keys` pick that satisfy `where`
    (a pandas query: each block against the one before), joined by `sep` (``0.54 to
    0.65``; ``"–"`` for a range in parentheses), or the one value where they all hold it."""
    chosen = _chosen(table, where, **keys)
    ends = _ends(chosen[column], "range", "span", ("range",))
    low, high = (_formatted(table, end, column, format) for end in ends)
    return low if low == high else f"{low}{sep}{high}"


def spread(table: str, column: str, format: str = ".3f", **keys: Any) -> str:
    """The mean of `column` over the rows `keys` pick, with their smallest and largest in
    parentheses: ``0.954 (0.945–0.963)``, a value over seeds with its range."""
    values = rows(table, **keys)[column].astype(float)
    low, high = (_formatted(table, end, column, format) for end in (values.min(), values.max()))
    return f"{_formatted(table, values.mean(), column, format)} ({low}–{high})"


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
    ends = _ends(averaged, which, "means", ("min", "max", "range"))
    return " to ".join(_formatted(table, end, column, format) for end in ends)


def change(
    table: str,
    column: str,
    by: str,
    contrast: str,
    against: str,
    which: str = "max",
    format: str = ".3f",
    where: str | None = None,
    present: bool = False,
    **keys: Any,
) -> str:
    """How `column`, averaged within each value of `by` (a column, or a list of them),
    differs where column `contrast` is the value `keys` name from where it is `against` (a
    block's attention with and without an intervention, each averaged over heads), both
    among the rows that satisfy `where` (a pandas query): the largest |difference|
    (``which="max"``), the smallest (``"min"``), the value of `by` where either is
    (``"argmax"``, ``"argmin"``), the signed differences' smallest to largest
    (``"range"``), or the one signed difference where `keys` leave one value of `by`
    (``"one"``); with `present`, over the values of `by` where both sides have a value (an
    intrinsic dimension where both curves have a plateau), else every one must."""
    changed = _chosen(table, where, **keys).groupby(by)[column].mean()
    base = {**keys, contrast: against}
    unchanged = _chosen(table, where, **base).groupby(by)[column].mean()
    signed = changed - unchanged.reindex(changed.index)
    if present:
        signed = signed.dropna()
    if signed.isna().any():
        raise InputDataError(f"{table}: {by} {list(changed.index)} not all found where {base}")
    if which == "range" or (which == "one" and len(signed) == 1):
        ends = _ends(signed, which, "change", ("range", "one"))
        return " to ".join(_formatted(table, end, column, format) for end in ends)
    difference = signed.abs()
    if which in ("argmax", "argmin"):
        return str(difference.idxmax() if which == "argmax" else difference.idxmin())
    if which not in ("max", "min"):
        raise InputDataError(
            f"change: which is max, min, argmax, argmin, range or one (of one), not {which!r}"
        )
    found = difference.max() if which == "max" else difference.min()
    return _formatted(table, found, column, format)


def count(
    table: str, where: str | None = None, distinct: list[str] | None = None, **keys: Any
) -> str:
    """How many of the rows `keys` pick satisfy `where` (a pandas query over the table's
    columns; every row without it), or how many distinct combinations of the columns
    `distinct` they hold, with thousands separators."""
    chosen = _matching(table, where, **keys)
    found = len(chosen.drop_duplicates(distinct)) if distinct else len(chosen)
    return f"{found:,d}"


def ratios(
    table: str,
    column: str,
    contrast: str,
    over: Any,
    against: Any,
    pairs: list[str],
    which: str = "range",
    format: str = ".1f",
    **keys: Any,
) -> str:
    """`column` where column `contrast` is `over` divided by where it is `against`, the
    rows paired by their columns `pairs` (a peak's step with a long warm-up over the same
    model's and seed's with a short one), among the rows `keys` pick: the smallest
    (``which="min"``), the largest (``"max"``), both (``"range"``: ``low to high``) or the
    one ratio (``"one"``)."""
    chosen = rows(table, **keys)
    side = {
        end: chosen[chosen[contrast].astype(str) == str(value)].set_index(pairs)[column]
        for end, value in (("over", over), ("against", against))
    }
    if not (side["over"].index.is_unique and side["against"].index.is_unique):
        raise InputDataError(f"{table}: {contrast} {over} and {against} not paired where {keys}")
    quotient = (side["over"] / side["against"].reindex(side["over"].index)).astype(float)
    if quotient.empty or quotient.isna().any():
        raise InputDataError(f"{table}: {contrast} {over} and {against} not paired where {keys}")
    ends = _ends(quotient, which, "ratios", ("min", "max", "range", "one"))
    return " to ".join(_formatted(table, end, column, format) for end in ends)


def quotient(
    numerator: float, table: str, column: str, which: str = "min", format: str = ".1f", **keys: Any
) -> str:
    """A constant (the next checkpoint's step) over the smallest (``which="min"``) or the
    largest (``"max"``) `column` of the rows `keys` pick: a bound on a ratio."""
    values = rows(table, **keys)[column].astype(float)
    if which not in ("min", "max"):
        raise InputDataError(f"quotient: which is min or max, not {which!r}")
    return _formatted(
        table, numerator / (values.min() if which == "min" else values.max()), column, format
    )


def runs(table: str, column: str, by: str, where: str | None = None, **keys: Any) -> str:
    """`column` along `by` over the rows `keys` pick, consecutive values of `by` that share
    it written as one run: ``0–9 → 0, 12–24 → 3, 27 → 15`` (each SmolLM2 block's best
    layer in Gemma-3), so that a map of integers is looked up like any number."""
    chosen = _chosen(table, where, **keys)
    if not chosen[by].is_unique:
        raise InputDataError(f"{table}: {by} repeats where {keys}; a run names one row each")
    ordered = chosen.sort_values(by)
    groups = (ordered[column] != ordered[column].shift()).cumsum()
    written = []
    for _, run in ordered.groupby(groups, sort=False):
        first, last = run[by].iloc[0], run[by].iloc[-1]
        span = f"{first}" if first == last else f"{first}–{last}"
        written.append(f"{span} → {run[column].iloc[0]}")
    return ", ".join(written)


def difference(
    table: str,
    column: str,
    other: str,
    which: str = "max",
    format: str = ".3f",
    where: str | None = None,
    **keys: Any,
) -> str:
    """The largest (``which="max"``), median (``"median"``) or smallest (``"min"``)
    |`column` − `other`| over the rows `keys` pick that satisfy `where` (a pandas query;
    a loss's distance from its unigram line, an interval's width between distinct
    layers)."""
    chosen = _matching(table, where, **keys)
    gaps = (chosen[column].astype(float) - chosen[other].astype(float)).abs()
    found = {"max": gaps.max, "median": gaps.median, "min": gaps.min}
    if which not in found:
        raise InputDataError(f"difference: which is min, median or max, not {which!r}")
    return _formatted(table, found[which](), column, format)


def shift(
    table: str,
    column: str,
    before: dict[str, Any],
    after: dict[str, Any],
    after_table: str | None = None,
    by: str | list[str] = "layer",
    which: str = "spread",
    format: str = "+.3f",
    **keys: Any,
) -> str:
    """How `column` moves from the rows `before` picks in `table` to those `after` picks
    in `after_table` (`table` where None), both among the rows `keys` pick, each row paired
    with the other side's of equal `by` (a layer): the mean change with its smallest and
    largest (``which="spread"``: ``+0.003 (−0.012…+0.009)``), or the mean alone
    (``"mean"``); an estimator against another in one run, or one run against another."""
    by = [by] if isinstance(by, str) else list(by)
    sides = [
        rows(name, **keys, **picked).set_index(by)[column].astype(float)
        for name, picked in ((table, before), (after_table or table, after))
    ]
    first, second = sides
    if not (first.index.is_unique and second.index.is_unique) or set(first.index) != set(
        second.index
    ):
        raise InputDataError(f"{table}: {before} and {after} do not pair one to one by {by}")
    moved = second - first.reindex(second.index)
    if which not in ("spread", "mean"):
        raise InputDataError(f"shift: which is spread or mean, not {which!r}")
    mean = _formatted(table, moved.mean(), column, format)
    if which == "mean":
        return mean
    low, high = (_formatted(table, end, column, format) for end in (moved.min(), moved.max()))
    return f"{mean} ({low}…{high})"


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
