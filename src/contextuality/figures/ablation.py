"""The ablation figure. What setting a block's massive activations (or first-token state)
to zero or their mean does to a model's layers, the model and its ablated copy side by
side on the same occurrences."""

from __future__ import annotations

import os

import pandas as pd
from matplotlib.ticker import MaxNLocator

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
    ``none``), `base` solid and `ablated` dashed by layer from the ablated block on (before
    it the two are the same), and, where `alignment` holds the pair, each similarity of
    `SAME_LAYER_LINES` that it has between each layer of one and the same layer of the
    other, with CKA's null; a dotted line at the ablated `block`."""
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
        measured = rows[rows["measure"] == measure]
        for model, style in ((base, "-"), (ablated, "--")):
            line = measured[measured["model"] == model]
            if model == ablated:  # before the block the two are one model: drawn once
                line = line[line["layer"] >= block]
            # broken at a layer the other has and this one lacks, not drawn across it
            line = with_gaps(line.sort_values("layer"), ["layer", column], measured["layer"])
            panel.plot(line["layer"], line[column], style, marker="o", markersize=3, label=model)
        panel.set_ylabel(label)
    if pair is not None:
        panel = axes[-1]
        columns = {name: line for name, line in SAME_LAYER_LINES.items() if name in pair}
        base_layers = measures.loc[measures["model"] == base, "layer"].unique()
        line = with_gaps(
            pair.rename(columns={"layer_a": "layer"}), ["layer", *columns], base_layers
        )
        for column, (style, label) in columns.items():
            panel.plot(line["layer"], line[column], style, marker="o", markersize=3, label=label)
        rows = int(pair["n_rows"].iloc[0])
        panel.set_ylabel(f"alignment at the same layer ({rows:,} rows)", fontsize=9)
        panel.set_ylim(-0.05, 1.05)
    for panel in axes:
        panel.axvline(block, color="grey", linestyle=":", linewidth=1)
        panel.set_xlabel(layer_axis_label(relative_layers=False))
        panel.xaxis.set_major_locator(MaxNLocator(integer=True))  # layers
        panel.grid(alpha=0.3)
        panel.legend(fontsize=7)
    figure.suptitle(f"{ablated}: {base} with block {block}'s output ablated", fontsize=10)
    save_figure(figure, outputs, source)
