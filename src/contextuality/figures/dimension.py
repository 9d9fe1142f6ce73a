"""The intrinsic dimension of each layer as a curve over scale (`geometry.dimension`), the
plateau each layer's value is read on drawn bold."""

from __future__ import annotations

import os

import numpy as np
import pandas as pd

from contextuality.figures.paper import layer_colours, plt, save_figure

# Each estimator's panel: its title and the x axis of its scales (`dimension.SCALE_UNITS`).
_PANELS = {
    "twonn": (
        "TwoNN, on 1, 2, 4, … random subsets",
        "points per subset, log scale (fewer: larger scale)",
    ),
    "gride": ("GRIDE, ratio of the 2k-th to the k-th neighbour", "neighbour order k, log scale"),
}


def plot_dimension_scales(
    table: pd.DataFrame, outputs: list[str | os.PathLike], source: str = ""
) -> None:
    """Per stored model (a row of panels) and estimator (a column): the intrinsic dimension
    against scale, one line per layer from light (embeddings) to dark (last layer), its
    interval at each scale shaded (`geometry.dimension.CURVE_COLUMNS`), the plateau
    whose mean is the layer's value thick with filled markers. Scales run from the
    smallest length scale on the left to the largest on the right, both on log axes."""
    models = sorted(table["model"].unique())
    estimators = [name for name in _PANELS if name in set(table["estimator"])]
    figure, axes = plt.subplots(
        max(1, len(models)),
        max(1, len(estimators)),
        figsize=(4.6 * max(1, len(estimators)), 3.4 * max(1, len(models))),
        layout="constrained",
        squeeze=False,
    )
    for panels, model in zip(axes, models, strict=False):
        of_model = table[table["model"] == model]
        layers = sorted(of_model["layer"].unique())
        colours = layer_colours(len(layers))
        for panel, estimator in zip(panels, estimators, strict=False):
            for colour, layer in zip(colours, layers, strict=True):
                curve = of_model[
                    (of_model["estimator"] == estimator) & (of_model["layer"] == layer)
                ].sort_values("radius")
                _draw_curve(panel, curve, colour, f"layer {layer}")
            title, label = _PANELS[estimator]
            panel.set_xscale("log", base=2)
            drawn = of_model[of_model["estimator"] == estimator]
            scales = sorted(set(drawn.loc[drawn["n"] == drawn["n"].max(), "scale"]))
            panel.set_xticks(scales, [f"{int(scale):,}" for scale in scales], fontsize=7)
            panel.minorticks_off()
            if estimator == "twonn":
                panel.invert_xaxis()
            panel.set_xlabel(label)
            panel.set_ylabel("intrinsic dimension")
            panel.set_title(f"{model}: {title}", fontsize=9)
            panel.grid(alpha=0.3)
        panels[-1].legend(frameon=False, fontsize=7, loc="center left", bbox_to_anchor=(1, 0.5))
    figure.suptitle("Intrinsic dimension over scale (bold: the plateau read as the value)")
    save_figure(figure, outputs, source)


def _draw_curve(panel, curve: pd.DataFrame, colour, label: str) -> None:
    """One layer's curve: a thin line over every scale, its interval shaded, the plateau
    thick with filled markers."""
    scales = curve["scale"].to_numpy(dtype=np.float64)
    panel.plot(scales, curve["dimension"], "-", color=colour, linewidth=1, label=label)
    panel.fill_between(
        scales, curve["dimension_low"], curve["dimension_high"], color=colour, alpha=0.15
    )
    flat = curve[curve["on_plateau"].astype(bool)]
    panel.plot(flat["scale"], flat["dimension"], "o-", color=colour, linewidth=2.5, markersize=4)
