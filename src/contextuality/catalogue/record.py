"""What every instrument of a catalogue is (`Instrument`): a measure of a layer, an
alignment measure of two layers. Each kind's record adds what it computes and from what
(`contextuality.measures.record.Measure`,
`contextuality.geometry.alignment_record.AlignmentMeasure`)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, kw_only=True)
class Instrument:
    """One instrument of a catalogue.

    name: its name, unique in its catalogue (a measure's, an alignment table's column).
    caption: what it is, in one sentence (the docs' tables are built from the captions).
    Where its records come in their catalogue is their module's ``ORDER``
    (`contextuality.catalogue.discovery`), not a field of each.
    """

    name: str
    caption: str

    def __post_init__(self) -> None:
        # A "|" would split a cell of the docs' tables and be a substitution in the report.
        if "|" in self.caption or not self.caption.endswith("."):
            raise ValueError(f"{self.name}: a caption is a sentence, without '|'")
