"""The figure of the downstream task (`measures.downstream`): each model's STS score by
layer, then each geometry measure against it, a point per layer in depth order.

A measure's panel joins its points from the first layer measured (an open square) to the
last (a filled triangle), so that it is read from one end."""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pandas as pd

from contextuality.figures.model_styles import ModelStyle, model_styles
from contextuality.figures.paper import plt, save_figure

COLUMNS = 3


def draw_scores(panel: Any, scores: pd.DataFrame, styles: dict[str, ModelStyle]) -> None:
    """Each model's score by relative depth (layer / its number of blocks), in its colour
    and marker, its interval a band; solid for mean pooling, dashed past the first content
    token."""
    for (model, pooling), rows in scores.groupby(["model", "pooling"], sort=False):
        depth = rows["layer"] / rows["n_layers"]
        mean = pooling == "mean"
        label = model if mean else f"{model}, past the first token"
        panel.plot(
            depth,
            rows["spearman"],
            "-" if mean else "--",
            marker=styles[model].marker,
            markersize=3.5,
            fillstyle="full" if mean else "none",
            color=styles[model].colour,
            label=label,
        )
        panel.fill_between(depth, rows["low"], rows["high"], alpha=0.15, color=styles[model].colour)
    panel.set(
        title="STS score by layer, 95 % bootstrap band",
        xlabel="relative depth (layer / number of blocks)",
        ylabel="STS Spearman ρ (cosine of sentence means)",
    )


def draw_agreement(
    panel: Any,
    label: str,
    scores: pd.DataFrame,
    by_layer: dict[str, pd.DataFrame],
    styles: dict[str, ModelStyle],
) -> None:
    """Measure `label` (x) against the mean-pooled score (y) of each model that has it, a
    point per layer measured in depth order, the first and last marked."""
    for model, rows in scores[scores["pooling"] == "mean"].groupby("model", sort=False):
        if label not in by_layer[model]:
            continue
        measured = by_layer[model][label].dropna()
        score = rows.set_index("layer")["spearman"].reindex(measured.index)
        x, y = measured.to_numpy(), score.to_numpy()
        colour = styles[model].colour
        panel.plot(x, y, "-", marker="o", markersize=3, color=colour, label=model)
        panel.plot(x[0], y[0], "s", markersize=8, fillstyle="none", color=colour)
        panel.plot(x[-1], y[-1], "^", markersize=8, color=colour)
    panel.set(title=label, xlabel=f"{label} at the layer", ylabel="STS Spearman ρ")


def plot_downstream(
    scores: pd.DataFrame,
    by_layer: dict[str, pd.DataFrame],
    outputs: list[str | os.PathLike],
    source: str = "",
) -> None:
    """The scores (`draw_scores`), then one panel per geometry measure that some model has
    (`draw_agreement`), each model in its colour and marker (`model_styles`); the keys
    below the panels, outside the data; written to each of `outputs` (`source`: what it
    was drawn from)."""
    labels = list(dict.fromkeys(label for table in by_layer.values() for label in table))
    rows = int(np.ceil((len(labels) + 1) / COLUMNS))
    figure, axes = plt.subplots(
        rows,
        COLUMNS,
        figsize=(4.4 * COLUMNS, 3.6 * rows + 1.2),
        layout="constrained",
        squeeze=False,
    )
    panels = axes.ravel()
    models = list(scores["model"].unique())
    styles = model_styles(models)
    draw_scores(panels[0], scores, styles)
    for panel, label in zip(panels[1:], labels, strict=False):
        draw_agreement(panel, label, scores, by_layer, styles)
    for panel in panels[len(labels) + 1 :]:
        panel.set_visible(False)
    keys, names = panels[0].get_legend_handles_labels()
    ends = [
        plt.Line2D([], [], linestyle="", marker="s", fillstyle="none", color="0.3"),
        plt.Line2D([], [], linestyle="", marker="^", color="0.3"),
    ]
    figure.legend(
        keys + (ends if labels else []),
        names + (["first layer measured", "last layer measured"] if labels else []),
        loc="outside lower center",
        ncol=min(4, len(names) + 2),
        fontsize="small",
        frameon=False,
    )
    save_figure(figure, outputs, source)
