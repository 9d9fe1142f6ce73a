"""The ablation figure. What setting a block's massive activations (or first-token state)
to zero or their mean does to a model's layers, the model and its ablated copy side by
side on the same occurrences."""

from __future__ import annotations

import os

import pandas as pd
from matplotlib.ticker import MaxNLocator

from contextuality.figures.model_styles import model_colours
from contextuality.figures.paper import (
    layer_axis_label,
    plt,
    save_figure,
    with_gaps,
)
from contextuality.figures.specs import ABLATION_FIGURE, LINE_STYLES, panels_drawn_in
from contextuality.geometry.alignment_catalogue import ALIGNMENT_MEASURES

# The measures drawn from the measures table, (row, column, axis label): the rows whose
# records draw them in the ablation figure.
MEASURE_PANELS = panels_drawn_in(ABLATION_FIGURE)

# The alignment measures' markers in the same-layer panel, in `SAME_LAYER_LINES`' order.
MEASURE_MARKERS = ("o", "s", "^", "D", ".")

# The alignment between each layer of the model and the same layer of its ablated copy:
# every alignment measure that is a similarity (0 to 1; the figure's alignment caption
# lists the same), a line style each, and linear CKA's null, dotted.
SAME_LAYER_LINES = {
    **{
        record.name: (LINE_STYLES[place % (len(LINE_STYLES) - 1)], record.label)
        for place, record in enumerate(r for r in ALIGNMENT_MEASURES if not r.distance)
    },
    "null_cka": (LINE_STYLES[-1], "CKA's null (rows paired at random)"),
}


def _draw_measure(panel, measured: pd.DataFrame, column: str, models: tuple[str, str], block):
    """One measure of the model (solid) and its ablated copy (dashed, from the ablated
    `block` on: before it the two are one model, drawn once), each in its colour, broken
    at a layer the other has and it lacks rather than drawn across it."""
    colours = model_colours(models)
    base, ablated = models
    for model, style in ((base, "-"), (ablated, "--")):
        line = measured[measured["model"] == model]
        if model == ablated:
            line = line[line["layer"] >= block]
        line = with_gaps(line.sort_values("layer"), ["layer", column], measured["layer"])
        panel.plot(
            line["layer"],
            line[column],
            style,
            marker="o",
            markersize=3,
            color=colours[model],
            label=model,
        )
    panel.legend(fontsize=7)


def _draw_same_layer(panel, pair: pd.DataFrame, base_layers) -> None:
    """Each similarity of `SAME_LAYER_LINES` between a layer of the model and the same
    layer of its copy, in shades of grey told apart by line style and marker (a layer
    measured alone is a point; the models' colours stay the models'), its key beside the
    panel, which its lines, falling from 1 to near 0, cross at every corner."""
    columns = {name: line for name, line in SAME_LAYER_LINES.items() if name in pair}
    line = with_gaps(pair.rename(columns={"layer_a": "layer"}), ["layer", *columns], base_layers)
    shades = ("0.0", "0.3", "0.45", "0.6", "0.7")
    for place, (column, (style, label)) in enumerate(columns.items()):
        panel.plot(
            line["layer"],
            line[column],
            style,
            marker=MEASURE_MARKERS[place % len(MEASURE_MARKERS)],
            markersize=3.5,
            color=shades[place % len(shades)],
            label=label,
        )
    rows = int(pair["n_rows"].iloc[0])
    panel.set_ylabel(f"alignment at the same layer ({rows:,} rows)", fontsize=9)
    panel.set_ylim(-0.05, 1.05)
    panel.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)


def plot_ablation(
    measures: pd.DataFrame,
    alignment: pd.DataFrame | None,
    base: str,
    ablated: str,
    block: int,
    outputs: list[str | os.PathLike],
    source: str = "",
) -> None:
    """One panel per measure of `MEASURE_PANELS` that both models have (transform
    ``none``; `_draw_measure`) and, where `alignment` holds the pair, one of each
    similarity between a layer of one and the same layer of the other, with CKA's null
    (`_draw_same_layer`); a dotted line at the ablated `block`."""
    rows = measures[(measures["transform"] == "none") & measures["model"].isin([base, ablated])]
    panels = [
        panel
        for panel in MEASURE_PANELS
        if rows[rows["measure"] == panel[0]]["model"].nunique() == 2
        and rows.loc[rows["measure"] == panel[0], panel[1]].notna().any()
    ]
    pair = None
    if alignment is not None:
        between = alignment[alignment["occurrences"] == "all"]
        forward = between[(between["model_a"] == base) & (between["model_b"] == ablated)]
        pair = forward[forward["layer_a"] == forward["layer_b"]].sort_values("layer_a")
        pair = pair if len(pair) else None
    count = len(panels) + (pair is not None)
    figure, axes = plt.subplots(
        1, count, figsize=(3.8 * count, 3.4), layout="constrained", squeeze=False
    )
    axes = list(axes[0])
    for panel, (measure, column, label) in zip(axes, panels, strict=False):
        _draw_measure(panel, rows[rows["measure"] == measure], column, (base, ablated), block)
        panel.set_ylabel(label)
    if pair is not None:
        _draw_same_layer(axes[-1], pair, measures.loc[measures["model"] == base, "layer"].unique())
    for panel in axes:
        panel.axvline(block, color="grey", linestyle=":", linewidth=1)
        panel.set_xlabel(layer_axis_label(relative_layers=False))
        panel.xaxis.set_major_locator(MaxNLocator(integer=True))  # layers
        panel.grid(alpha=0.3)
    figure.suptitle(f"{ablated}: {base} with block {block}'s output ablated", fontsize=10)
    save_figure(figure, outputs, source)
