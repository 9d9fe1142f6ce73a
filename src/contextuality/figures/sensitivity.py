"""How stable a map of best-matching layers is: per layer of one model, the share of the
settings (sample size, seed, k) that pick each layer of the other as its best match.

The geometry stage's own pick is outlined."""

from __future__ import annotations

import os

import numpy as np
import pandas as pd

from contextuality.figures.paper import plt, save_figure


def match_shares(best: pd.DataFrame) -> pd.DataFrame:
    """Per pair of models and layer of the first: the share of settings whose best match
    is each layer of the second (rows of `sensitivity.best_matches`)."""
    keys = ["model_a", "model_b", "layer_a"]
    counts = best.groupby([*keys, "best_layer"]).size().rename("settings").reset_index()
    totals = counts.groupby(keys)["settings"].transform("sum")
    return counts.assign(share=counts["settings"] / totals)


def plot_match_shares(
    best: pd.DataFrame, outputs: list[str | os.PathLike], source: str = ""
) -> None:
    """A panel per pair of models: each layer of the first (x) against each layer of the
    second (y), coloured by the share of settings that choose it, the reference setting's
    choice outlined; written to each of `outputs`."""
    shares = match_shares(best)
    reference = best[best["as_reference"]].drop_duplicates(["model_a", "model_b", "layer_a"])
    pairs = list(dict.fromkeys(zip(best["model_a"], best["model_b"], strict=True)))
    figure, axes = plt.subplots(
        1, len(pairs), figsize=(6.4 * len(pairs), 5.0), squeeze=False, layout="constrained"
    )
    settings = best.groupby(["model_a", "model_b", "layer_a"]).size().max()
    for panel, (model_a, model_b) in zip(axes[0], pairs, strict=True):
        rows = shares[(shares["model_a"] == model_a) & (shares["model_b"] == model_b)]
        layers_a = sorted(best.loc[best["model_a"] == model_a, "layer_a"].unique())
        layers_b = sorted(rows["best_layer"].unique())
        grid = np.zeros((len(layers_b), len(layers_a)))
        for row in rows.itertuples():
            grid[layers_b.index(row.best_layer), layers_a.index(row.layer_a)] = row.share
        image = panel.imshow(grid, origin="lower", aspect="auto", cmap="viridis", vmin=0, vmax=1)
        chosen = reference[(reference["model_a"] == model_a) & (reference["model_b"] == model_b)]
        for row in chosen.itertuples():
            x, y = layers_a.index(row.layer_a), layers_b.index(row.best_layer)
            panel.add_patch(
                plt.Rectangle((x - 0.5, y - 0.5), 1, 1, fill=False, edgecolor="red", linewidth=1.5)
            )
        panel.set_xticks(range(len(layers_a)), [str(layer) for layer in layers_a])
        panel.set_yticks(range(len(layers_b)), [str(layer) for layer in layers_b])
        panel.set(
            xlabel=f"{model_a} layer (0: embedding output)",
            ylabel=f"{model_b} layer chosen as the best match (only those ever chosen)",
            title=f"{model_a} against {model_b}: mutual k-NN's best match\n"
            f"share of the {settings} settings (sample size, seed, k); red: the stage's own",
        )
        panel.title.set_fontsize(10)
        figure.colorbar(image, ax=panel, label="share of the settings choosing the layer")
    save_figure(figure, outputs, source)
