"""The best-matching layers figure. A row of panels per model, one per alignment measure:
each of its layers' best match in every other model (a colour each, the matched layer's
number above the point), its value with the bootstrap interval, hollow where it does not
stay best in most draws, and the critical value of choosing the best of that many layers
under permutation (dashed, the same colour), which a best match must clear to say more
than the choice; the model's alignment with the word baselines beside them."""

from __future__ import annotations

import os

import pandas as pd
from matplotlib.lines import Line2D

from contextuality.figures.alignment import PANELS
from contextuality.figures.model_styles import model_colours
from contextuality.figures.paper import layer_axis_label, plt, save_figure
from contextuality.geometry.baselines import BASELINES

# A best match that stays best in fewer bootstrap draws than this is drawn hollow.
STABLE_SHARE = 0.5

# Critical values closer than this share of a panel's y range to the bottom of its axis
# are written in the panel instead of drawn on the axis.
AXIS_SHARE = 0.02

# The word baselines' line colours, in `BASELINES`' order.
BASELINE_COLOURS = ("0.35", "0.6")


def _draw_matches(panel, found: pd.DataFrame, colour: str) -> Line2D:
    """One other model's best matches of a model's layers on `panel`: the intervals as
    bars from their own ends (less the bootstrap's bias an interval need not hold its
    value, where the draws are skewed), filled points where the match stays best,
    hollow where not, the matched layer written above, and the critical value of the
    choice dashed (its line returned)."""
    found = found.sort_values("layer")
    layers = found["layer"].to_numpy()
    values = found["value"].to_numpy(dtype=float)
    panel.vlines(layers, found["low"], found["high"], color=colour, lw=1)
    stable = found["stays_best"].to_numpy(dtype=float) >= STABLE_SHARE
    for filled in (True, False):
        chosen = stable == filled
        panel.plot(
            layers[chosen],
            values[chosen],
            "o",
            markersize=4,
            color=colour,
            markerfacecolor=colour if filled else "white",
        )
    (critical,) = panel.plot(layers, found["best_threshold"], "--", color=colour, lw=1)
    for layer, value, match in zip(layers, values, found["best_layer"], strict=True):
        panel.annotate(
            f"{match}",
            (layer, value),
            textcoords="offset points",
            xytext=(0, 4),
            ha="center",
            fontsize=6,
            color=colour,
        )
    return critical


def _say_critical_values_on_the_axis(panel, lines: list[Line2D], limits: tuple) -> None:
    """Where every critical value of a panel lies within `AXIS_SHARE` of its y range from
    the bottom of the axis (a null near 0), its dashed lines, which the axis would hide,
    replaced by the largest of them written in the panel."""
    values = [value for line in lines for value in line.get_ydata() if pd.notna(value)]
    low, high = limits
    if not values or max(values) > low + AXIS_SHARE * (high - low):
        return
    for line in lines:
        line.remove()
    panel.text(
        0.98,
        0.03,
        f"critical value of the best of the row ≤ {max(values):.3f} (on the axis)",
        transform=panel.transAxes,
        ha="right",
        fontsize=6,
        color="0.3",
        bbox={"facecolor": "white", "edgecolor": "none", "alpha": 0.85, "pad": 1},
    )


def _legend(figure, others: dict[str, str]) -> None:
    """One legend for the figure: a colour per other model, then what the marks mean."""
    handles = [
        Line2D([], [], color=colour, marker="o", lw=0, label=f"best match in {name}")
        for name, colour in others.items()
    ]
    handles += [
        Line2D(
            [],
            [],
            color="0.2",
            marker="o",
            markerfacecolor="white",
            lw=0,
            label=f"best in < {STABLE_SHARE:.0%} of the bootstrap draws",
        ),
        Line2D([], [], color="0.2", ls="--", lw=1, label="critical value of the best of the row"),
        *(
            Line2D([], [], color=colour, ls="-.", lw=1, label=f"{label} alone")
            for label, colour in zip(BASELINES.values(), BASELINE_COLOURS, strict=True)
        ),
    ]
    figure.legend(handles=handles, loc="outside lower center", ncols=3, fontsize=7, frameon=False)


def plot_best_layers(
    best: pd.DataFrame,
    alignment: pd.DataFrame,
    outputs: list[str | os.PathLike],
    source: str = "",
) -> None:
    """`best` (`geometry.best_layers.BEST_LAYER_COLUMNS`, occurrences ``all``): a row of
    panels per model, one per measure of `PANELS`: x each layer of the model (0: the
    embedding output), y its best match's value in each other model (a colour each) with
    its interval, the other model's layer written above, filled where it stays best in at
    least `STABLE_SHARE` of the draws; dashed, the critical value of the best of the row
    under permutation (`best_threshold`); dash-dotted, the layer's alignment with each word
    baseline in `alignment` (`geometry.baselines`), what knowing the word alone gives."""
    every = best[best["occurrences"] == "all"]
    baselines = alignment[
        (alignment["occurrences"] == "all") & alignment["model_b"].isin(BASELINES)
    ]
    models = list(dict.fromkeys(every["model"]))
    others = model_colours(every["other_model"])
    figure, axes = plt.subplots(
        max(len(models), 1),
        len(PANELS),
        figsize=(3.6 * len(PANELS), 3.0 * max(len(models), 1) + 0.6),
        layout="constrained",
        squeeze=False,
    )
    for row_axes, model in zip(axes, models, strict=False):
        rows = every[every["model"] == model]
        known = baselines[baselines["model_a"] == model]
        for panel, record in zip(row_axes, PANELS, strict=True):
            measured = rows[rows["measure"] == record.name]
            critical = [
                _draw_matches(panel, found, others[other])
                for other, found in measured.groupby("other_model", sort=False)
            ]
            layers = sorted(measured["layer"].unique())
            for name, colour in zip(BASELINES, BASELINE_COLOURS, strict=True):
                alone = known[known["model_b"] == name]
                if len(alone):
                    alone = alone.set_index("layer_a")[record.name].reindex(layers)
                    panel.plot(layers, alone, "-.", color=colour, lw=1)
            panel.set_ylim(*record.limits)
            _say_critical_values_on_the_axis(panel, critical, record.limits)
            panel.set_xticks(layers)
            panel.set_xlabel(f"{model} {layer_axis_label(relative_layers=False)}", fontsize=8)
            panel.set_ylabel(record.label, fontsize=8)
            panel.set_title(f"{model}: {record.label} of the best match", fontsize=8)
            panel.grid(alpha=0.3)
    if models:
        _legend(figure, others)
    figure.suptitle(
        "Each layer's best-matching layer of another model (its number above the point), "
        "with its bootstrap interval",
        fontsize=10,
    )
    save_figure(figure, outputs, source)
