"""Every alignment measure (`alignment_record.AlignmentMeasure`). Found in the modules of
`contextuality.geometry.alignment_instruments` in the order they declare (``ORDER``; a
module without one after the others, so that its columns come last): the alignment
table's columns, its best-matching layers, the figures' panels and the docs' list of
alignment measures (`docs_table`) follow from them."""

from __future__ import annotations

from contextuality.catalogue.discovery import discover, record_named
from contextuality.geometry.alignment_record import AlignmentMeasure

ALIGNMENT_MEASURES: tuple[AlignmentMeasure, ...] = discover(
    "contextuality.geometry.alignment_instruments", "MEASURES"
)


def alignment_measure(name: str) -> AlignmentMeasure:
    """The record of the alignment measure called `name` (KeyError if none is)."""
    return record_named(ALIGNMENT_MEASURES, name)


def docs_table() -> str:
    """The docs' list of alignment measures (drawn into docs/instruments.md when
    mkdocs builds): a row per record, which way is closer, the figures' colour scale and what
    it is computed from; each has its null beside it (``null_<column>``)."""
    lines = [
        "| column | what it is | closer | colour scale | computed from |",
        "|---|---|---|---|---|",
    ]
    for record in ALIGNMENT_MEASURES:
        closer = "smaller" if record.distance else "larger"
        low, high = record.limits
        source = "cross-products" if record.of_products is not None else "neighbours"
        lines.append(
            f"| `{record.name}` | {record.caption} | {closer} | {low:.3g} to {high:.3g} "
            f"| {source} |"
        )
    return "\n".join(lines)


def docs_columns() -> str:
    """The alignment measures' columns, in the table's order (docs/outputs.md)."""
    return ", ".join(record.name for record in ALIGNMENT_MEASURES)
