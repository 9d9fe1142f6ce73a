"""Alignment between every layer of one model, or of two models, on the same sampled
occurrences: the sampled rows (`sample_rows`, `SampledLayers`) and the rows with a vector in
every layer; linear CKA, its debiased form and the angular Procrustes distance from the
cross-products (`linear_cka.CrossProducts`) of every occurrence and of those past each
sentence's first word, each set of rows shifted by its own mean (`layer_products`); mutual
k-NN and CKNNA from each layer's nearest neighbours (`neighbours`). Every value comes with
a permutation null: the same measure with the right side's rows paired at random with the
left's (seeded), what it gives for no relation. Then each layer's best-matching layer of
another model (`best_matching_layers`)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from contextuality.backends.base import resolved_device
from contextuality.errors import check_integer, warn
from contextuality.geometry.alignment_catalogue import ALIGNMENT_MEASURES
from contextuality.geometry.linear_cka import CrossProducts
from contextuality.geometry.neighbours import cosine_neighbours
from contextuality.random_streams import generator
from contextuality.rows import rows_with_vectors
from contextuality.schema import default

# Rows multiplied at a time for CKA: (rows × every layer's width) float64, a few MiB.
CKA_CHUNK_ROWS = 1024
# The alignment table: the two layers and their rows, then each alignment measure of the
# catalogue (`alignment_catalogue`) and its null, then the rows it rests on.
ALIGNMENT_COLUMNS = [
    "model_a",
    "layer_a",
    "model_b",
    "layer_b",
    "transform",
    "occurrences",
    *(record.name for record in ALIGNMENT_MEASURES),
    *(f"null_{record.name}" for record in ALIGNMENT_MEASURES),
    "k",
    "n_rows",
    "sampled",
]


@dataclass(frozen=True)
class AlignmentSettings:
    """Mutual k-NN's and CKNNA's neighbours per row (platonic-rep's default) and where they
    are searched: ``auto`` (a GPU when torch sees one), ``cpu``, ``cuda`` or ``cuda:N``
    (config ``geometry.alignment``)."""

    k: int = default("geometry", "alignment", "k")
    device: str = default("geometry", "alignment", "device")

    def __post_init__(self) -> None:
        check_integer("geometry.alignment", "k", self.k, 1)

    def search_device(self) -> str:
        """The device the neighbours are searched on, ``auto`` resolved."""
        return resolved_device(self.device, "geometry.alignment.device")


# Which occurrences CKA is computed on: every one, and those past each sentence's first word
# (a decoder's first-token vectors, of huge norm, otherwise dominate linear CKA).
ALIGNMENT_OCCURRENCES = ("all", "position>0")


@dataclass
class SampledLayers:
    """The sampled rows of every layer of a model (float16 as stored, float32 under a
    correction), what the shards record, and under a correction each layer's fit."""

    vectors: dict[int, np.ndarray]
    attributes: dict[int, dict[str, Any]]
    fits: dict[int, dict[str, Any]] = field(default_factory=dict)


# Occurrences the geometry steps read by default (config ``geometry.sample_size``).
GEOMETRY_SAMPLE_SIZE = default("geometry", "sample_size")


def sample_rows(n_rows: int, sample_size: int | None, seed: int) -> np.ndarray:
    """The increasing rows every geometry step reads: `sample_size` of the `n_rows`
    occurrences drawn without replacement (stream ``geometry_sample``), or all of them."""
    if sample_size is None or sample_size >= n_rows:
        return np.arange(n_rows)
    return np.sort(generator(seed, "geometry_sample").choice(n_rows, sample_size, replace=False))


def rows_in_every_layer(*models: SampledLayers) -> np.ndarray:
    """Positions (in the sample) of the rows with a vector in every layer of `models`."""
    keep = None
    for sampled in models:
        for vectors in sampled.vectors.values():
            valid = rows_with_vectors(vectors)
            keep = valid if keep is None else keep & valid
    return np.flatnonzero(keep)


def row_chunks_of_layers(
    left: SampledLayers,
    right: SampledLayers | None,
    kept: np.ndarray,
    pairing: np.ndarray | None = None,
) -> Iterator[tuple[list[np.ndarray], list[np.ndarray] | None]]:
    """The kept rows of every layer of `left` (and `right`, row ``pairing[r]`` beside row r
    of `left` where a pairing is given), a chunk of rows at a time."""
    for start in range(0, len(kept), CKA_CHUNK_ROWS):
        rows = kept[start : start + CKA_CHUNK_ROWS]
        right_rows = rows if pairing is None else pairing[rows]
        yield (
            [vectors[rows] for vectors in left.vectors.values()],
            None if right is None else [vectors[right_rows] for vectors in right.vectors.values()],
        )


def random_pairing(rows: np.ndarray, n_rows: int, random: np.random.Generator) -> np.ndarray:
    """A permutation of the `n_rows` sampled rows that pairs each of `rows` with one of
    them drawn at random (the others with themselves)."""
    pairing = np.arange(n_rows)
    pairing[rows] = random.permutation(rows)
    return pairing


def layer_products(
    left: SampledLayers,
    right: SampledLayers | None,
    rows: np.ndarray,
    pairing: np.ndarray | None = None,
) -> CrossProducts:
    """The cross-products of the sampled `rows` of every layer of `left` and `right` (of
    `left` itself when None; `pairing` as `row_chunks_of_layers` takes it), shifted by the
    mean of those rows themselves, so that their products keep their precision however far
    a massive activation on other rows (a decoder's first token) puts the mean of every
    row."""
    sides = [left] if right is None else [left, right]
    shift = tuple(
        np.concatenate(
            [vectors[rows].mean(axis=0, dtype=np.float64) for vectors in side.vectors.values()]
        )
        for side in sides
    )
    widths = [[vectors.shape[1] for vectors in side.vectors.values()] for side in sides]
    products = CrossProducts(widths[0], None if right is None else widths[1], shift)
    for left_chunk, right_chunk in row_chunks_of_layers(left, right, rows, pairing):
        products.add(left_chunk, right_chunk)
    return products


@dataclass(frozen=True)
class NeighbourAlignment:
    """Each alignment measure computed from neighbours (`AlignmentMeasure.of_neighbours`)
    between every left layer (rows) and every right layer (columns): `values` by name, and
    `nulls`, the same with the right side's rows paired at random; `k` the neighbours each
    row has (NaN throughout where the rows are too few for k)."""

    values: dict[str, np.ndarray]
    nulls: dict[str, np.ndarray]
    k: int


# The alignment measures computed from each layer's nearest neighbours.
NEIGHBOUR_MEASURES = tuple(record for record in ALIGNMENT_MEASURES if record.of_neighbours)


def neighbour_alignment(
    left: SampledLayers,
    right: SampledLayers | None,
    rows: np.ndarray,
    k: int,
    random: np.random.Generator,
    device: str = "cpu",
) -> NeighbourAlignment:
    """`NeighbourAlignment` of the sampled `rows` (positions in the sample) of every layer
    of `left` and `right` (of `left` itself when None), each layer's neighbours searched
    once (`neighbours.cosine_neighbours`); the null pairs the rows by one permutation drawn
    from `random`, so it needs no second search (`Neighbours.paired`)."""
    shape = (len(left.vectors), len(left.vectors if right is None else right.vectors))
    if len(rows) <= k:
        nothing = {record.name: np.full(shape, np.nan) for record in NEIGHBOUR_MEASURES}
        return NeighbourAlignment(nothing, nothing, k)
    found = [cosine_neighbours(vectors[rows], k, device) for vectors in left.vectors.values()]
    others = (
        found
        if right is None
        else [cosine_neighbours(vectors[rows], k, device) for vectors in right.vectors.values()]
    )
    pairing = random.permutation(len(rows))
    shuffled = [other.paired(pairing) for other in others]

    def grids(right_side) -> dict[str, np.ndarray]:
        return {
            record.name: np.array(
                [[record.of_neighbours(one, two) for two in right_side] for one in found]
            )
            for record in NEIGHBOUR_MEASURES
        }

    return NeighbourAlignment(grids(others), grids(shuffled), k)


def alignment_frame(
    products: CrossProducts,
    null: CrossProducts,
    neighbours: NeighbourAlignment,
    names: tuple[str, str],
    layers: tuple[list[int], list[int]],
    occurrences: str,
    sampled: bool,
    transform: str = "none",
) -> pd.DataFrame:
    """Every alignment measure of the catalogue, from `products` or `neighbours`, and its
    null (of the randomly paired `null`), between every pair of layers of vectors under
    `transform`, as rows of `ALIGNMENT_COLUMNS`."""
    left, right = np.meshgrid(layers[0], layers[1], indexing="ij")
    values, nulls = {}, {}
    for record in ALIGNMENT_MEASURES:
        if record.of_products is not None:
            values[record.name] = record.of_products(products)
            nulls[record.name] = record.of_products(null)
        else:
            values[record.name] = neighbours.values[record.name]
            nulls[record.name] = neighbours.nulls[record.name]
    return pd.DataFrame(
        {
            "model_a": names[0],
            "layer_a": left.ravel(),
            "model_b": names[1],
            "layer_b": right.ravel(),
            "transform": transform,
            "occurrences": occurrences,
            **{name: grid.ravel() for name, grid in values.items()},
            **{f"null_{name}": grid.ravel() for name, grid in nulls.items()},
            "k": neighbours.k,
            "n_rows": products.n_rows,
            "sampled": sampled,
        },
        columns=ALIGNMENT_COLUMNS,
    )


def alignment_between(
    left: tuple[str, SampledLayers],
    right: tuple[str, SampledLayers] | None,
    later: np.ndarray,
    sampled: bool,
    seed: int,
    alignment: AlignmentSettings = AlignmentSettings(),
    transform: str = "none",
) -> pd.DataFrame:
    """Every alignment measure and its permutation null between every layer of `left` and
    every layer of `right` (of `left` itself when None), on the rows with a vector in all
    of them: every one, and (`later`, a mask of the sampled rows) those past each
    sentence's first word (`ALIGNMENT_OCCURRENCES`); rows labelled with the `transform`
    their vectors are under. A null pairs each row with one drawn at random from the same
    rows (CKA and Procrustes: `random_pairing`, stream ``cka_null``; mutual k-NN and
    CKNNA: stream ``alignment_null``), so it keeps nothing of the rows' order."""
    other = None if right is None else right[1]
    paired = other or left[1]  # the right side's layers, shuffled against the left for the null
    kept = rows_in_every_layer(left[1], *([] if other is None else [other]))
    kept_later = kept[later[kept]]
    products = [layer_products(left[1], other, rows) for rows in (kept, kept_later)]
    random = generator(seed, "cka_null")
    nulls = [
        layer_products(left[1], paired, rows, random_pairing(rows, len(later), random))
        for rows in (kept, kept_later)
    ]
    neighbour_random = generator(seed, "alignment_null")
    device = alignment.search_device()
    neighbours = [
        neighbour_alignment(left[1], other, rows, alignment.k, neighbour_random, device)
        for rows in (kept, kept_later)
    ]
    names = (left[0], left[0] if right is None else right[0])
    for occurrences, rows in zip(ALIGNMENT_OCCURRENCES, (kept, kept_later), strict=True):
        if len(rows) <= alignment.k:
            warn(
                [
                    f"{' and '.join(dict.fromkeys(names))} ({occurrences} occurrences): "
                    f"geometry.alignment.k = {alignment.k} is not below the {len(rows)} rows "
                    "with a vector, so their mutual k-NN and CKNNA are NaN; set it lower"
                ]
            )
    layers = (list(left[1].vectors), list(paired.vectors))
    chosen = zip(ALIGNMENT_OCCURRENCES, products, nulls, neighbours, strict=True)
    frames = [
        alignment_frame(found, null, near, names, layers, occurrences, sampled, transform)
        for occurrences, found, null, near in chosen
    ]
    return pd.concat(frames, ignore_index=True)


BEST_LAYER_COLUMNS = [
    "model",
    "layer",
    "other_model",
    "transform",
    "occurrences",
    "measure",
    "best_layer",
    "value",
    "null",
    "margin",
    "best_null",
    "depth",
    "best_depth",
]


def _choice_against_others(
    values: np.ndarray, nulls: np.ndarray, distance: bool
) -> tuple[float, float]:
    """What a best match is worth among the candidates: its margin over the second best
    (≥ 0, NaN with one candidate) and the best of the candidates' nulls, the value that
    choosing the best among that many layers gives where nothing is related."""
    closer = -values if distance else values
    ranked = np.sort(closer[np.isfinite(closer)])[::-1]
    margin = float(ranked[0] - ranked[1]) if len(ranked) > 1 else float("nan")
    finite = nulls[np.isfinite(nulls)]
    if not len(finite):
        return margin, float("nan")
    return margin, float(finite.min() if distance else finite.max())


def best_matching_layers(table: pd.DataFrame) -> pd.DataFrame:
    """For every pair of different models in an alignment table (`ALIGNMENT_COLUMNS`), each
    layer of either model and its best-matching layer of the other by each measure of the
    catalogue (the most similar; the nearest by a distance), with the value, its null, its
    margin over the second best and the best of the nulls (`_choice_against_others`), and
    both layers' relative depths (layer / the model's deepest layer in the table), as rows
    of `BEST_LAYER_COLUMNS`."""
    deepest = (
        pd.concat(
            [
                table[[f"model_{side}", f"layer_{side}"]].set_axis(["model", "layer"], axis=1)
                for side in ("a", "b")
            ]
        )
        .groupby("model")["layer"]
        .max()
    )
    between = table[table["model_a"] != table["model_b"]]
    sides = (("a", "b"), ("b", "a"))
    rows = []
    for side, other in sides:
        keys = [f"model_{side}", f"layer_{side}", f"model_{other}", "transform", "occurrences"]
        for (model, layer, other_model, transform, occurrences), group in between.groupby(keys):
            for record in ALIGNMENT_MEASURES:
                measure = record.name
                values = group[measure].to_numpy(dtype=float)
                if np.isnan(values).all():
                    continue
                best = record.closest(values)
                margin, best_null = _choice_against_others(
                    values, group[f"null_{measure}"].to_numpy(dtype=float), record.distance
                )
                chosen = group.iloc[best]
                best_layer = int(chosen[f"layer_{other}"])
                rows.append(
                    {
                        "model": model,
                        "layer": int(layer),
                        "other_model": other_model,
                        "transform": transform,
                        "occurrences": occurrences,
                        "measure": measure,
                        "best_layer": best_layer,
                        "value": chosen[measure],
                        "null": chosen[f"null_{measure}"],
                        "margin": margin,
                        "best_null": best_null,
                        "depth": layer / max(deepest[model], 1),
                        "best_depth": best_layer / max(deepest[other_model], 1),
                    }
                )
    return pd.DataFrame(rows, columns=BEST_LAYER_COLUMNS)
