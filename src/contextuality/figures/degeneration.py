"""Figures of representation degeneration (see `contextuality.measures.degeneration`): norm against
frequency rank, kNN distance by rank bin, and the uncentered projection (the cone).

Each function writes every path of `outputs` (.png, .pdf) atomically, with `source` (what
the figure was drawn from) in the file's metadata.
"""

from __future__ import annotations

import math
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.colors import Normalize  # noqa: E402

from contextuality.figures.paper import (  # noqa: E402
    layer_colours,
    log_scale_if_wide,
    save_figure,
)

_PANEL_COLUMNS = 4


def _layer_grid(n_layers: int, width: float = 2.8, height: float = 2.5):
    """A figure with one panel per layer, up to four a row; panels past n_layers hidden.

    Spacing is fixed rather than left to a layout engine, which measures every scatter
    point's extent and takes seconds on these figures."""
    columns = max(1, min(_PANEL_COLUMNS, n_layers))
    rows = max(1, math.ceil(n_layers / columns))
    figure, axes = plt.subplots(
        rows, columns, figsize=(width * columns, height * rows + 0.6), squeeze=False
    )
    figure.subplots_adjust(left=0.09, right=0.97, bottom=0.12, top=0.88, wspace=0.5, hspace=0.55)
    for panel in axes.flat[n_layers:]:
        panel.set_visible(False)
    return figure, axes.flat[:n_layers]


NORM_SERIES = (
    ("occurrence_norm", "C0", "mean norm of its occurrences"),
    ("static_norm", "C1", "norm of its mean vector"),
)


def plot_norm_by_rank(
    words_by_layer: dict[int, pd.DataFrame],
    outputs: list[str | os.PathLike],
    title: str = "",
    source: str = "",
) -> None:
    """One panel per layer: each word's mean occurrence norm and the norm of its mean vector
    (which shrinks with the number of occurrences averaged, see
    `degeneration.frequency_correlations`) against its frequency rank, log scale; the norm
    on a log axis, labelled so, in a panel whose norms span more than a factor 20
    (`paper.LOG_SPAN`). words_by_layer: layer → `degeneration.word_degeneration` table."""
    layers = sorted(words_by_layer)
    figure, panels = _layer_grid(len(layers))
    for panel, layer in zip(panels, layers, strict=True):
        words = words_by_layer[layer]
        for column, color, label in NORM_SERIES:
            panel.scatter(
                words["frequency_rank"],
                words[column],
                s=3,
                alpha=0.35,
                linewidths=0,
                color=color,
                label=label,
                rasterized=True,  # thousands of points: an image inside the PDF
            )
        panel.set_xscale("log")
        norms = words[[column for column, _, _ in NORM_SERIES]].to_numpy()
        log_scale_if_wide(panel, norms, "L2 norm")
        panel.yaxis.label.set_fontsize(8)
        panel.set_title(f"layer {layer}", fontsize=9)
        panel.grid(alpha=0.3)
    figure.supxlabel("frequency rank (1 = most frequent, log scale)")
    handles, labels = panels[0].get_legend_handles_labels()
    figure.legend(  # above the panels, never over a layer's points
        handles,
        labels,
        loc="upper right",
        bbox_to_anchor=(0.97, 0.985),
        ncols=2,
        frameon=False,
        fontsize=7,
        markerscale=3,
    )
    figure.suptitle(title or "Norm against frequency rank", x=0.09, ha="left")
    save_figure(figure, outputs, source)


def rank_range(low: int, high: int | None) -> str:
    """The frequency ranks (1 = most frequent) of a bin of 0-based ranks [low, high), as
    ``"1–100"``, or ``"10,001+"`` for an open bin (high None or <NA>)."""
    return f"{low + 1:,}+" if pd.isna(high) else f"{low + 1:,}–{high:,}"


def plot_knn_by_bin(
    table: pd.DataFrame,
    outputs: list[str | os.PathLike],
    neighbours: int,
    title: str = "",
    source: str = "",
) -> None:
    """Mean distance to the k = `neighbours` nearest neighbours by frequency-rank bin, each
    bin labelled by its ranks (1 = most frequent), one line per layer from light (the
    embeddings) to dark (the last layer); panels for static (mean) vectors and for
    occurrences, each with its own scale. A bin holding no analysed word (the rarest,
    where no word is indexed) is left out and named under the axis. table:
    `degeneration_table` outputs concatenated, with a ``layer`` column."""
    first = table.drop_duplicates("bin").sort_values("rank_low")
    labels = {
        row.bin: rank_range(row.rank_low, row.rank_high) for row in first.itertuples(index=False)
    }
    filled = set(table.loc[table["knn_distance"].notna(), "bin"])
    bins = [name for name in labels if name in filled]
    empty = [labels[name] for name in labels if name not in filled]
    layers = sorted(table["layer"].unique())
    colors = layer_colours(len(layers))
    figure, axes = plt.subplots(1, 2, figsize=(8.4, 3.4), layout="constrained", squeeze=False)
    for panel, vectors in zip(axes[0], ("static", "occurrences"), strict=True):
        for color, layer in zip(colors, layers, strict=True):
            rows = table[(table["vectors"] == vectors) & (table["layer"] == layer)]
            rows = rows.set_index("bin").reindex(bins)
            panel.plot(
                range(len(bins)),
                rows["knn_distance"],
                "o-",
                color=color,
                markersize=3,
                label=f"layer {layer}",
            )
        panel.set_xticks(range(len(bins)), [labels[name] for name in bins], rotation=30, ha="right")
        dropped = f"\n(no words in ranks {', '.join(empty)})" if empty else ""
        panel.set_xlabel(f"frequency rank (1 = most frequent){dropped}")
        panel.set_title("mean vectors of words" if vectors == "static" else "occurrences")
        panel.set_ylabel(f"mean L2 distance\nto the k = {neighbours} nearest")
        panel.grid(alpha=0.3)
    figure.legend(  # beside the panels, never over a line
        *axes[0][1].get_legend_handles_labels(),
        loc="outside right upper",
        frameon=False,
        fontsize=7,
    )
    figure.suptitle(title or "Neighbourhood distance by frequency")
    save_figure(figure, outputs, source)


def plot_cone(
    cone_by_layer: dict[int, pd.DataFrame],
    outputs: list[str | os.PathLike],
    title: str = "",
    source: str = "",
) -> None:
    """One panel per layer: sampled occurrences on the layer's top two uncentered singular
    directions, coloured by log₁₀ frequency rank (one colour scale for all panels).
    cone_by_layer: layer → `degeneration.cone_projection` table."""
    layers = sorted(cone_by_layer)
    highest = max((frame["frequency_rank"].max() for frame in cone_by_layer.values()), default=1)
    norm = Normalize(vmin=0, vmax=max(np.log10(highest), 1e-9))
    figure, panels = _layer_grid(len(layers), width=3.0, height=2.7)
    for panel, layer in zip(panels, layers, strict=True):
        cone = cone_by_layer[layer]
        panel.scatter(
            cone["x"],
            cone["y"],
            c=np.log10(cone["frequency_rank"]),
            cmap="viridis",
            norm=norm,
            s=3,
            alpha=0.6,
            linewidths=0,
            rasterized=True,  # thousands of points: an image inside the PDF
        )
        shares = cone[["explained_x", "explained_y"]].to_numpy()[0] if len(cone) else [np.nan] * 2
        panel.set_xlabel(f"direction 1 ({shares[0]:.1%} of Σ‖v‖²)", fontsize=8)
        panel.set_ylabel(f"direction 2 ({shares[1]:.1%} of Σ‖v‖²)", fontsize=8)
        panel.set_title(f"layer {layer}", fontsize=9)
        panel.grid(alpha=0.3)
    figure.colorbar(
        plt.cm.ScalarMappable(norm=norm, cmap="viridis"),
        ax=list(panels),
        label="log₁₀ frequency rank",
    )
    figure.suptitle(title or "Occurrences on the top two uncentered singular directions")
    save_figure(figure, outputs, source)
