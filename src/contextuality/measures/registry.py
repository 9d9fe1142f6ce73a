"""Every measure of a layer, one `record.Measure` each, in the order they are computed.

The records are those the modules of `contextuality.measures.instruments` declare
(``MEASURES``), found there (`contextuality.catalogue.discovery`) in the order the modules
declare (``ORDER``; a module without one after the others), except that those that need
the position profile come last (they may drop rows in place). The measure step computes
the records whose step is ``measure_layer`` (`analysis`), a streamed layer those marked
`streamed` (`contextuality.streaming.measure`); the summary rows, ``measures.tsv``, the
figures' measures and the docs' list of measures (`docs_table`) are these records' rows.
Adding a measure: a module in `instruments` with its compute function and record, and a
test (docs/architecture.md).
"""

from __future__ import annotations

from collections.abc import Iterable

from contextuality.catalogue.discovery import discover
from contextuality.errors import ConfigError
from contextuality.measures.record import Measure
from contextuality.measures.summary import CENSUS_LAYER_COLUMNS

MEASURES: tuple[Measure, ...] = tuple(
    sorted(
        discover("contextuality.measures.instruments", "MEASURES"),
        key=lambda record: record.needs_positions,
    )
)


# The measures `MeasureSettings.leave_out` may name: the field's instruments beyond the
# paper, which the embedded default run leaves out to keep to its minute.
OPTIONAL = tuple(record.name for record in MEASURES if record.optional)
# The name that, in ``measures.leave_out``, stands for every optional measure (`OPTIONAL`),
# so that a run leaving them out leaves out one added later too.
EVERY_OPTIONAL = "optional"


# The censuses the measures' rows gather across layers (`Measure.census`), by name.
CENSUSES = tuple(record.census.name for record in MEASURES if record.census is not None)


def measure(name: str) -> Measure:
    """The record of the measure called `name` (KeyError if none is)."""
    for record in MEASURES:
        if record.name == name:
            return record
    raise KeyError(name)


def measure_of_census(name: str) -> Measure:
    """The record of the measure whose census (`Measure.census`) is called `name`
    (KeyError if none is)."""
    for record in MEASURES:
        if record.census is not None and record.census.name == name:
            return record
    raise KeyError(name)


def left_out(leave_out: Iterable[str]) -> tuple[str, ...]:
    """The names of `leave_out` in their order, `EVERY_OPTIONAL` replaced by every optional
    measure (`OPTIONAL`), each name once."""
    names = (
        name for given in leave_out for name in (OPTIONAL if given == EVERY_OPTIONAL else (given,))
    )
    return tuple(dict.fromkeys(names))


def check_left_out(leave_out: Iterable[str]) -> None:
    """Refuse (ConfigError) a name in ``measures.leave_out`` that is not an optional measure
    (or `EVERY_OPTIONAL`)."""
    unknown = sorted(set(leave_out) - {*OPTIONAL, EVERY_OPTIONAL})
    if unknown:
        raise ConfigError(
            f"measures.leave_out: {', '.join(unknown)} cannot be left out; the optional "
            f"measures are {', '.join(OPTIONAL)} ({EVERY_OPTIONAL}: all of them)"
        )


def left_out_rows(leave_out: Iterable[str]) -> frozenset[str]:
    """The summary rows of the measures named in `leave_out` (`left_out`)."""
    names = set(left_out(leave_out))
    return frozenset(row for record in MEASURES if record.name in names for row in record.rows)


def row_names(step: str | None = None) -> list[str]:
    """Every summary row of the records (of those of `step` only, when given), in order."""
    return [row for record in MEASURES if step in (None, record.step) for row in record.rows]


def not_streamed() -> list[str]:
    """The summary rows of a stored layer that a streamed layer lacks."""
    return [row for record in MEASURES if not record.streamed for row in record.rows]


def not_streamed_columns() -> list[str]:
    """The per-word columns of a stored layer that a streamed layer lacks."""
    return [record.column for record in MEASURES if record.table == "words" and not record.streamed]


def word_columns() -> dict[str, str]:
    """Per-word column → the baseline family its adjusted value subtracts, in order."""
    return {record.column: record.family for record in MEASURES if record.table == "words"}


def axis_label(row: str, column: str = "raw") -> str:
    """What a figure's axis calls summary row `row` (its record's label, else its name),
    ``adjusted`` before it where `column` is the adjusted value."""
    for record in MEASURES:
        if row in record.rows:
            named = record.labels[record.rows.index(row)] if record.labels else row
            return f"adjusted {named}" if column == "adjusted" else named
    raise KeyError(f"no measure writes the row {row}")


def docs_table() -> str:
    """The docs' list of measures (drawn into docs/measures.md when mkdocs builds): a row per
    record, what it is and how it is estimated."""
    lines = [
        "| rows | what it is | value | baseline | interval | streamed | step | optional |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for record in MEASURES:
        rows = ", ".join(f"`{row}`" for row in record.rows)
        family = f"`{record.family}`" if record.family else "none"
        streamed = "yes" if record.streamed else "no"
        value = "sampled" if record.sampled else "exact"
        optional = "yes" if record.optional else "no"
        lines.append(
            f"| {rows} | {record.caption} | {value} | {family} | {record.interval} "
            f"| {streamed} | `{record.step}` | {optional} |"
        )
    return "\n".join(lines)


def census_outputs() -> str:
    """The docs' lines of the census tables (drawn into docs/outputs.md when mkdocs
    builds): a line per census, its path, what a row is and its columns."""
    lines = []
    for record in MEASURES:
        if record.census is None:
            continue
        census = record.census
        own = [
            column
            for column in census.columns
            if column not in CENSUS_LAYER_COLUMNS and column != census.key
        ]
        path = f"results/tables/{census.name}.tsv"
        lines.append(
            f"{path:<41} model, transform, layer, {census.key}: {', '.join(own)} "
            f"(not where measures.leave_out leaves out {record.name})"
        )
    return "\n".join(lines)
