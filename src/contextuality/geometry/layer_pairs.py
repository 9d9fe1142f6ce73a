"""Alignment between the layers of one model, each unordered pair of layers computed once.

The pair (a, b) and its reverse (b, a) are one computation: one value, one bootstrap
interval and one permutation null, listed in both orders. Every alignment measure but
CKNNA is symmetric in its two layers; CKNNA as platonic-rep defines it is nearly so (the
unbiased HSIC of two neighbour kernels, neither of them symmetric, has a term 1ᵀK̃L̃1 that
is not 1ᵀL̃K̃1: the two orders of MiniLM's layers 0 and 6 differ by 10⁻⁴ of the value), and
both rows carry the value of the order a < b. A permutation null shuffles the rows of
every layer but the first, each layer by a permutation of its own (stream
``alignment_null``), so that the rows of any two layers are paired at random; a null
multiplies only the products between two layers (each layer's with itself is the
values', which no reordering moves), each pair once. A layer with itself (the diagonal)
is a perfect match by definition: its value is the measure's best
(`AlignmentMeasure.perfect`; NaN where the measure is undefined for the layer), its
interval that value, and it has no null. For L layers: L(L − 1)/2 pairs,
against the L² ordered pairs of `alignment.alignment_between`, whose bootstrap draws this
shares (stream ``alignment_bootstrap``)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from contextuality.configuration.random_streams import generator
from contextuality.errors import warn
from contextuality.geometry.alignment import (
    ALIGNMENT_OCCURRENCES,
    AlignmentSettings,
    SampledLayers,
    SampleRows,
    alignment_frame,
    rows_in_every_layer,
    search_neighbours,
)
from contextuality.geometry.alignment_catalogue import ALIGNMENT_MEASURES
from contextuality.geometry.linear_cka import CrossProducts
from contextuality.geometry.neighbours import Neighbours, SearchedNeighbours
from contextuality.geometry.resampling import ResampledAlignment, sentence_weights
from contextuality.geometry.resume import ResampleDone, ResumeStore, kept_grids, opened
from contextuality.geometry.row_products import layer_products, shuffled_products


def pair_grids(
    layers: SampledLayers,
    rows: np.ndarray,
    searched: SearchedNeighbours | None,
    weights: np.ndarray | None = None,
    resample: bool = False,
    diagonal: bool = False,
    products: CrossProducts | None = None,
) -> dict[str, np.ndarray]:
    """Every alignment measure between every two layers (a < b; a ≤ b with `diagonal`)
    of `layers` on the sampled `rows`, each row counted `weights` times (None: once), as
    (L × L) grids filled on those pairs (NaN elsewhere), from the layers' `products` (None:
    those of the rows, a `resample` (a draw) multiplied in float32, as
    `alignment.measure_grids`). Measures of neighbours on `searched` (NaN where there are
    none)."""
    if products is None:
        precision = np.float32 if resample else np.float64
        products = layer_products(layers, None, rows, None, weights, precision)
    count = len(layers.vectors)
    pairs = np.triu(np.ones((count, count), dtype=bool), 0 if diagonal else 1)
    grids = {}
    for record in ALIGNMENT_MEASURES:
        grid = np.full((count, count), np.nan)
        if record.of_products is not None:
            grid[pairs] = record.of_products(products)[pairs]
        elif searched is not None:
            for a, b in zip(*np.nonzero(pairs), strict=True):
                grid[a, b] = record.of_neighbours(searched.left[a], searched.left[b], weights)
        grids[record.name] = grid
    return grids


def _orders(count: int, rows: int, random: np.random.Generator) -> list[np.ndarray]:
    """A null's orders of `rows` rows for `count` layers: the first as it is, each other
    in an order drawn for it alone."""
    return [np.arange(rows), *(random.permutation(rows) for _ in range(count - 1))]


def _null_grids(
    layers: SampledLayers,
    rows: np.ndarray,
    searched: SearchedNeighbours | None,
    orders: list[np.ndarray],
    unshuffled: Callable[[], CrossProducts],
) -> dict[str, np.ndarray]:
    """`pair_grids` of a null: every layer's rows in its order (`_orders`), their
    products from the rows' own (`unshuffled`, called here only, so that a null read from
    a store needs none: `row_products.shuffled_products`) and their neighbours re-paired
    to match (`Neighbours.paired`)."""
    products = shuffled_products(layers, rows, orders, unshuffled())
    paired = None
    if searched is not None:
        rest = zip(searched.left[1:], orders[1:], strict=True)
        neighbours = [searched.left[0], *(_permuted(found, order) for found, order in rest)]
        paired = SearchedNeighbours(neighbours, neighbours)
    return pair_grids(layers, rows, paired, resample=True, products=products)


def _permuted(found: Neighbours, order: np.ndarray) -> Neighbours:
    """`found.paired(order)` with `found`'s own HSIC (CKNNA's scale), which a permutation
    of the rows leaves as it is, so that a null does not compute it again."""
    moved = found.paired(order)
    moved.__dict__["own_hsic"] = found.own_hsic  # `Neighbours.own_hsic`, a cached_property
    return moved


def _symmetric(grid: np.ndarray, diagonal: np.ndarray | float) -> np.ndarray:
    """A grid filled above its diagonal (any leading axes: resamples), mirrored below it,
    `diagonal` on it."""
    count = grid.shape[-1]
    full = grid.copy()
    below = np.tril_indices(count, -1)
    full[..., below[0], below[1]] = grid[..., below[1], below[0]]
    full[..., np.arange(count), np.arange(count)] = diagonal
    return full


def unordered_alignment(
    layers: SampledLayers,
    rows: np.ndarray,
    sentences: np.ndarray,
    alignment: AlignmentSettings,
    randoms: tuple[np.random.Generator, np.random.Generator],
    seed: int,
    progress: ResampleDone | None = None,
    store: ResumeStore | None = None,
) -> ResampledAlignment:
    """`ResampledAlignment` of one model's layers on the sampled `rows` (positions in the
    sample; `sentences` each sampled row's sentence), each measure on every unordered
    pair once and mirrored, the diagonal its best (module docstring): the values,
    ``alignment.permutations`` nulls (from the first generator) and
    ``alignment.bootstrap`` draws over sentences (from the second), `progress` called
    after each (`ResampleDone`); each kept in `store` as it is found, read from it where
    it is kept."""
    searched = search_neighbours(layers, None, rows, alignment, seed, store)
    unshuffled = functools.cache(lambda: layer_products(layers, None, rows))

    def values_grids() -> dict[str, np.ndarray]:
        return pair_grids(layers, rows, searched, diagonal=True, products=unshuffled())

    values = kept_grids(store, "values", values_grids)
    # A layer with itself: the measure's best where it is defined for the layer.
    diagonal = {
        record.name: np.where(np.isfinite(np.diag(values[record.name])), record.perfect, np.nan)
        for record in ALIGNMENT_MEASURES
    }
    count = len(layers.vectors)
    nulls, draws = [], []
    for index in range(alignment.permutations):
        orders = _orders(count, len(rows), randoms[0])
        null = functools.partial(_null_grids, layers, rows, searched, orders, unshuffled)
        nulls.append(kept_grids(store, f"null-{index}", null, progress))
    weights = sentence_weights(sentences[rows], alignment.bootstrap, randoms[1])
    for index, counts in enumerate(weights):
        draw = functools.partial(pair_grids, layers, rows, searched, counts, resample=True)
        draws.append(kept_grids(store, f"draw-{index}", draw, progress))

    def stacked(grids: list[dict[str, np.ndarray]], name: str) -> np.ndarray:
        return np.stack([grid[name] for grid in grids]) if grids else np.empty((0, count, count))

    return ResampledAlignment(
        {name: _symmetric(grid, diagonal[name]) for name, grid in values.items()},
        {name: _symmetric(stacked(nulls, name), np.nan) for name in values},
        {name: _symmetric(stacked(draws, name), diagonal[name]) for name in values},
        alignment.k,
        len(rows),
        None if searched is None else searched.recall(),
    )


def layer_pair_alignment(
    name: str,
    layers: SampledLayers,
    sample: SampleRows,
    seed: int,
    confidence: float,
    alignment: AlignmentSettings,
    transform: str = "none",
    occurrences: tuple[str, ...] = ALIGNMENT_OCCURRENCES,
    progress: ResampleDone | None = None,
    resume_in: str | Path | None = None,
) -> pd.DataFrame:
    """Every alignment measure, its interval and its permutation null between every two
    layers of one model (rows of `alignment.ALIGNMENT_COLUMNS`, both orders of a pair and
    the diagonal listed: module docstring), on the rows with a vector in every layer:
    every one, and those past each sentence's first word (those of
    `ALIGNMENT_OCCURRENCES` named in `occurrences`, a set left out drawing and passing
    over its draws); `progress` called after each null and draw; `resume_in` as
    `alignment.alignment_between` takes it."""
    parts = ["unordered pairs", name, layers.vectors, sample, seed, alignment, transform]
    store = opened(resume_in, name, parts)
    kept = rows_in_every_layer(layers)
    subsets = {"all": kept, "position>0": kept[sample.later[kept]]}
    unknown = sorted(set(occurrences) - set(subsets))
    if unknown:
        raise ValueError(f"no occurrences called {', '.join(unknown)}: {list(subsets)}")
    randoms = (generator(seed, "alignment_null"), generator(seed, "alignment_bootstrap"))
    numbers = list(layers.vectors)
    last = max(ALIGNMENT_OCCURRENCES.index(subset) for subset in occurrences)
    frames = []
    for subset in ALIGNMENT_OCCURRENCES[: last + 1]:
        rows = subsets[subset]
        if subset not in occurrences:
            for _ in range(alignment.permutations * (len(numbers) - 1)):
                randoms[0].permutation(len(rows))
            for _ in sentence_weights(sample.sentences[rows], alignment.bootstrap, randoms[1]):
                pass
            continue
        if len(rows) <= alignment.k:
            warn(
                [
                    f"{name} ({subset} occurrences): geometry.alignment.k = {alignment.k} is "
                    f"not below the {len(rows)} rows with a vector, so their mutual k-NN and "
                    "CKNNA are NaN; set it lower"
                ]
            )
        scoped = None if store is None else store.scoped(subset)
        found = unordered_alignment(
            layers, rows, sample.sentences, alignment, randoms, seed, progress, scoped
        )
        frames.append(
            alignment_frame(
                found,
                (name, name),
                (numbers, numbers),
                subset,
                sample.sampled,
                confidence,
                transform,
            )
        )
    return pd.concat(frames, ignore_index=True)
