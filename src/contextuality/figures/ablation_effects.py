"""The figure of the ablation's effects (`extraction.ablation_effects`): per decoder, its
held-out perplexity under each condition, and the attention on the first token by block.

Every condition measured is drawn, each in one colour in both panels; the block where the
massive activations appear (where they are ablated) is a dotted line."""

from __future__ import annotations

import os
from typing import Any

import pandas as pd
from matplotlib.ticker import FuncFormatter, MaxNLocator, NullFormatter

from contextuality.figures.paper import plt, save_figure

# Each condition's marker, in order, so that conditions whose lines coincide stay apart.
MARKERS = ("o", "s", "^", "D", "v", "P")


def draw_perplexity(
    panel: Any, rows: pd.DataFrame, colours: dict[str, Any], markers: dict[str, str]
) -> None:
    """One model's perplexity by condition, a point each with its 95 % interval, on a log
    axis whose ticks read as plain numbers (its minor ones too within one decade)."""
    for position, row in enumerate(rows.itertuples()):
        errors = [[row.perplexity - row.low], [row.high - row.perplexity]]
        panel.errorbar(
            [position],
            [row.perplexity],
            yerr=errors,
            marker=markers[row.condition],
            color=colours[row.condition],
            capsize=4,
        )
    panel.set_yscale("log")
    plain = FuncFormatter(lambda value, _: f"{value:,.0f}" if value >= 10 else f"{value:.3g}")
    panel.yaxis.set_major_formatter(plain)
    low, high = panel.get_ylim()
    panel.yaxis.set_minor_formatter(plain if high / low < 10 else NullFormatter())
    panel.set_xlim(-0.5, len(rows) - 0.5)
    panel.set_xticks(range(len(rows)), rows["condition"], rotation=20, ha="right", fontsize=8)
    panel.set_ylabel("held-out perplexity (log scale)")


def draw_attention(
    panel: Any, rows: pd.DataFrame, colours: dict[str, Any], markers: dict[str, str]
) -> None:
    """One model's attention share on the first token by block (the mean over heads and
    queries), a line per condition, on 0 to 1; the later conditions drawn thinner and
    hollow on top, so that a line another covers shows at its edges."""
    shares = rows[rows["head"].notna()]
    by_block = shares.groupby(["condition", "block"], sort=False)["first_token_share"].mean()
    for order, condition in enumerate(dict.fromkeys(shares["condition"])):
        line = by_block.loc[condition]
        panel.plot(
            line.index,
            line.to_numpy(),
            marker=markers[condition],
            markersize=6 - order,
            fillstyle="full" if order == 0 else "none",
            linewidth=2.4 - 0.4 * order,
            color=colours[condition],
        )
    panel.set_ylim(0, 1)
    panel.xaxis.set_major_locator(MaxNLocator(integer=True))
    panel.set(xlabel="block", ylabel="attention on the first token\n(mean over heads, queries)")


def plot_ablation_effects(
    perplexity: pd.DataFrame,
    attention: pd.DataFrame,
    outputs: list[str | os.PathLike],
    source: str = "",
) -> None:
    """A row per decoder: its perplexity by condition (`draw_perplexity`) beside its
    attention on the first token (`draw_attention`), the detection block marked; one key
    of the conditions below the panels; written to each of `outputs`."""
    models = list(dict.fromkeys(perplexity["model"]))
    conditions = list(dict.fromkeys(perplexity["condition"]))
    colours = dict(zip(conditions, plt.get_cmap("tab10").colors, strict=False))
    markers = dict(zip(conditions, MARKERS, strict=False))
    figure, axes = plt.subplots(
        len(models), 2, figsize=(11, 3.6 * len(models) + 0.8), squeeze=False, layout="constrained"
    )
    for (left, right), model in zip(axes, models, strict=True):
        rows = perplexity[perplexity["model"] == model]
        block = rows["detection_block"].iloc[0]
        draw_perplexity(left, rows, colours, markers)
        draw_attention(right, attention[attention["model"] == model], colours, markers)
        if pd.isna(block):
            where = "no massive activation found: unablated only"
        else:
            where = f"massive activations ablated at block {int(block)}"
            right.axvline(int(block), color="0.4", linestyle=":", linewidth=1)
        left.set_title(f"{model}: perplexity, {where}", fontsize=10)
        right.set_title(f"{model}: attention on the first token", fontsize=10)
    keys = [
        plt.Line2D([], [], color=colours[condition], marker=markers[condition])
        for condition in conditions
    ]
    names = list(conditions)
    if perplexity["detection_block"].notna().any():
        keys.append(plt.Line2D([], [], color="0.4", linestyle=":"))
        names.append("the block ablated")
    figure.legend(
        keys,
        names,
        loc="outside lower center",
        ncol=min(6, len(keys)),
        fontsize="small",
        frameon=False,
    )
    save_figure(figure, outputs, source)
