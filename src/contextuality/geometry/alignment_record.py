"""What an alignment measure is (`AlignmentMeasure`): the record that the alignment table,
its best-matching layers, the figures and the docs' list of alignment measures read."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from contextuality.catalogue.record import Instrument
from contextuality.geometry.linear_cka import CrossProducts
from contextuality.geometry.neighbours import Neighbours


@dataclass(frozen=True, kw_only=True)
class AlignmentMeasure(Instrument):
    """One measure of how alike two layers' rows are, on the same occurrences.

    name: its column in the alignment table (its null's is ``null_<name>``); caption: what
    it is, in one sentence (`Instrument`).
    label: what the figures and the docs call it.
    distance: smaller is closer (its best match is the smallest; its colour scale reversed).
    limits: the range of its values, the figures' colour scale.
    of_products: its value for every pair of layers (left layers × right layers) from their
    cross-products over the rows, or
    of_neighbours: its value for two layers from each one's nearest neighbours (k per row),
    each row counted as many times as a third argument says (a bootstrap draw's weights;
    None: once).
    panel: drawn as a panel of the alignment figure.
    corrections_panel: drawn as a panel of the corrections figure
    (`figures.geometry.plot_geometry_transforms`): its value between each layer and the
    stored layer before it, raw and under each correction.
    """

    label: str
    distance: bool = False
    limits: tuple[float, float] = (0.0, 1.0)
    of_products: Callable[[CrossProducts], np.ndarray] | None = None
    of_neighbours: Callable[[Neighbours, Neighbours, np.ndarray | None], float] | None = None
    panel: bool = True
    corrections_panel: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        if (self.of_products is None) == (self.of_neighbours is None):
            raise ValueError(f"{self.name}: computed from cross-products or from neighbours")

    @property
    def perfect(self) -> float:
        """Its value for two layers equal up to what it ignores: the top of its range, the
        bottom for a distance (what calibration scales to 1)."""
        return self.limits[0] if self.distance else self.limits[1]

    def closest(self, values: np.ndarray, axis: int | None = None) -> np.ndarray:
        """Where `values` are closest along `axis` (NaN skipped): the largest similarity,
        the smallest distance."""
        return np.nanargmin(values, axis=axis) if self.distance else np.nanargmax(values, axis=axis)
