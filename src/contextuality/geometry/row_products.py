"""The cross-products of the sampled rows of a model's layers, a chunk of rows at a time,
each set of rows shifted by its own mean: for the values, a null and a bootstrap draw.

What linear CKA, its debiased form and the Procrustes distance of the alignment are
computed from (`linear_cka`); the layers are an `alignment.Any` (its `vectors`),
the right side's rows paired otherwise for a permutation null, weighted for a draw."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
from scipy import sparse

from contextuality.geometry.linear_cka import CrossProducts

# Rows multiplied at a time for CKA: (rows × every layer's width) float64, a few MiB.
CKA_CHUNK_ROWS = 1024


def row_chunks_of_layers(
    left: Any,
    right: Any,
    rows: np.ndarray,
    pairing: np.ndarray | None = None,
) -> Iterator[tuple[np.ndarray, list[np.ndarray], list[np.ndarray] | None]]:
    """The positions in `rows` of a chunk, then those rows of every layer of `left` (and
    `right`, its row ``rows[pairing[i]]`` beside the left's ``rows[i]`` where a pairing
    is given), a chunk of rows at a time."""
    for start in range(0, len(rows), CKA_CHUNK_ROWS):
        positions = np.arange(start, min(start + CKA_CHUNK_ROWS, len(rows)))
        left_rows = rows[positions]
        right_rows = left_rows if pairing is None else rows[pairing[positions]]
        yield (
            positions,
            [vectors[left_rows] for vectors in left.vectors.values()],
            None if right is None else [vectors[right_rows] for vectors in right.vectors.values()],
        )


def layer_products(
    left: Any,
    right: Any,
    rows: np.ndarray,
    pairing: np.ndarray | None = None,
    weights: np.ndarray | None = None,
    precision: type[np.floating] = np.float64,
    unpaired: CrossProducts | None = None,
) -> CrossProducts:
    """The cross-products of the sampled `rows` of every layer of `left` and `right` (of
    `left` itself when None; `pairing` as `row_chunks_of_layers` takes it), each row
    counted `weights` times (a bootstrap draw; None: once), shifted by the mean of those
    rows themselves, so that their products keep their precision however far a massive
    activation on other rows (a decoder's first token) puts the mean of every row;
    multiplied in `precision` (`CrossProducts`). With a `pairing`, `unpaired` (the rows'
    products as they are) gives what the pairing keeps, and only the products between
    the two sides are multiplied (`CrossProducts.repaired`)."""
    if pairing is not None and unpaired is not None:
        products = unpaired.repaired(precision)
    else:
        if weights is not None:
            counted = weights > 0
            rows, weights = rows[counted], weights[counted]
        sides = [left] if right is None else [left, right]
        shift = tuple(
            np.concatenate([_mean(vectors, rows) for vectors in side.vectors.values()])
            for side in sides
        )
        widths = [[vectors.shape[1] for vectors in side.vectors.values()] for side in sides]
        right_widths = None if right is None else widths[1]
        products = CrossProducts(widths[0], right_widths, shift, precision)
    for positions, left_chunk, right_chunk in row_chunks_of_layers(left, right, rows, pairing):
        products.add(left_chunk, right_chunk, None if weights is None else weights[positions])
    return products


def shuffled_products(
    layers: Any, rows: np.ndarray, orders: list[np.ndarray], unshuffled: CrossProducts
) -> CrossProducts:
    """The cross-products of one model's layers with each layer's sampled `rows` in an
    order of its own (`orders`: positions in `rows`, one array per layer; an unordered
    permutation null), gathered a chunk of rows at a time (no shuffled copy of a layer):
    each layer's products with itself from `unshuffled` (the rows' products as they are),
    those between layers multiplied in float32 (`CrossProducts.shuffled`)."""
    products = unshuffled.shuffled(np.float32)
    for start in range(0, len(rows), CKA_CHUNK_ROWS):
        chunk = slice(start, start + CKA_CHUNK_ROWS)
        layer_orders = zip(layers.vectors.values(), orders, strict=True)
        products.add([vectors[rows[order[chunk]]] for vectors, order in layer_orders])
    return products


def _mean(vectors, rows: np.ndarray) -> np.ndarray:
    """The float64 mean of `rows` of `vectors`, a chunk of rows at a time (no copy of
    them all); zero for a sparse layer, which is not shifted."""
    if sparse.issparse(vectors):
        return np.zeros(vectors.shape[1])
    chunk = 16 * CKA_CHUNK_ROWS
    total = np.zeros(vectors.shape[1])
    for start in range(0, len(rows), chunk):
        total += vectors[rows[start : start + chunk]].sum(axis=0, dtype=np.float64)
    return total / len(rows)


def taken(vectors, rows: np.ndarray):
    """`rows` of `vectors`: the array itself where they are all of its rows in order (no
    copy of a million rows), else a copy of them."""
    if len(rows) == vectors.shape[0] and np.array_equal(rows, np.arange(len(rows))):
        return vectors
    return vectors[rows]
