"""The degeneration analysis's summary rows (beyond the paper; Gao et al. 2019): how a
word's vectors change with its count. The degeneration step computes them
(`contextuality.measures.degeneration.frequency_correlations`), from the per-word table."""

from __future__ import annotations

from contextuality.measures.record import Measure

# Where these records come in the catalogue (`contextuality.catalogue.discovery`).
ORDER = 2

MEASURES: tuple[Measure, ...] = (
    Measure(
        name="degeneration",
        rows=(
            "occurrence_norm~frequency",
            "norm~frequency",
            "knn_distance~frequency",
            "mean_direction~frequency",
        ),
        caption=(
            "Spearman ρ with word count of a word's mean occurrence norm, its mean vector's norm, "
            "neighbour distance and direction (the degeneration analysis)."
        ),
        step="degeneration",
        labels=tuple(
            f"Spearman ρ({what}, count)"
            for what in ("occurrence norm", "mean vector's norm", "neighbour distance", "direction")
        ),
    ),
)
