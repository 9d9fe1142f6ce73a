"""The alignment figure: for each pair of models (a model with itself first), one heatmap
per alignment measure between their layers on every sampled occurrence, each layer's
best-matching layer of the other model marked, and each measure's permutation null and its
critical value in its panel's title."""

from __future__ import annotations

import os

import numpy as np
import pandas as pd
from matplotlib.patches import Rectangle

from contextuality.figures.paper import label_cells, plt, save_figure
from contextuality.geometry.alignment_catalogue import ALIGNMENT_MEASURES
from contextuality.geometry.baselines import BASELINES

# The measures drawn, each over its record's range (a distance drawn with its scale
# reversed, so that brighter is closer everywhere).
PANELS = tuple(record for record in ALIGNMENT_MEASURES if record.panel)


def _with_baselines(grid: pd.DataFrame, baselines: pd.DataFrame, measure: str) -> pd.DataFrame:
    """A model's grid of its layers against each other, with a column per word baseline
    (its layers' alignment with that baseline) after its own layers."""
    for name, label in BASELINES.items():
        rows = baselines[baselines["model_b"] == name]
        if len(rows):
            grid[label] = rows.set_index("layer_a")[measure].reindex(grid.index)
    return grid


def plot_alignment(table: pd.DataFrame, outputs: list[str | os.PathLike], source: str = "") -> None:
    """Heatmaps of `table` (`geometry.alignment.ALIGNMENT_COLUMNS`, occurrences ``all``):
    a row of panels per pair of models, one panel per measure of `PANELS`, the first
    model's layers down and the second's across (a model against itself followed by its
    alignment with each word baseline, `geometry.baselines`), values written in the cells
    when few, a colour bar beside each; between two models an outline marks each row's
    best match (the largest similarity, the smallest distance)."""
    every = table[table["occurrences"] == "all"]
    baselines = every[every["model_b"].isin(BASELINES)]
    every = every[~every["model_b"].isin(BASELINES)]
    pairs = list(dict.fromkeys(zip(every["model_a"], every["model_b"], strict=True)))
    figure, axes = plt.subplots(
        len(pairs),
        len(PANELS),
        figsize=(3.6 * len(PANELS), 3.3 * len(pairs)),
        layout="constrained",
        squeeze=False,
    )
    for row_axes, (left, right) in zip(axes, pairs, strict=True):
        rows = every[(every["model_a"] == left) & (every["model_b"] == right)]
        for panel, record in zip(row_axes, PANELS, strict=True):
            measure, label, limits, distance = (
                record.name,
                record.label,
                record.limits,
                record.distance,
            )
            grid = rows.pivot(index="layer_a", columns="layer_b", values=measure)
            if left == right:
                grid = _with_baselines(grid, baselines[baselines["model_a"] == left], measure)
            values = grid.to_numpy(dtype=float)
            image = panel.imshow(
                values,
                vmin=limits[0],
                vmax=limits[1],
                cmap="viridis_r" if distance else "viridis",
                origin="lower",
            )
            scale = figure.colorbar(image, ax=panel, shrink=0.8)
            closer = "reversed scale: brighter is closer" if distance else "brighter is closer"
            scale.set_label(f"{label} ({closer})", fontsize=7)
            scale.ax.tick_params(labelsize=6)
            with_words = grid.shape[1] > len(grid.index)  # the baselines' labels are longer
            panel.set_xticks(
                range(grid.shape[1]), grid.columns, fontsize=7, rotation=90 if with_words else 0
            )
            panel.set_yticks(range(grid.shape[0]), grid.index, fontsize=7)
            panel.set_xlabel(f"{right} layer", fontsize=8)
            panel.set_ylabel(f"{left} layer", fontsize=8)
            null, critical = (
                round(np.nanmedian(rows[f"{kind}_{measure}"].to_numpy(dtype=float)), 3) + 0.0
                for kind in ("null", "threshold")
            )
            panel.set_title(
                f"{left} × {right}: {label}\nnull {null:.3f}, critical value {critical:.3f}",
                fontsize=8,
            )
            bright = limits[0] + (0.4 if distance else 0.6) * (limits[1] - limits[0])
            label_cells(panel, values, bright, limit=100, reversed_map=distance)
            if left == right and grid.shape[1] > len(grid.index):
                panel.axvline(len(grid.index) - 0.5, color="white", lw=2)
            if left != right and np.isfinite(values).any(axis=1).all():
                best = record.closest(values, axis=1)
                for row, column in enumerate(best):  # outlined, its value left readable
                    panel.add_patch(
                        Rectangle(
                            (column - 0.5, row - 0.5), 1, 1, fill=False, edgecolor="red", lw=1.2
                        )
                    )
    k = int(every["k"].iloc[0]) if len(every) else 0
    figure.suptitle(
        f"Alignment between layers on the same occurrences (k = {k}); "
        "outlined: each row's best-matching layer",
        fontsize=10,
    )
    save_figure(figure, outputs, source)
