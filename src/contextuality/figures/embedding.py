"""The figure of the token embedding matrices (`measures.embedding_matrix`): each model's
singular spectrum of its input embedding beside its row norm by frequency of the token, a
colour per model."""

from __future__ import annotations

import itertools
import os
from typing import Any

import pandas as pd

from contextuality.figures.model_styles import model_colours
from contextuality.figures.paper import plt, save_figure

# Each frequency corpus's line style and marker in the norms panel, in order.
CORPUS_STYLES = ("-o", ":s", "--^", "-.v")


def draw_spectra(panel: Any, spectra: pd.DataFrame, colours: dict[str, Any]) -> None:
    """The singular spectrum of each input matrix (`SPECTRUM_COLUMNS` rows), shares
    σ_i²/Σσ² against rank on log–log axes, uncentered (solid) and centered (dashed)."""
    inputs = spectra[spectra["matrix"] == "input"]
    for (model, centered), rows in inputs.groupby(["model", "centered"], sort=False):
        label = f"{model}, {'centered' if centered else 'uncentered'}"
        style = "--" if centered else "-"
        panel.loglog(rows["rank"], rows["share"], style, label=label, color=colours[model])
    panel.set(
        title="Singular spectrum of the input embedding matrix",
        xlabel="rank i of the singular value",
        ylabel="share of the squared total, σᵢ² / Σⱼ σⱼ² (fraction)",
    )
    panel.legend(
        loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=3, fontsize="small", frameon=False
    )


def draw_norms(panel: Any, norms: pd.DataFrame, colours: dict[str, Any]) -> None:
    """Each input matrix's mean row norm by frequency-rank bin (`NORM_COLUMNS` rows) over
    its mean over every row (a ratio, 1 drawn as a rule), a colour per model and a line
    style per frequency corpus, broken at a bin the corpus has no token in."""
    bins = list(dict.fromkeys(norms.sort_values("rank_low", na_position="last")["bin"]))
    inputs = norms[norms["matrix"] == "input"]
    corpora = inputs["frequency_corpus"].unique()
    styles = dict(zip(corpora, itertools.cycle(CORPUS_STYLES)))
    for (model, corpus), rows in inputs.groupby(["model", "frequency_corpus"], sort=False):
        mean_norm = (rows["mean_norm"] * rows["n_tokens"]).sum() / rows["n_tokens"].sum()
        # every bin on the axis, a corpus's empty ones as gaps: no line across a bin it
        # has no token in (the Lee corpus's few words reach no rank past 10,000)
        ratio = (rows.set_index("bin")["mean_norm"] / mean_norm).reindex(bins)
        panel.plot(range(len(bins)), ratio.to_numpy(), styles[corpus], color=colours[model])
    panel.axhline(1.0, color="0.6", lw=0.8)
    panel.set_xticks(range(len(bins)), bins)
    panel.set(
        title="Row norm by frequency of the token (input matrix)",
        xlabel="frequency-rank bin of the token in the corpus (rank 1: the most frequent)",
        ylabel="mean row norm ÷ the matrix's mean row norm (ratio)",
    )
    keys = [
        plt.Line2D([], [], color=colours[name], label=name) for name in inputs["model"].unique()
    ]
    keys += [
        plt.Line2D(
            [], [], linestyle=style[:-1], marker=style[-1], color="0.3", label=f"counts: {corpus}"
        )
        for corpus, style in styles.items()
    ]
    panel.legend(
        handles=keys,
        loc="upper center",
        bbox_to_anchor=(0.5, -0.13),
        ncol=5,
        fontsize="small",
        frameon=False,
    )


def plot_embedding_matrices(
    spectra: pd.DataFrame,
    norms: pd.DataFrame,
    outputs: list[str | os.PathLike],
    source: str = "",
) -> None:
    """The spectra (`draw_spectra`) beside the norms by frequency (`draw_norms`), a colour
    per model (`model_styles`), written to each of `outputs`."""
    figure, (left, right) = plt.subplots(1, 2, figsize=(13, 5.5), layout="constrained")
    models = spectra["model"].unique()
    colours = model_colours(models)
    draw_spectra(left, spectra, colours)
    draw_norms(right, norms, colours)
    save_figure(figure, outputs, source)
