"""Linear CKA between every layer of one model, or of two models, on the same sampled
occurrences: the sampled rows (`sample_rows`, `SampledLayers`), the rows with a vector in
every layer, and the cross-products (`linear_cka.CrossProducts`) of every occurrence and of
those past each sentence's first word, from one pass over chunks of rows. Each value comes
with its debiased form and a permutation null: both on the same layers with the right
side's rows paired at random with the left's (seeded), what CKA gives for no relation
(one more pass over the rows for each set of occurrences)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from contextuality.geometry.linear_cka import CrossProducts
from contextuality.measures.rows import rows_with_vectors
from contextuality.random_streams import generator

# Rows multiplied at a time for CKA: (rows × every layer's width) float32, a few MiB.
CKA_CHUNK_ROWS = 1024
CKA_COLUMNS = [
    "model_a",
    "layer_a",
    "model_b",
    "layer_b",
    "occurrences",
    "cka",
    "cka_debiased",
    "null_cka",
    "null_cka_debiased",
    "n_rows",
    "sampled",
]
# Which occurrences CKA is computed on: every one, and those past each sentence's first word
# (a decoder's first-token vectors, of huge norm, otherwise dominate linear CKA).
CKA_OCCURRENCES = ("all", "position>0")


@dataclass
class SampledLayers:
    """The sampled rows of every layer of a model (float16 as stored), and what the shards
    record."""

    vectors: dict[int, np.ndarray]
    attributes: dict[int, dict[str, Any]]


# Occurrences the geometry steps read by default (config ``geometry.sample_size``).
GEOMETRY_SAMPLE_SIZE = 10_000


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
) -> Iterator[tuple[list[np.ndarray], list[np.ndarray] | None, np.ndarray]]:
    """The kept rows of every layer of `left` (and `right`, row ``pairing[r]`` beside row r
    of `left` where a pairing is given), a chunk of rows at a time, with the chunk's rows."""
    for start in range(0, len(kept), CKA_CHUNK_ROWS):
        rows = kept[start : start + CKA_CHUNK_ROWS]
        right_rows = rows if pairing is None else pairing[rows]
        yield (
            [vectors[rows] for vectors in left.vectors.values()],
            None if right is None else [vectors[right_rows] for vectors in right.vectors.values()],
            rows,
        )


def random_pairing(rows: np.ndarray, n_rows: int, random: np.random.Generator) -> np.ndarray:
    """A permutation of the `n_rows` sampled rows that pairs each of `rows` with one of
    them drawn at random (the others with themselves)."""
    pairing = np.arange(n_rows)
    pairing[rows] = random.permutation(rows)
    return pairing


def split_products(
    left: SampledLayers,
    right: SampledLayers | None,
    kept: np.ndarray,
    later: np.ndarray,
    pairing: np.ndarray | None = None,
) -> tuple[CrossProducts, CrossProducts]:
    """The cross-products of the kept rows past their sentence's first word (`later`, a
    mask of the sampled rows) and of the kept first words, from one pass, both shifted by
    the kept rows' mean so that they add up to those of every kept row; `pairing` as
    `row_chunks_of_layers` takes it."""
    sides = [left] if right is None else [left, right]
    shift = tuple(
        np.concatenate(
            [vectors[kept].mean(axis=0, dtype=np.float64) for vectors in side.vectors.values()]
        )
        for side in sides
    )
    widths = [[vectors.shape[1] for vectors in side.vectors.values()] for side in sides]
    past = CrossProducts(widths[0], None if right is None else widths[1], shift)
    first = past.sibling()
    for left_chunk, right_chunk, rows in row_chunks_of_layers(left, right, kept, pairing):
        for products, chosen in ((past, later[rows]), (first, ~later[rows])):
            products.add(
                [part[chosen] for part in left_chunk],
                None if right_chunk is None else [part[chosen] for part in right_chunk],
            )
    return past, first


def cka_frame(
    products: CrossProducts,
    null: CrossProducts,
    names: tuple[str, str],
    layers: tuple[list[int], list[int]],
    occurrences: str,
    sampled: bool,
) -> pd.DataFrame:
    """CKA and debiased CKA of `products`, and both of the randomly paired `null`, between
    every pair of layers, as rows of `CKA_COLUMNS`."""
    left, right = np.meshgrid(layers[0], layers[1], indexing="ij")
    return pd.DataFrame(
        {
            "model_a": names[0],
            "layer_a": left.ravel(),
            "model_b": names[1],
            "layer_b": right.ravel(),
            "occurrences": occurrences,
            "cka": products.cka().ravel(),
            "cka_debiased": products.debiased_cka().ravel(),
            "null_cka": null.cka().ravel(),
            "null_cka_debiased": null.debiased_cka().ravel(),
            "n_rows": products.n_rows,
            "sampled": sampled,
        },
        columns=CKA_COLUMNS,
    )


def cka_between(
    left: tuple[str, SampledLayers],
    right: tuple[str, SampledLayers] | None,
    later: np.ndarray,
    sampled: bool,
    seed: int,
) -> pd.DataFrame:
    """CKA, debiased CKA and their permutation nulls between every layer of `left` and
    every layer of `right` (of `left` itself when None), on the rows with a vector in all
    of them: every one, and (`later`, a mask of the sampled rows) those past each
    sentence's first word (`CKA_OCCURRENCES`). The null pairs each row with one drawn at
    random from the same rows (`random_pairing`, stream ``cka_null``), so it keeps nothing
    of the rows' order."""
    other = None if right is None else right[1]
    paired = other or left[1]  # the right side's layers, shuffled against the left for the null
    kept = rows_in_every_layer(left[1], *([] if other is None else [other]))
    past, first = split_products(left[1], other, kept, later)
    random = generator(seed, "cka_null")
    kept_later = kept[later[kept]]
    null_parts = split_products(
        left[1], paired, kept, later, random_pairing(kept, len(later), random)
    )
    null_past, _ = split_products(
        left[1], paired, kept_later, later, random_pairing(kept_later, len(later), random)
    )
    names = (left[0], left[0] if right is None else right[0])
    layers = (list(left[1].vectors), list(paired.vectors))
    chosen = zip(
        CKA_OCCURRENCES,
        (past.plus(first), past),
        (null_parts[0].plus(null_parts[1]), null_past),
        strict=True,
    )
    frames = [
        cka_frame(products, null, names, layers, occurrences, sampled)
        for occurrences, products, null in chosen
    ]
    return pd.concat(frames, ignore_index=True)
