"""The intrinsic dimension's summary rows (beyond the paper): the layer geometry step
computes them (`contextuality.geometry.dimension`), from seeded samples of occurrences at
several scales."""

from __future__ import annotations

from contextuality.measures.record import Measure

MEASURES: tuple[Measure, ...] = (
    Measure(
        "intrinsic_dimension",
        ("intrinsic_dimension[twonn]", "intrinsic_dimension[gride]"),
        "Intrinsic dimension of the sampled occurrences on the plateau of its curve over "
        "scale (named in `scale`), TwoNN and GRIDE.",
        interval="plateau range",
        step="layer_geometry",
        labels=("intrinsic dimension (TwoNN)", "intrinsic dimension (GRIDE)"),
    ),
)
