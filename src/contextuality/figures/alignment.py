"""The alignment figure. One heatmap per alignment measure holding every model's layers
(`figures.blocks`), a block per pair of models on every sampled occurrence, each layer's
alignment with the word baselines as columns at the right, each layer's best-matching
layer of every other model outlined, and the measure's permutation null and critical
value in its panel's title."""

from __future__ import annotations

import math
import os

import numpy as np
import pandas as pd

from contextuality.figures.blocks import draw_blocks, layer_blocks, outline_best
from contextuality.figures.paper import label_cells, layer_axis_label, plt, save_figure
from contextuality.geometry.alignment_catalogue import ALIGNMENT_MEASURES
from contextuality.geometry.baselines import BASELINES

# The measures drawn, each over its record's range (a distance drawn with its scale
# reversed, so that brighter is closer everywhere).
PANELS = tuple(record for record in ALIGNMENT_MEASURES if record.panel)

# Panels side by side; more go on the next row, so that a page shows them.
PANEL_COLUMNS = 2


def _median(rows: pd.DataFrame, column: str) -> float:
    """The median of `column` over `rows` (NaN where the table has no such column, as in
    tables written before it existed)."""
    if column not in rows or not rows[column].notna().any():
        return math.nan
    return round(float(np.nanmedian(rows[column].to_numpy(dtype=float))), 3) + 0.0


def plot_alignment(table: pd.DataFrame, outputs: list[str | os.PathLike], source: str = "") -> None:
    """Heatmaps of `table` (`geometry.alignment.ALIGNMENT_COLUMNS`, occurrences ``all``):
    one panel per measure of `PANELS`, every model's layers down and across
    (`figures.blocks.layer_blocks`, grey where a pair was not computed), then each word
    baseline (`geometry.baselines`) as a column; values written in the cells when few, a
    colour bar beside each; in each block of two models an outline marks each row's best
    match (the largest similarity, the smallest distance). The title gives the median
    over pairs of different models of the null and its critical value."""
    every = table[table["occurrences"] == "all"]
    across = every[~every["model_b"].isin(BASELINES) & (every["model_a"] != every["model_b"])]
    rows_of_panels = math.ceil(len(PANELS) / PANEL_COLUMNS)
    grids = [layer_blocks(every, record.name, BASELINES) for record in PANELS]
    side = max(3.6, 0.16 * grids[0].values.shape[1] + 1.6)
    figure, axes = plt.subplots(
        rows_of_panels,
        PANEL_COLUMNS,
        figsize=(side * PANEL_COLUMNS + 1.2, side * rows_of_panels),
        layout="constrained",
        squeeze=False,
    )
    for panel, record, blocks in zip(axes.ravel(), PANELS, grids, strict=False):
        image = draw_blocks(
            panel, blocks, record.limits, "viridis_r" if record.distance else "viridis"
        )
        scale = figure.colorbar(image, ax=panel, shrink=0.8)
        closer = "reversed scale: brighter is closer" if record.distance else "brighter is closer"
        scale.set_label(f"{record.label} ({closer})", fontsize=7)
        scale.ax.tick_params(labelsize=6)
        bright = record.limits[0] + (0.4 if record.distance else 0.6) * (
            record.limits[1] - record.limits[0]
        )
        label_cells(panel, blocks.values, bright, limit=100, reversed_map=record.distance)
        outline_best(panel, blocks, record.closest)
        title = record.label
        if len(across):
            null, critical = (
                _median(across, f"{kind}_{record.name}") for kind in ("null", "threshold")
            )
            title += f"\nbetween models: null {null:.3f}"
            if np.isfinite(critical):
                title += f", critical value {critical:.3f}"
        panel.set_title(title, fontsize=8)
        then = "; then the word baselines" if blocks.extra else ""
        panel.set_xlabel(f"{layer_axis_label(relative_layers=False)}{then}", fontsize=7)
        panel.set_ylabel(layer_axis_label(relative_layers=False), fontsize=7)
    for panel in axes.ravel()[len(PANELS) :]:
        panel.set_visible(False)
    k = int(every["k"].iloc[0]) if len(every) else 0
    outlined = "; outlined: each layer's best match in each other model" if len(across) else ""
    figure.suptitle(
        f"Alignment between layers on the same occurrences (k = {k}){outlined}", fontsize=10
    )
    save_figure(figure, outputs, source)
