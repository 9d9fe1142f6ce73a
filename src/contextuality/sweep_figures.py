"""The figure of a checkpoint sweep: each headline measure against training step, one line
per layer, and the anisotropy baseline as a layer × step heatmap."""

from __future__ import annotations

import os

import numpy as np
import pandas as pd

from contextuality.figures import plt, save_figure

# (measure, column of the measures table, axis label) of each line panel.
SWEEP_PANELS = (
    ("anisotropy", "raw", "anisotropy (mean cosine)"),
    ("selfsim", "adjusted", "adjusted SelfSim"),
    ("intrasim", "adjusted", "adjusted IntraSim"),
    ("mev", "adjusted", "adjusted MEV"),
)


def plot_sweep(
    table: pd.DataFrame,
    steps: dict[str, int],
    outputs: list[str | os.PathLike],
    title: str,
    source: str = "",
) -> None:
    """The sweep's checkpoints (`steps`: model → training step) from the measures `table`
    under transform ``none``: a panel per `SWEEP_PANELS` measure against step (symmetric
    log scale, so that step 0 shows), one line per layer from light (embeddings) to dark,
    and a heatmap of the anisotropy baseline by layer and step."""
    rows = table[(table["transform"] == "none") & table["model"].isin(list(steps))].copy()
    rows["step"] = rows["model"].map(steps)
    layers = sorted(rows["layer"].unique())
    colours = plt.cm.viridis_r(np.linspace(0.1, 0.95, len(layers)))
    figure, axes = plt.subplots(1, len(SWEEP_PANELS) + 1, figsize=(19, 3.6), layout="constrained")
    positive = sorted(step for step in steps.values() if step > 0)
    for panel, (measure, column, label) in zip(axes, SWEEP_PANELS, strict=False):
        chosen = rows[rows["measure"] == measure]
        for colour, layer in zip(colours, layers, strict=True):
            line = chosen[chosen["layer"] == layer].sort_values("step")
            panel.plot(
                line["step"], line[column], "o-", color=colour, markersize=3, label=f"layer {layer}"
            )
        if positive:
            panel.set_xscale("symlog", linthresh=positive[0])
        panel.set_xticks(sorted(steps.values()), [f"{step:,}" for step in sorted(steps.values())])
        panel.tick_params(axis="x", labelrotation=45)
        panel.set_xlabel("training step")
        panel.set_ylabel(label)
        panel.grid(alpha=0.3)
    axes[0].legend(frameon=False, fontsize=7)
    grid = rows[rows["measure"] == "anisotropy"].pivot(index="layer", columns="step", values="raw")
    values = grid.to_numpy()
    image = axes[-1].imshow(values, aspect="auto", origin="lower", vmin=0, cmap="magma")
    if values.size <= 200:  # few enough cells to read their values
        for (row, column), value in np.ndenumerate(values):
            bright = value > 0.6 * np.nanmax(values)
            axes[-1].text(
                column,
                row,
                f"{value:.2f}",
                ha="center",
                va="center",
                fontsize=6,
                color="black" if bright else "white",
            )
    axes[-1].set_xticks(range(grid.shape[1]), [f"{step:,}" for step in grid.columns], rotation=45)
    axes[-1].set_yticks(range(grid.shape[0]), grid.index)
    axes[-1].set_xlabel("training step")
    axes[-1].set_ylabel("layer")
    axes[-1].set_title("anisotropy", fontsize=9)
    figure.colorbar(image, ax=axes[-1])
    figure.suptitle(title)
    save_figure(figure, outputs, source)
