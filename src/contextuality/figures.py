"""Figures 1–4 of the paper: anisotropy baseline and adjusted SelfSim, IntraSim and MEV by layer."""

from __future__ import annotations

import os
from dataclasses import dataclass

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from contextuality import __version__  # noqa: E402
from contextuality.provenance import atomic_path  # noqa: E402


@dataclass(frozen=True)
class FigureSpec:
    """Which column of which measure a figure plots, and how it is labelled."""

    number: int
    measure: str
    column: str
    title: str
    ylabel: str


FIGURES = (
    FigureSpec(1, "anisotropy", "raw", "Anisotropy", "mean cosine of random words"),
    FigureSpec(2, "selfsim", "adjusted", "Self-similarity", "adjusted SelfSim"),
    FigureSpec(3, "intrasim", "adjusted", "Intra-sentence similarity", "adjusted IntraSim"),
    FigureSpec(4, "mev", "adjusted", "Maximum explainable variance", "adjusted MEV"),
)
FIGURE_NAMES = {1: "anisotropy", 2: "selfsim", 3: "intrasim", 4: "mev"}


def plot_figure(
    table: pd.DataFrame,
    spec: FigureSpec,
    outputs: list[str | os.PathLike],
    transform: str = "none",
    relative_layers: bool = False,
    source: str = "",
) -> None:
    """One line per model against layer index (or layer / number of layers), with a band
    for the bootstrap interval where the table has one.

    table: the long summary table (see `contextuality.steps.summarize`).
    outputs: files to write; the format follows each suffix (.png, .pdf).
    source: what the figure was drawn from, stored in the file's metadata.
    """
    rows = table[(table["measure"] == spec.measure) & (table["transform"] == transform)]
    x_column = "relative_layer" if relative_layers else "layer"
    figure, axes = plt.subplots(figsize=(5.0, 3.6), layout="constrained")
    for model, group in rows.groupby("model", sort=True):
        group = group.sort_values("layer")
        (line,) = axes.plot(
            group[x_column], group[spec.column], marker="o", markersize=3.5, label=model
        )
        low, high = f"{spec.column}_low", f"{spec.column}_high"
        if low in group and group[low].notna().all():
            axes.fill_between(
                group[x_column], group[low], group[high], color=line.get_color(), alpha=0.2
            )
    axes.set_xlabel("layer / number of layers" if relative_layers else "layer")
    axes.set_ylabel(spec.ylabel)
    axes.set_title(f"Figure {spec.number}. {spec.title}")
    if not relative_layers and len(rows):
        axes.set_xticks(sorted(rows["layer"].unique()))
    axes.grid(alpha=0.3)
    axes.legend(frameon=False)
    for output in outputs:
        with atomic_path(output) as temporary:
            figure.savefig(
                temporary,
                format=os.path.splitext(str(output))[1][1:],
                dpi=150,
                metadata={"Creator": f"contextuality {__version__}", "Subject": source},
            )
    plt.close(figure)
