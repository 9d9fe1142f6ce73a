"""The alignment of chosen pairs of layers, each pair aligned alone. Each layer of a model
with the next (`adjacent_pairs`), or each layer of one model with the same layer of
another (`matching_pairs`: a model against its ablated or retrained self). A pair's rows
are those `alignment.alignment_between` gives it among every layer, with the same draws,
at a cost linear in the pairs rather than in the product of the layers (33 layers: 32
adjacent pairs of the 528)."""

from __future__ import annotations

import pandas as pd

from contextuality.geometry.alignment import (
    ALIGNMENT_COLUMNS,
    ALIGNMENT_OCCURRENCES,
    AlignmentSettings,
    SampledLayers,
    SampleRows,
    alignment_between,
)

PAIRINGS = ("adjacent", "matching")
# The alignment's settings where none are given: the config's defaults.
DEFAULT_SETTINGS = AlignmentSettings()


def adjacent_pairs(layers: list[int]) -> list[tuple[int, int]]:
    """Each stored layer with the next: [(0, 3), (3, 6), …] for layers [0, 3, 6, …]."""
    return list(zip(layers, layers[1:], strict=False))


def matching_pairs(left: list[int], right: list[int]) -> list[tuple[int, int]]:
    """Each layer both models store, with itself: [(12, 12), (15, 15), …]."""
    return [(layer, layer) for layer in left if layer in right]


def _of(sampled: SampledLayers, layers: tuple[int, ...]) -> SampledLayers:
    """`sampled`'s `layers` alone."""
    return SampledLayers(
        {layer: sampled.vectors[layer] for layer in layers},
        {layer: sampled.attributes.get(layer, {}) for layer in layers},
    )


def paired_alignment(
    left: tuple[str, SampledLayers],
    right: tuple[str, SampledLayers] | None,
    pairing: str,
    sample: SampleRows,
    seed: int,
    confidence: float,
    alignment: AlignmentSettings = DEFAULT_SETTINGS,
    transform: str = "none",
    occurrences: tuple[str, ...] = ALIGNMENT_OCCURRENCES,
) -> pd.DataFrame:
    """Every alignment measure, its interval and its permutation null (rows of
    `ALIGNMENT_COLUMNS`) for each pair of `pairing`: ``adjacent``, each layer of `left`
    with its next (`right` None); ``matching``, each layer of `left` with the same layer of
    `right`. Each pair is aligned alone on the rows with a vector in both of its layers,
    with the same draws as among every layer, so where every layer has a vector in the
    same rows (a model's words) its rows are those of the whole table."""
    if pairing not in PAIRINGS:
        raise ValueError(f"no pairing called {pairing}: {list(PAIRINGS)}")
    if (pairing == "matching") == (right is None):
        raise ValueError(f"'{pairing}' pairs {'two models' if right is None else 'one model'}")
    name, sampled = left
    numbers = list(sampled.vectors)
    if pairing == "adjacent":
        pairs = adjacent_pairs(numbers)
    else:
        pairs = matching_pairs(numbers, list(right[1].vectors))
    arguments = (sample, seed, confidence, alignment, transform, occurrences)
    tables = []
    for layer_a, layer_b in pairs:
        if right is None:
            found = alignment_between((name, _of(sampled, (layer_a, layer_b))), None, *arguments)
        else:
            other = (right[0], _of(right[1], (layer_b,)))
            found = alignment_between((name, _of(sampled, (layer_a,))), other, *arguments)
        table = found.table
        tables.append(table[(table["layer_a"] == layer_a) & (table["layer_b"] == layer_b)])
    if not tables:
        return pd.DataFrame(columns=ALIGNMENT_COLUMNS)
    return pd.concat(tables, ignore_index=True)
