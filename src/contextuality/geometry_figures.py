"""Figures of the geometry steps: CKA between layers as heatmaps, one panel per pair of
models (a model with itself first)."""

from __future__ import annotations

import os

import numpy as np
import pandas as pd

from contextuality.figures import plt, save_figure


def plot_cka(table: pd.DataFrame, outputs: list[str | os.PathLike], source: str = "") -> None:
    """A heatmap of CKA (0 to 1) per pair of models in `table` (`steps.geometry.CKA_COLUMNS`),
    the first model's layers down, the second's across, values written in the cells when
    there are few enough to read."""
    pairs = list(dict.fromkeys(zip(table["model_a"], table["model_b"], strict=True)))
    figure, axes = plt.subplots(
        1, len(pairs), figsize=(4.2 * len(pairs), 3.8), layout="constrained", squeeze=False
    )
    image = None
    for panel, (left, right) in zip(axes[0], pairs, strict=True):
        rows = table[(table["model_a"] == left) & (table["model_b"] == right)]
        grid = rows.pivot(index="layer_a", columns="layer_b", values="cka")
        image = panel.imshow(grid.to_numpy(), vmin=0, vmax=1, cmap="viridis", origin="lower")
        panel.set_xticks(range(grid.shape[1]), grid.columns)
        panel.set_yticks(range(grid.shape[0]), grid.index)
        panel.set_xlabel(f"{right} layer")
        panel.set_ylabel(f"{left} layer")
        sample = "every row" if not rows["sampled"].any() else f"{rows['n_rows'].iloc[0]:,} rows"
        panel.set_title(f"{left} × {right} ({sample})", fontsize=9)
        if grid.size <= 196:
            for (row, column), value in np.ndenumerate(grid.to_numpy()):
                panel.text(
                    column,
                    row,
                    f"{value:.2f}",
                    ha="center",
                    va="center",
                    fontsize=6,
                    color="white" if value < 0.6 else "black",
                )
    figure.colorbar(image, ax=axes[0].tolist(), label="linear CKA", shrink=0.9)
    figure.suptitle("Similarity between layers (linear CKA)")
    save_figure(figure, outputs, source)
