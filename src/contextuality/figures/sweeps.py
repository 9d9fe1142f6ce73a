"""Figures of a series of models: a checkpoint sweep (against training step) and a family
of sizes (against parameter count). Each headline measure is drawn against the series'
x value, one line per layer (a sweep: every checkpoint has the same layers) or per
relative depth (a family: the layer nearest each fraction of the model's depth), beside a
heatmap of the anisotropy baseline by line and x."""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np
import pandas as pd

from contextuality.figures.paper import (
    label_cells,
    layer_colours,
    plt,
    save_figure,
)
from contextuality.figures.specs import SERIES_FIGURE, panels_drawn_in

# (row, column of the measures table, axis label) of each line panel: the rows whose
# records draw them in the figures of a series.
SERIES_PANELS = panels_drawn_in(SERIES_FIGURE)
# The fractions of a model's depth a family's lines follow.
DEPTHS = (0.0, 0.25, 0.5, 0.75, 1.0)


@dataclass(frozen=True)
class ModelSeries:
    """A series of models: `x` maps each model to its x value (training step, parameter
    count), drawn on a symmetric log axis; `by_depth` draws relative depths, not layers."""

    title: str
    x_label: str
    x: dict[str, int]
    by_depth: bool = False


def _lines(rows: pd.DataFrame, by_depth: bool) -> pd.DataFrame:
    """`rows` with a ``line`` label: the layer, or the fraction of depth whose nearest
    measured layer each row is (rows of other layers dropped)."""
    if not by_depth:
        return rows.assign(line=rows["layer"].map(lambda layer: f"layer {layer}"))
    chosen = []
    for _, model_rows in rows.groupby("model"):
        layers = np.array(sorted(model_rows["layer"].unique()))
        depth = int(model_rows["n_layers"].iloc[0])
        for fraction in DEPTHS:
            nearest = layers[np.argmin(np.abs(layers - fraction * depth))]
            part = model_rows[model_rows["layer"] == nearest]
            chosen.append(part.assign(line=f"{fraction:.0%} depth"))
    return pd.concat(chosen, ignore_index=True)


def plot_series(
    table: pd.DataFrame, series: ModelSeries, outputs: list[str | os.PathLike], source: str = ""
) -> None:
    """The models of `series` from the measures `table` under transform ``none``: a panel
    per `SERIES_PANELS` measure against x, one line per layer or depth from light (the
    embeddings) to dark (the last layer), and the anisotropy baseline as a heatmap."""
    rows = table[(table["transform"] == "none") & table["model"].isin(list(series.x))]
    rows = _lines(rows.assign(x=rows["model"].map(series.x)), series.by_depth)
    lines = (
        list(dict.fromkeys(rows.sort_values(["layer"])["line"]))
        if not series.by_depth
        else [f"{fraction:.0%} depth" for fraction in DEPTHS]
    )
    colours = layer_colours(len(lines))
    ticks = sorted(set(series.x.values()))
    positive = [value for value in ticks if value > 0]
    figure, axes = plt.subplots(1, len(SERIES_PANELS) + 1, figsize=(19, 3.8), layout="constrained")
    for panel, (measure, column, label) in zip(axes, SERIES_PANELS, strict=False):
        chosen = rows[rows["measure"] == measure]
        for colour, line in zip(colours, lines, strict=True):
            points = chosen[chosen["line"] == line].sort_values("x")
            panel.plot(points["x"], points[column], "o-", color=colour, markersize=3, label=line)
        if positive:
            panel.set_xscale("symlog", linthresh=positive[0])
        panel.set_xticks(ticks, [f"{value:,}" for value in ticks])
        panel.tick_params(axis="x", labelrotation=45)
        panel.set_xlabel(f"{series.x_label} (log scale)" if positive else series.x_label)
        panel.set_ylabel(label)
        panel.grid(alpha=0.3)
    axes[0].legend(frameon=False, fontsize=7)
    _heatmap(axes[-1], rows, lines, series.x_label)
    figure.colorbar(axes[-1].images[0], ax=axes[-1])
    figure.suptitle(series.title)
    save_figure(figure, outputs, source)


def _heatmap(panel, rows: pd.DataFrame, lines: list[str], x_label: str) -> None:
    """The anisotropy baseline by line (rows) and x (columns), values written in the cells
    when there are few enough to read."""
    grid = rows[rows["measure"] == "anisotropy"].pivot(index="line", columns="x", values="raw")
    grid = grid.reindex([line for line in lines if line in grid.index])
    values = grid.to_numpy()
    panel.imshow(values, aspect="auto", origin="lower", vmin=0, cmap="magma")
    label_cells(panel, values, bright_above=0.6 * np.nanmax(values))
    panel.set_xticks(range(grid.shape[1]), [f"{value:,}" for value in grid.columns], rotation=45)
    panel.set_yticks(range(grid.shape[0]), grid.index)
    panel.set_xlabel(x_label)
    panel.set_title("anisotropy", fontsize=9)
