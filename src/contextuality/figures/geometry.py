"""Figures of the geometry steps. CKA between layers as heatmaps, one panel per pair of
models (a model with itself first) and per set of occurrences; the geometry under each
correction beside the raw one; the position profiles."""

from __future__ import annotations

import os

import numpy as np
import pandas as pd
from matplotlib.ticker import MaxNLocator

from contextuality.figures.blocks import draw_blocks, layer_blocks
from contextuality.figures.paper import (
    label_cells,
    layer_axis_label,
    layer_colours,
    layers_of_depth,
    log_scale_if_wide,
    plt,
    save_figure,
    with_gaps,
)
from contextuality.figures.specs import CORRECTIONS_FIGURE, panels_drawn_in
from contextuality.geometry.alignment_catalogue import ALIGNMENT_MEASURES
from contextuality.measures.registry import axis_label
from contextuality.transforms.fitting import TRANSFORMS


def plot_cka(table: pd.DataFrame, outputs: list[str | os.PathLike], source: str = "") -> None:
    """Linear CKA (0 to 1) of `table` (`geometry.alignment.ALIGNMENT_COLUMNS`, no word
    baselines) as one heatmap per set of occurrences (every occurrence, those past each
    sentence's first word), every model's layers down and across
    (`figures.blocks.layer_blocks`), values written in the cells when there are few
    enough to read."""
    kinds = list(dict.fromkeys(table["occurrences"]))
    grids = [layer_blocks(table[table["occurrences"] == kind], "cka") for kind in kinds]
    side = max(3.8, 0.16 * (grids[0].size if grids else 0) + 1.6)
    figure, axes = plt.subplots(
        1,
        max(1, len(kinds)),
        figsize=(side * max(1, len(kinds)) + 1.0, side),
        layout="constrained",
        squeeze=False,
    )
    image = None
    for panel, kind, blocks in zip(axes[0], kinds, grids, strict=False):
        rows = table[table["occurrences"] == kind]
        image = draw_blocks(panel, blocks, (0, 1), "viridis")
        sample = "every row" if not rows["sampled"].any() else f"{rows['n_rows'].iloc[0]:,} rows"
        which = "every occurrence" if kind == "all" else "past the first word"
        panel.set_title(f"{which}, {sample}", fontsize=9)
        panel.set_xlabel(layer_axis_label(relative_layers=False), fontsize=8)
        panel.set_ylabel(layer_axis_label(relative_layers=False), fontsize=8)
        label_cells(panel, blocks.values, bright_above=0.6, limit=196)
    if image is not None:
        figure.colorbar(image, ax=axes.ravel().tolist(), label="linear CKA", shrink=0.9)
    figure.suptitle("Similarity between layers (linear CKA)")
    save_figure(figure, outputs, source)


# A dimension line's columns: the layer, its value and, where the table has it, its interval.
INTERVAL_COLUMNS = ("layer", "raw", "raw_low", "raw_high")


def correction_panels() -> list[tuple[str, str, str]]:
    """The panels of the corrections figure, from the records: (source, column, axis label).
    ``dimension``: each row whose record draws it in this figure (`specs.panels_drawn_in`,
    under every transform of ``geometry.transforms``), from the measures table; ``alignment``:
    each alignment measure whose record asks for it (`AlignmentMeasure.corrections_panel`),
    a layer's with the stored layer before it."""
    return [
        *(("dimension", row, label) for row, _, label in panels_drawn_in(CORRECTIONS_FIGURE)),
        *(
            ("alignment", record.name, f"{record.label} with the previous layer")
            for record in ALIGNMENT_MEASURES
            if record.corrections_panel
        ),
    ]


def _with_previous_layer(
    table: pd.DataFrame, model: str, transform: str, occurrences: str = "position>0"
) -> pd.DataFrame:
    """The alignment rows (on `occurrences`) of each stored layer of `model` under
    `transform` with the stored layer before it, by layer (``layer_b``)."""
    rows = table[
        (table["model_a"] == model)
        & (table["model_b"] == model)
        & (table["transform"] == transform)
        & (table["occurrences"] == occurrences)
    ]
    layers = sorted(rows["layer_a"].unique())
    pairs = set(zip(layers, layers[1:], strict=False))
    chosen = [pair in pairs for pair in zip(rows["layer_a"], rows["layer_b"], strict=True)]
    return rows[chosen].sort_values("layer_b")


def _interval_and_null(panel, line: pd.DataFrame, column: str, colour: str) -> None:
    """An alignment line's interval shaded (where the table has one) and its null dotted."""
    x = line["layer_b"]
    if f"{column}_low" in line:
        panel.fill_between(
            x, line[f"{column}_low"], line[f"{column}_high"], color=colour, alpha=0.15, lw=0
        )
    panel.plot(x, line[f"null_{column}"], ":", color=colour, linewidth=1)


def plot_geometry_transforms(
    measures: pd.DataFrame,
    alignment: pd.DataFrame,
    outputs: list[str | os.PathLike],
    source: str = "",
) -> None:
    """Per stored model (a row of panels), one line per transform in each panel of
    `correction_panels`: a geometry measure's row by layer (its interval, a plateau's
    range, shaded), and each alignment measure between each layer and the stored layer
    before it on the occurrences past each sentence's first word (a decoder's first-token
    rows, of huge norm, are all that CKA sees of every occurrence), with its interval over
    sentences shaded and its permutation null dotted; raw wide and pale beneath the
    corrections, so that `center`, which moves no point relative to another, does not hide
    it. Under a correction, values come from the sentences it was not fitted on; raw, from
    the whole sample."""
    present = set(alignment["transform"]) | set(measures["transform"])
    transforms = [name for name in TRANSFORMS if name in present]
    models = sorted(set(alignment["model_a"]) & set(alignment["model_b"]))
    panels_drawn = correction_panels()
    figure, axes = plt.subplots(
        max(1, len(models)),
        len(panels_drawn),
        figsize=(4.2 * len(panels_drawn), 3.0 * max(1, len(models))),
        layout="constrained",
        squeeze=False,
    )
    for panels, model in zip(axes, models, strict=False):
        for panel, (kind, column, label) in zip(panels, panels_drawn, strict=True):
            for place, transform in enumerate(transforms):
                colour = f"C{place}"
                if kind == "dimension":
                    line = measures[
                        (measures["model"] == model)
                        & (measures["measure"] == column)
                        & (measures["transform"] == transform)
                    ].sort_values("layer")
                    if not len(line):
                        continue
                    columns = [name for name in INTERVAL_COLUMNS if name in line]
                    line = with_gaps(line, columns, layers_of_depth(measures, line))
                    x, y = line["layer"], line["raw"]
                    if "raw_low" in line:
                        panel.fill_between(
                            x, line["raw_low"], line["raw_high"], color=colour, alpha=0.15, lw=0
                        )
                else:
                    line = _with_previous_layer(alignment, model, transform)
                    x, y = line["layer_b"], line[column]
                    _interval_and_null(panel, line, column, colour)
                # Raw wide and pale beneath the rest: `center`, which moves no point
                # relative to another, draws over it where they agree.
                raw = transform == "none"
                panel.plot(
                    x,
                    y,
                    "o-",
                    color=colour,
                    markersize=6 if raw else 3,
                    linewidth=4 if raw else 1.5,
                    alpha=0.4 if raw else 1.0,
                    label=transform,
                    zorder=1 if raw else 2,
                )
            panel.set_title(f"{model}: {label}", fontsize=9)
            panel.set_ylabel(label)
            panel.set_xlabel(layer_axis_label(relative_layers=False))
            panel.xaxis.set_major_locator(MaxNLocator(integer=True))  # layers
            panel.grid(alpha=0.3)
        panels[-1].legend(frameon=False, fontsize=7, loc="center left", bbox_to_anchor=(1, 0.5))
    figure.suptitle(
        "The geometry raw and under each correction; alignment past each sentence's first word"
        "\n(shaded: 95 % intervals; dotted: the null of rows paired at random)"
    )
    save_figure(figure, outputs, source)


def plot_positions(table: pd.DataFrame, outputs: list[str | os.PathLike], source: str = "") -> None:
    """Per stored model (a row of panels), under transform ``none``: the mean L2 norm (on
    a log axis, labelled so, where the model's norms span more than a factor 20,
    `paper.LOG_SPAN`) and the anisotropy baseline of the occurrences in each bucket of
    sentence positions, one line per layer from light (embeddings) to dark (last layer);
    right of them, past a dotted line, the model's special tokens (rows of ``kind``
    ``special token``: [CLS], [SEP], <bos>), one marker each, in the same colours."""
    rows = table[table["transform"] == "none"]
    if "kind" not in rows:
        rows = rows.assign(kind="word position")
    models = sorted(rows["model"].unique())
    figure, axes = plt.subplots(
        max(1, len(models)),
        2,
        figsize=(9.0, 3.2 * max(1, len(models))),
        layout="constrained",
        squeeze=False,
    )
    for panels, model in zip(axes, models, strict=False):
        of_model = rows[rows["model"] == model]
        tokens = sorted(of_model.loc[of_model["kind"] == "special token", "bucket"].unique())
        layers = sorted(of_model["layer"].unique())
        colours = layer_colours(len(layers))
        for colour, layer in zip(colours, layers, strict=True):
            of_layer = of_model[of_model["layer"] == layer]
            special = of_layer["kind"] == "special token"
            profile = of_layer[~special].sort_values("first_position")
            positions = np.arange(len(profile))
            for panel, column in zip(panels, ("mean_norm", "anisotropy"), strict=True):
                panel.plot(
                    positions,
                    profile[column],
                    "o-",
                    color=colour,
                    markersize=3,
                    label=f"layer {layer}",
                )
                for place, token in enumerate(tokens):
                    found = of_layer[special & (of_layer["bucket"] == token)]
                    x = len(profile) + 0.5 + place
                    marker = SPECIAL_MARKERS[place % len(SPECIAL_MARKERS)]
                    panel.plot([x] * len(found), found[column], marker, color=colour, markersize=5)
                ticks = [*profile["bucket"], *tokens]
                places = [*positions, *(len(profile) + 0.5 + np.arange(len(tokens)))]
                panel.set_xticks(places, ticks, rotation=45 if tokens else 0)
                if tokens:
                    panel.axvline(len(profile) - 0.25, color="grey", linestyle=":", lw=0.8)
        log_scale_if_wide(panels[0], of_model["mean_norm"], "mean L2 norm")
        panels[1].set_ylabel(axis_label("anisotropy"))
        for panel in panels:
            label = "position of the word in its sentence"
            panel.set_xlabel(f"{label}; special tokens" if tokens else label)
            panel.set_title(model, fontsize=9)
            panel.grid(alpha=0.3)
        panels[1].legend(frameon=False, fontsize=7, loc="center left", bbox_to_anchor=(1, 0.5))
    figure.suptitle("Norm and anisotropy by position in the sentence, and of the special tokens")
    save_figure(figure, outputs, source)


# The markers of a model's special tokens in the position figure, in token order.
SPECIAL_MARKERS = ("s", "D", "^", "v", "P")
