"""The best-matching layers figure: for each model against each other model, one panel per
alignment measure: each layer's best match in the other model (its number above the point),
its value with the bootstrap interval, and the critical value of choosing the best of that
many layers under permutation, which a best match must clear to say more than the choice."""

from __future__ import annotations

import os

import numpy as np
import pandas as pd

from contextuality.figures.alignment import PANELS
from contextuality.figures.paper import plt, save_figure
from contextuality.geometry.baselines import BASELINES

# A best match that stays best in fewer bootstrap draws than this is drawn hollow.
STABLE_SHARE = 0.5


def _draw_panel(panel, found: pd.DataFrame, baselines: pd.DataFrame, names, record) -> None:
    """One panel of `plot_best_layers`: the best matches of one model's layers in another
    (`names`) by one measure (`record`), and that model's rows against the word
    baselines."""
    model, other = names
    found = found.sort_values("layer")
    layers = found["layer"].to_numpy()
    values = found["value"].to_numpy(dtype=float)
    spread = np.array([values - found["low"], found["high"] - values], dtype=float)
    stable = found["stays_best"].to_numpy(dtype=float) >= STABLE_SHARE
    for filled in (True, False):
        chosen = stable == filled
        panel.errorbar(
            layers[chosen],
            values[chosen],
            yerr=np.where(np.isfinite(spread[:, chosen]), spread[:, chosen], 0),
            fmt="o",
            markersize=4,
            color="tab:blue",
            markerfacecolor="tab:blue" if filled else "white",
            capsize=2,
            label=("stays best" if filled else f"best in < {STABLE_SHARE:.0%} of draws"),
        )
    panel.plot(
        layers,
        found["best_threshold"],
        "--",
        color="tab:red",
        lw=1,
        label="critical value of the best of the row",
    )
    panel.plot(layers, found["null"], ":", color="grey", lw=1, label="the pair's null")
    for (name, label), colour in zip(BASELINES.items(), ("tab:green", "tab:olive"), strict=True):
        alone = baselines[baselines["model_b"] == name]
        if len(alone):
            alone = alone.set_index("layer_a")[record.name].reindex(layers)
            panel.plot(layers, alone, "-.", color=colour, lw=1, label=f"{label} alone")
    for layer, value, match in zip(layers, values, found["best_layer"], strict=True):
        panel.annotate(
            f"{match}",
            (layer, value),
            textcoords="offset points",
            xytext=(0, 5),
            ha="center",
            fontsize=6,
        )
    panel.set_ylim(*record.limits)
    panel.set_xticks(layers)
    panel.set_xlabel(f"{model} layer (0: embedding output)", fontsize=8)
    panel.set_ylabel(record.label, fontsize=8)
    panel.set_title(f"{model} → best {other} layer: {record.label}", fontsize=8)
    panel.grid(alpha=0.3)


def plot_best_layers(
    best: pd.DataFrame,
    alignment: pd.DataFrame,
    outputs: list[str | os.PathLike],
    source: str = "",
) -> None:
    """`best` (`geometry.best_layers.BEST_LAYER_COLUMNS`, occurrences ``all``): a row of
    panels per (model, other model), one per measure of `PANELS`: x each layer of the model
    (0: the embedding output), y its best match's value with its interval (error bars),
    the other model's layer written above, filled where it stays best in at least
    `STABLE_SHARE` of the draws; dashed, the critical value of the best of the row under
    permutation (`best_threshold`); dotted, the chosen pair's own null; dash-dotted, the
    layer's alignment with each word baseline in `alignment` (`geometry.baselines`), what
    knowing the word alone gives."""
    every = best[best["occurrences"] == "all"]
    baselines = alignment[
        (alignment["occurrences"] == "all") & alignment["model_b"].isin(BASELINES)
    ]
    pairs = list(dict.fromkeys(zip(every["model"], every["other_model"], strict=True)))
    figure, axes = plt.subplots(
        max(len(pairs), 1),
        len(PANELS),
        figsize=(3.6 * len(PANELS), 3.0 * max(len(pairs), 1)),
        layout="constrained",
        squeeze=False,
    )
    for row_axes, (model, other) in zip(axes, pairs, strict=False):
        rows = every[(every["model"] == model) & (every["other_model"] == other)]
        for panel, record in zip(row_axes, PANELS, strict=True):
            known = baselines[baselines["model_a"] == model]
            _draw_panel(panel, rows[rows["measure"] == record.name], known, (model, other), record)
    if pairs:
        handles, labels = axes[0][0].get_legend_handles_labels()
        figure.legend(
            handles, labels, loc="outside lower center", ncols=4, fontsize=7, frameon=False
        )
    figure.suptitle(
        "Each layer's best-matching layer of another model (its number above the point), "
        "with its bootstrap interval",
        fontsize=10,
    )
    save_figure(figure, outputs, source)
