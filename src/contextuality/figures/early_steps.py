"""The early-steps figure: a tiny model's anisotropy and the cosines of its layers' shared
direction with the unigram direction at every training step, a column per warm-up."""

from __future__ import annotations

import itertools
import os

import pandas as pd

from contextuality.figures.paper import layer_colours, plt, save_figure

# The rows of panels: each column of the early-steps table drawn, with its axis label.
PLOTTED = {
    "anisotropy": "anisotropy (mean cosine)",
    "cos_mean_unigram": "cos(layer mean, unigram direction)",
    "cos_pc1_unigram": "|cos(first principal direction, unigram direction)|",
}


def _draw_panel(panel, rows: pd.DataFrame, column: str, events: pd.DataFrame) -> None:
    """One warm-up's `column` against step: per layer the seeds' mean (thick) and each seed
    (thin); the end of warm-up (dotted) and each seed's unigram crossing (dashed)."""
    layers = sorted(rows["layer"].unique())
    for colour, layer in zip(layer_colours(len(layers)), layers, strict=True):
        chosen = rows[rows["layer"] == layer]
        for _, seed_rows in chosen.groupby("seed"):
            panel.plot(seed_rows["step"], seed_rows[column], color=colour, lw=0.5, alpha=0.5)
        mean = chosen.groupby("step")[column].mean()
        panel.plot(mean.index, mean, color=colour, lw=1.8, label=f"layer {layer}")
    warmup = int(rows["warmup"].iloc[0])
    panel.axvline(warmup, color="black", linestyle=":", lw=1.2, label="end of warm-up")
    crossings = events.loc[events["layer"] == 0, "unigram_crossing"].dropna()
    for number, step in enumerate(crossings):
        label = "loss below unigram (each seed)" if number == 0 else None
        panel.axvline(step, color="tab:red", linestyle="--", lw=0.9, alpha=0.7, label=label)
    panel.set_xscale("symlog", linthresh=1, linscale=0.4)
    panel.set_xlim(0, max(*rows["step"], warmup))  # the end of warm-up drawn, if past them
    panel.grid(alpha=0.3, lw=0.5)


def plot_early_steps(
    table: pd.DataFrame,
    events: pd.DataFrame,
    architecture: str,
    name: str,
    corpus: str,
    outputs: list[str | os.PathLike],
    source: str = "",
) -> None:
    """The `architecture`'s rows of the probes table (architecture, seed, warmup, step,
    layer and the `PLOTTED` columns) against step, a row of panels per column and a column
    per warm-up, with its `events` (each seed's unigram crossing); the model named `name`
    and the `corpus` it is measured on in the title."""
    rows = table[table["architecture"] == architecture]
    kind_events = events[events["architecture"] == architecture]
    warmups = sorted(rows["warmup"].unique())
    # Room for the title and the key beside a single warm-up's column.
    size = {"figsize": (max(5 * len(warmups), 9), 10), "layout": "constrained", "squeeze": False}
    figure, panels = plt.subplots(len(PLOTTED), len(warmups), sharex=True, sharey="row", **size)
    for (row_index, (column, label)), (column_index, warmup) in itertools.product(
        enumerate(PLOTTED.items()), enumerate(warmups)
    ):
        panel = panels[row_index, column_index]
        chosen = kind_events[kind_events["warmup"] == warmup]
        _draw_panel(panel, rows[rows["warmup"] == warmup], column, chosen)
        panel.set_ylabel(label if column_index == 0 else "")
        panel.axhline(0, color="0.5", lw=0.6)
    for top, bottom, warmup in zip(panels[0], panels[-1], warmups, strict=True):
        top.set_title(f"warm-up {warmup} steps")
        bottom.set_xlabel("training step (symlog; 0 = initialization)")
    handles, labels = panels[0, 0].get_legend_handles_labels()
    legend_title = "thick: mean of seeds\nthin: each seed"
    figure.legend(handles, labels, loc="outside right center", frameon=False, title=legend_title)
    figure.suptitle(f"{name}: every early step, measured on held-out {corpus} sentences")
    save_figure(figure, outputs, source)
