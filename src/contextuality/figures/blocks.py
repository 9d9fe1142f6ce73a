"""Every model's layers in one matrix, a block per pair of models. A figure of many
models is one heatmap per measure rather than a panel per pair: the alignment and CKA
figures draw their values this way. Alignment measures are symmetric, so a pair computed
once (a, b) fills both its blocks; a cell no row holds stays NaN and is drawn grey."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from matplotlib import colormaps
from matplotlib.patches import Rectangle


@dataclass(frozen=True)
class LayerBlocks:
    """`values`: rows = every model's layers in `models`' order, columns = the same layers
    then one column per name of `extra` (e.g. a word baseline); `layers[m]` is model m's
    layers in order."""

    models: tuple[str, ...]
    layers: dict[str, list[int]]
    extra: tuple[str, ...]
    values: np.ndarray

    @property
    def size(self) -> int:
        """The count of layers over every model (the matrix's rows)."""
        return sum(len(layers) for layers in self.layers.values())

    @property
    def starts(self) -> dict[str, int]:
        """The first row of each model."""
        counts = [len(self.layers[model]) for model in self.models]
        return dict(zip(self.models, np.cumsum([0, *counts[:-1]]).tolist(), strict=True))

    def labels(self) -> list[str]:
        """A tick label per row: the model's name at its first layer, the layer alone at
        the others (0 is the embedding output)."""
        labels = []
        for model in self.models:
            for index, layer in enumerate(self.layers[model]):
                labels.append(f"{model} {layer}" if index == 0 else str(layer))
        return labels


def layer_blocks(
    rows: pd.DataFrame, column: str, extra: dict[str, str] | None = None
) -> LayerBlocks:
    """`rows` (model_a, layer_a, model_b, layer_b and `column`, one set of occurrences)
    as a `LayerBlocks` of `column`; rows whose model_b is a key of `extra` become the
    columns after the layers, named by `extra`'s values, in its order where present."""
    extra = extra or {}
    aside = rows["model_b"].isin(list(extra))
    models = tuple(dict.fromkeys([*rows["model_a"], *rows.loc[~aside, "model_b"]]).keys())
    layers = {}
    for model in models:
        found = set(rows.loc[rows["model_a"] == model, "layer_a"])
        found |= set(rows.loc[~aside & (rows["model_b"] == model), "layer_b"])
        layers[model] = sorted(int(layer) for layer in found)
    row_of = {
        key: row
        for row, key in enumerate((model, layer) for model in models for layer in layers[model])
    }
    position = len(row_of)
    present = tuple(name for name in extra if (rows["model_b"] == name).any())
    values = np.full((position, position + len(present)), np.nan)
    own = rows[~aside]
    for left, layer_a, right, layer_b, value in zip(
        own["model_a"], own["layer_a"], own["model_b"], own["layer_b"], own[column], strict=True
    ):
        row, col = row_of[(left, int(layer_a))], row_of[(right, int(layer_b))]
        values[row, col] = value
        if np.isnan(values[col, row]):
            values[col, row] = value
    for offset, name in enumerate(present):
        named = rows[rows["model_b"] == name]
        for left, layer_a, value in zip(
            named["model_a"], named["layer_a"], named[column], strict=True
        ):
            values[row_of[(left, int(layer_a))], position + offset] = value
    return LayerBlocks(models, layers, tuple(extra[name] for name in present), values)


def draw_blocks(panel, blocks: LayerBlocks, limits, cmap: str):
    """`blocks` as a heatmap on `panel` over `limits` (grey where NaN): each row's tick
    labelled (`LayerBlocks.labels`), white rules between models and before the extra
    columns, the ticks smaller where there are many. Returns the image, for its colour
    bar."""
    fontsize = 7 if blocks.size <= 20 else 5
    colours = colormaps[cmap].with_extremes(bad="0.85")
    image = panel.imshow(
        blocks.values,
        vmin=limits[0],
        vmax=limits[1],
        cmap=colours,
        origin="lower",
        interpolation="nearest",
    )
    labels = blocks.labels()
    panel.set_yticks(range(blocks.size), labels, fontsize=fontsize)
    panel.set_xticks(
        range(blocks.values.shape[1]), [*labels, *blocks.extra], fontsize=fontsize, rotation=90
    )
    for start in [*list(blocks.starts.values())[1:], blocks.size]:
        if start < blocks.values.shape[1]:
            panel.axvline(start - 0.5, color="white", lw=1.5)
        if start < blocks.size:
            panel.axhline(start - 0.5, color="white", lw=1.5)
    return image


def outline_best(panel, blocks: LayerBlocks, closest) -> None:
    """Outline, in each block of two different models, each row's best match (`closest`
    of a row, NaN skipped: the largest similarity, the smallest distance); the values
    stay readable beneath."""
    starts = blocks.starts
    for left in blocks.models:
        for right in blocks.models:
            if left == right:
                continue
            top, first = starts[left], starts[right]
            block = blocks.values[
                top : top + len(blocks.layers[left]), first : first + len(blocks.layers[right])
            ]
            for row, values in enumerate(block):
                if not np.isfinite(values).any():
                    continue
                column = int(closest(values))
                panel.add_patch(
                    Rectangle(
                        (first + column - 0.5, top + row - 0.5),
                        1,
                        1,
                        fill=False,
                        edgecolor="red",
                        lw=1.0,
                    )
                )
