"""Figures 1–4 of the paper (anisotropy baseline and adjusted SelfSim, IntraSim and MEV by
layer), Definition 3's MEV, and the per-word-class and frequency views of SelfSim.

Figures 1–3 draw each model's exact estimator (solid) beside the paper's (dashed); Figure 4
draws the paper's MEV estimator, the TruncatedSVD variance ratio, which is what the
paper's Figure 4 plotted; MEV as Definition 3 defines it has a figure of its own."""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from contextuality import __version__  # noqa: E402
from contextuality.benchmarks import BENCHMARKS  # noqa: E402
from contextuality.configuration.schema import default  # noqa: E402
from contextuality.figures.legends import keep_legends_off_data  # noqa: E402
from contextuality.figures.model_styles import model_colours  # noqa: E402
from contextuality.figures.specs import (  # noqa: E402
    TRANSFORMS_FIGURE,
    FigureSpec,
    panels_drawn_in,
)
from contextuality.files.provenance import (  # noqa: E402
    atomic_path,
    provenance_record,
    sha256_file,
    write_json,
)
from contextuality.files.tables import TABLE_DIGEST  # noqa: E402
from contextuality.measures.ranks import spearman_interval  # noqa: E402
from contextuality.transforms.fitting import TRANSFORMS  # noqa: E402

# Confidence of the closed-form interval of a Spearman ρ (`FigureSpec.spearman`).
SPEARMAN_LEVEL = 0.95


def plot_figure(
    table: pd.DataFrame,
    spec: FigureSpec,
    outputs: list[str | os.PathLike],
    transform: str = "none",
    relative_layers: bool = default("figures", "relative_layers"),
    source: str = "",
) -> None:
    """Each series as one line per model against layer index (or layer / number of
    layers: with `relative_layers`, and whenever the models differ in depth), with a band
    for the interval where the table has one (for a Spearman ρ, `spec.spearman`, its
    `SPEARMAN_LEVEL` interval from ρ and n).

    table: the long summary table (see `contextuality.steps.measures.measures_table`).
    outputs: files to write; the format follows each suffix (.png, .pdf).
    source: what the figure was drawn from, stored in the file's metadata.
    """
    rows = table[table["transform"] == transform]
    relative_layers = relative_layers or mixed_depths(rows)
    x_column = "relative_layer" if relative_layers else "layer"
    figure, axes = plt.subplots(figsize=(5.0, 3.6), layout="constrained")
    colors = model_colours(rows["model"].unique())
    valueless = set(colors)
    for marker, series in zip(SERIES_MARKERS, spec.series, strict=False):
        selected = rows[rows["measure"] == series.measure]
        for model, group in selected.groupby("model", sort=True):
            group = group.sort_values("layer")
            if group[spec.column].isna().all():
                continue
            valueless.discard(model)
            layers = layers_of_depth(rows, group)
            line = with_gaps(group, [x_column, spec.column], layers)
            axes.plot(
                line[x_column],
                line[spec.column],
                series.linestyle,
                color=colors[model],
                marker=marker,
                markersize=3.5 if marker == "o" else 5,
                label=f"{model}{series.label}",
            )
            if spec.spearman:
                low, high = spearman_interval(group[spec.column], group["n"], SPEARMAN_LEVEL)
                group = group.assign(**{f"{spec.column}_low": low, f"{spec.column}_high": high})
            _band(axes, group, x_column, spec.column, colors[model], layers)
    axes.set_xlabel(layer_axis_label(relative_layers))
    axes.set_ylabel(spec.ylabel)
    axes.set_title(spec.title)
    if not relative_layers and len(rows):
        axes.set_xticks(sorted(rows["layer"].unique()))
    axes.grid(alpha=0.3)
    entries = len(axes.get_legend_handles_labels()[1])
    if entries > LEGEND_INSIDE:  # beside the plot, not over half of it, in a wider figure
        figure.set_size_inches(8.0, 3.6)
        axes.legend(frameon=False, fontsize=7, loc="center left", bbox_to_anchor=(1.0, 0.5))
    else:
        axes.legend(frameon=False)
    if valueless:  # named, not left as a legend entry with nothing drawn
        axes.text(
            0.01,
            0.01,
            f"no value: {', '.join(sorted(valueless))}",
            transform=axes.transAxes,
            fontsize=7,
            color="0.4",
        )
    save_figure(figure, outputs, source)


def mixed_depths(rows: pd.DataFrame) -> bool:
    """Whether the models of `rows` differ in depth (``n_layers``): drawn on one axis of
    layer indices, the last layer of one would face a middle layer of another."""
    return "n_layers" in rows and rows.groupby("model")["n_layers"].first().nunique() > 1


def say_where_the_axis_starts(panel: Any) -> None:
    """Where a line plot's linear y axis leaves 0 out (all of it above, or all below),
    say so in its label: a difference is not read against a floor the axis does not show.
    A log axis, or a panel with no line (a heatmap, bars, a scatter), is left alone."""
    if panel.get_yscale() != "linear" or not any(len(line.get_xdata()) for line in panel.lines):
        return
    if panel.images or panel.get_label() == "<colorbar>":
        return
    low, high = panel.get_ylim()
    if low > 0:
        panel.set_ylabel(f"{panel.get_ylabel()}\n(axis from {low:.3g}, not 0)")
    elif high < 0:
        panel.set_ylabel(f"{panel.get_ylabel()}\n(axis up to {high:.3g}, not 0)")


def layer_axis_label(relative_layers: bool) -> str:
    """The label of an axis of layers: layer 0 is the embedding output, not a block's."""
    return f"{'layer / number of layers' if relative_layers else 'layer'} (0: embedding output)"


# Each series' marker: a second estimator drawn over the first (the paper's beside the
# exact one) stays visible where the two coincide.
SERIES_MARKERS = ("o", "x", "+")

# Legend entries a figure of the measures holds inside its axes; more go beside them.
LEGEND_INSIDE = 4


def layers_of_depth(rows: pd.DataFrame, group: pd.DataFrame) -> np.ndarray:
    """The layers that the models of `group`'s depth have in `rows` (of every model where
    the table does not say a depth)."""
    if "n_layers" not in rows:
        return rows["layer"].unique()
    return rows.loc[rows["n_layers"] == group["n_layers"].iloc[0], "layer"].unique()


def with_gaps(group: pd.DataFrame, columns: list[str], layers: np.ndarray) -> pd.DataFrame:
    """`columns` of one model's rows in layer order, with a NaN row between two of its
    layers where `layers` (those other models of its depth have) holds one between them (a
    model measured at fewer layers, as an ablated one from its block on), so that its line
    is broken there rather than drawn across layers it has no value for."""
    own = group["layer"].to_numpy()
    chosen = group[columns].reset_index(drop=True)
    gaps = [
        index
        for index, (low, high) in enumerate(zip(own, own[1:], strict=False))
        if np.any((layers > low) & (layers < high))
    ]
    if not gaps:
        return chosen
    blank = pd.DataFrame(np.nan, index=np.array(gaps) + 0.5, columns=columns)
    return pd.concat([chosen, blank]).sort_index()


# Each transform's marker, so that lines that coincide (a correction that changes nothing
# at a layer) stay told apart; `none`'s is drawn open and larger, on top.
TRANSFORM_MARKERS = ("o", "s", "^", "D", "v", "P")


# The transforms figure's panels, from the records that draw in it.
TRANSFORM_PANELS = panels_drawn_in(TRANSFORMS_FIGURE)


def _band(
    panel: Any,
    group: pd.DataFrame,
    x_column: str,
    column: str,
    colour: str,
    layers: np.ndarray | None = None,
) -> None:
    """A band from `column`'s ``_low`` to its ``_high`` values of `group` against
    `x_column`, where every row has them (none for a value without an interval), broken
    where its line is (`with_gaps` of `layers`, when given)."""
    low, high = f"{column}_low", f"{column}_high"
    if low in group and len(group) and group[low].notna().all():
        band = group if layers is None else with_gaps(group, [x_column, low, high], layers)
        panel.fill_between(band[x_column], band[low], band[high], color=colour, alpha=0.2)


def plot_transforms(
    table: pd.DataFrame,
    outputs: list[str | os.PathLike],
    relative_layers: bool = default("figures", "relative_layers"),
    source: str = "",
) -> None:
    """Adjusted SelfSim and the cosine baseline against layer, one line per transform, one
    row of panels per model, each panel's y axis naming its measure, with a band for the
    interval where the table has one: what each correction does to the anisotropy and to
    the measure adjusted for it. Under a correction, values come from the sentences it was
    not fitted on; under ``none``, from every sentence."""
    models = sorted(table["model"].unique())
    present = set(table["transform"])
    transforms = [name for name in TRANSFORMS if name in present]
    x_column = "relative_layer" if relative_layers else "layer"
    figure, axes = plt.subplots(
        max(1, len(models)),
        len(TRANSFORM_PANELS),
        figsize=(4.2 * len(TRANSFORM_PANELS), 3.0 * max(1, len(models))),
        layout="constrained",
        squeeze=False,
    )
    for row, model in zip(axes, models, strict=False):
        for panel, (measure, column, label) in zip(row, TRANSFORM_PANELS, strict=True):
            chosen = table[(table["model"] == model) & (table["measure"] == measure)]
            for k, transform in enumerate(transforms):
                group = chosen[chosen["transform"] == transform].sort_values("layer")
                if not len(group):
                    continue
                layers = layers_of_depth(table, group)
                line = with_gaps(group, [x_column, column], layers)
                panel.plot(
                    line[x_column],
                    line[column],
                    f"{TRANSFORM_MARKERS[k % len(TRANSFORM_MARKERS)]}-",
                    color=f"C{k}",
                    markersize=6 if transform == "none" else 3,
                    markerfacecolor="none" if transform == "none" else f"C{k}",
                    zorder=3 if transform == "none" else 2,  # never hidden under a correction
                    label=transform,
                )
                _band(panel, group, x_column, column, f"C{k}", layers)
            panel.axhline(0.0, color="0.5", linewidth=0.8)
            panel.set_title(f"{model}: {label}", fontsize=9)
            panel.set_ylabel(label)
            panel.set_xlabel(layer_axis_label(relative_layers))
            panel.grid(alpha=0.3)
    axes[0][0].legend(frameon=False, title="transform")
    figure.suptitle("Corrections of the embedding space, layer by layer")
    save_figure(figure, outputs, source)


def layer_colours(n: int) -> np.ndarray:
    """The colours of `n` layers (or depths) in order, as every figure that colours by layer
    draws them: from light (the embeddings) to dark (the last layer)."""
    return plt.cm.viridis_r(np.linspace(0.1, 0.95, n))


# A panel's values spanning more than this factor are drawn on a log axis.
LOG_SPAN = 20


def log_scale_if_wide(panel: Any, values: Any, label: str) -> bool:
    """Set `panel`'s y axis to log scale where the positive finite `values` span more than
    a factor `LOG_SPAN` (a decoder's first token, far above the rest), ticked at powers of
    ten (and 2 and 5 times them over two decades or less) written out, and its y label to
    `label`, followed by "(log scale)" where it is; whether it is."""
    values = np.asarray(values, dtype=np.float64)
    positive = values[np.isfinite(values) & (values > 0)]
    wide = len(positive) > 0 and positive.max() > LOG_SPAN * positive.min()
    if wide:
        panel.set_yscale("log")
        subs = (1.0,) if positive.max() > 100 * positive.min() else (1.0, 2.0, 5.0)
        panel.yaxis.set_major_locator(matplotlib.ticker.LogLocator(subs=subs))
        panel.yaxis.set_major_formatter(
            matplotlib.ticker.FuncFormatter(
                lambda value, _: f"{value:,.0f}" if value >= 1 else f"{value:g}"
            )
        )
        panel.yaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    panel.set_ylabel(f"{label} (log scale)" if wide else label)
    return wide


def label_cells(
    panel: Any, values: np.ndarray, bright_above: float, limit: int = 200, reversed_map=False
) -> None:
    """Write each cell's value (two decimals) on a heatmap of `values` drawn on `panel`,
    in black on cells above `bright_above` (below it, for a `reversed_map`, whose bright
    end is its low values) and white on the others, when there are at most `limit` cells
    to read; a missing (NaN) cell is left blank."""
    if values.size > limit:
        return
    for (row, column), value in np.ndenumerate(values):
        if not np.isfinite(value):
            continue
        colour = (
            "black" if (value < bright_above if reversed_map else value > bright_above) else "white"
        )
        panel.text(column, row, f"{value:.2f}", ha="center", va="center", fontsize=6, color=colour)


def settle_layout(figure: Any) -> None:
    """Lay `figure` out once before its first file is drawn: constrained layout moves the
    panels again on a later draw where square heatmaps take their room, and a file drawn
    first would keep text cut at an edge."""
    figure.draw_without_rendering()


def finish_figure(figure: Any) -> None:
    """What every figure gets before its first file: each line plot's y axis saying where
    it leaves 0 out (`say_where_the_axis_starts`), no legend over its data
    (`legends.keep_legends_off_data`), and its layout settled (`settle_layout`)."""
    for panel in figure.axes:
        say_where_the_axis_starts(panel)
    keep_legends_off_data(figure)
    settle_layout(figure)


def figure_sidecar(path: str | os.PathLike) -> Path:
    """The provenance sidecar of a figure file: ``x.png`` → ``x.png.provenance.json``."""
    return Path(f"{path}.provenance.json")


def save_figure(figure: Any, outputs: list[str | os.PathLike], source: str) -> None:
    """Write `figure` in each output's format (`finish_figure` first), with provenance in
    its metadata and, before the file gets its name, in its sidecar (`figure_sidecar`)
    with the SHA-256 of its bytes (`tables.TABLE_DIGEST`, which `contextuality verify`
    compares), and close it."""
    finish_figure(figure)
    for output in outputs:
        with atomic_path(output) as temporary:
            figure.savefig(
                temporary,
                format=os.path.splitext(str(output))[1][1:],
                dpi=150,
                metadata={"Creator": f"contextuality {__version__}", "Subject": source},
            )
            record = provenance_record(step="figure", source=source)
            write_json(figure_sidecar(output), {**record, TABLE_DIGEST: sha256_file(temporary)})
    plt.close(figure)


def plot_reference(comparison: pd.DataFrame, model: str, outputs: list[str | os.PathLike]) -> None:
    """One panel per statistic: our values and the published ones against layer."""
    statistics = list(dict.fromkeys(comparison["statistic"]))
    figure, axes = plt.subplots(
        1,
        max(1, len(statistics)),
        figsize=(3.2 * max(1, len(statistics)), 3.2),
        layout="constrained",
        squeeze=False,
    )
    layers = comparison["layer"].unique()
    for panel, statistic in zip(axes[0], statistics, strict=False):
        rows = comparison[comparison["statistic"] == statistic].sort_values("layer")
        line = with_gaps(rows, ["layer", "published", "ours"], layers)
        panel.plot(line["layer"], line["published"], "s--", color="0.4", label="published")
        panel.plot(line["layer"], line["ours"], "o-", color="C0", label="this run")
        panel.set_title(statistic, fontsize=8)
        panel.set_xticks(rows["layer"].unique())
        panel.set_xlabel(layer_axis_label(relative_layers=False))
        panel.grid(alpha=0.3)
    axes[0][0].legend(frameon=False)
    figure.suptitle(f"{model}: this run against Ethayarajh (2019)'s published values")
    save_figure(figure, outputs, source="published: kawine/contextual@c10c992")


# A score from fewer of a benchmark's items than this share (the others hold a word without
# a vector) is greyed out in the Table 1 heatmap: it does not compare with the paper's.
MINIMUM_COVERAGE = 0.5


def _warn_low_coverage(grid: pd.DataFrame, low: np.ndarray) -> None:
    """Log, as a warning, how many scores of the heatmap are greyed out, with examples."""
    rows, columns = np.nonzero(low)
    if len(rows):
        cells = zip(grid.index[rows], grid.columns[columns], strict=True)
        examples = ", ".join(f"{row} on {column}" for row, column in cells)
        logging.getLogger(__name__).warning(
            "%d of %d Table 1 scores cover under %.0f%% of their benchmark's items and are "
            "greyed out: %s",
            len(rows),
            int(np.isfinite(grid.to_numpy()).sum()),
            100 * MINIMUM_COVERAGE,
            examples[:300],
        )


def plot_word_benchmarks(table: pd.DataFrame, outputs: list[str | os.PathLike]) -> None:
    """Heatmap of static-embedding scores: one row per embedding (and scoring protocol, when
    the table has several), one column per benchmark; the paper's quoted rows marked. A
    score with coverage under `MINIMUM_COVERAGE` is greyed out and logged as a warning."""
    quoted = table["source"].str.startswith("quoted").to_numpy()
    several = table.loc[~quoted, "protocol"].nunique() > 1
    protocol = (" [" + table["protocol"].astype(str) + "]").to_numpy() if several else ""
    corrected = [
        f" {transform}" if isinstance(transform, str) and transform not in ("", "none") else ""
        for transform in table.get("transform", pd.Series("", index=table.index))
    ]
    table = table.assign(
        row=[
            f"{model} {method} L{layer}{suffix}" if pd.notna(layer) else f"{model}"
            for model, method, layer, suffix in zip(
                table["model"], table["method"], table["layer"], corrected, strict=True
            )
        ]
        + np.where(quoted, " (paper)", protocol)
    )
    grid = table.pivot_table(index="row", columns="benchmark", values="value", sort=False)
    order = [name for name in BENCHMARKS if name in grid.columns]
    grid = grid[order]
    coverage = table.pivot_table(index="row", columns="benchmark", values="coverage", sort=False)
    low = coverage.reindex(index=grid.index, columns=order).to_numpy() < MINIMUM_COVERAGE
    _warn_low_coverage(grid, low)
    figure, axes = plt.subplots(
        figsize=(1.8 + 0.8 * grid.shape[1], 1.2 + 0.28 * grid.shape[0]), layout="constrained"
    )
    image = axes.imshow(np.ma.masked_where(low, grid.to_numpy()), cmap="viridis", aspect="auto")
    grey = matplotlib.colors.ListedColormap(["0.85"])
    axes.imshow(np.where(low, 0.0, np.nan), cmap=grey, aspect="auto")  # low coverage only
    middle = np.nanmean([np.nanmin(grid.to_numpy()), np.nanmax(grid.to_numpy())])
    axes.set_xticks(range(grid.shape[1]), grid.columns, rotation=45, ha="right")
    axes.set_yticks(range(grid.shape[0]), grid.index, fontsize=7)
    for (row, column), value in np.ndenumerate(grid.to_numpy()):
        if np.isfinite(value):
            color = "0.45" if low[row, column] else "white" if value < middle else "black"
            axes.text(
                column, row, f"{value:.2f}", ha="center", va="center", fontsize=6, color=color
            )
    figure.colorbar(image, ax=axes).set_label("ρ, accuracy or purity", fontsize=8)
    axes.set_title(
        "Static embeddings on word benchmarks (Table 1)\n"
        f"grey: scored on under {MINIMUM_COVERAGE:.0%} of the items (coverage)",
        fontsize=9,
    )
    save_figure(figure, outputs, source="results/tables/word_benchmarks.tsv")
