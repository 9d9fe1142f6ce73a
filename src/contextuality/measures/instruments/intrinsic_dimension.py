"""The intrinsic dimension's summary rows (beyond the paper): the layer dimension step
computes them (`contextuality.geometry.dimension`), from seeded samples of occurrences at
several scales."""

from __future__ import annotations

from contextuality.measures.record import FigureRows, Measure

# Where these records come in the catalogue (`contextuality.catalogue.discovery`).
ORDER = 3

MEASURES: tuple[Measure, ...] = (
    Measure(
        name="intrinsic_dimension",
        rows=("intrinsic_dimension[twonn]", "intrinsic_dimension[gride]"),
        caption=(
            "Intrinsic dimension of the sampled occurrences on the plateau of its curve over "
            "scale (named in `scale`), TwoNN and GRIDE."
        ),
        interval="plateau range",
        step="layer_dimension",
        labels=("intrinsic dimension (TwoNN)", "intrinsic dimension (GRIDE)"),
        drawn_in=(
            FigureRows("ablation", rows=("intrinsic_dimension[twonn]",), column="raw", place=2),
            FigureRows("geometry_transforms", rows=("intrinsic_dimension[twonn]",), column="raw"),
        ),
    ),
)
