"""The loss curves of the tiny models the workflow trains: the held-out loss against
training step beside each run's unigram line, below which a model uses context."""

from __future__ import annotations

import os

import pandas as pd

from contextuality.figures.model_styles import model_styles
from contextuality.figures.paper import plt, save_figure


def plot_training_losses(
    table: pd.DataFrame, outputs: list[str | os.PathLike], source: str = ""
) -> None:
    """A panel per architecture: each run's held-out loss (nats per predicted token)
    against step on a symmetric log axis (step 0, the random initialization, included),
    its unigram loss a dotted line in the run's colour; written to each of `outputs`."""
    architectures = list(dict.fromkeys(table["architecture"]))
    styles = model_styles(table["run"])
    figure, axes = plt.subplots(
        1,
        len(architectures),
        figsize=(5.2 * len(architectures), 3.8),
        squeeze=False,
        layout="constrained",
    )
    for panel, architecture in zip(axes[0], architectures, strict=True):
        rows = table[table["architecture"] == architecture]
        for run, curve in rows.groupby("run", sort=False):
            curve = curve.sort_values("step")
            style = styles[run]
            panel.plot(
                curve["step"],
                curve["held_out_loss"],
                color=style.colour,
                marker=style.marker,
                markersize=3.5,
                linewidth=1.4,
                label=f"{run} (seed {curve['seed'].iloc[0]}, warm-up {curve['warmup'].iloc[0]})",
            )
            panel.axhline(
                curve["unigram_loss"].iloc[0], color=style.colour, linestyle=":", linewidth=1
            )
        panel.set_xscale("symlog", linthresh=1)
        panel.set_xlim(left=0)
        panel.set(
            xlabel="training step",
            ylabel="held-out loss (nats per predicted token)",
            title=f"tiny {architecture}: held-out loss; dotted, each run's unigram line",
        )
        panel.title.set_fontsize(10)
        panel.legend(fontsize="small", frameon=False)
    save_figure(figure, outputs, source)
