"""Chunked passes over the row arrays of one layer: masks, norms, runs and group sums.

A layer is an (N, d) array of occurrence vectors (rows), often float16 as stored and as
large as memory allows. Every pass here reads it a slice of rows at a time (`row_chunks`)
and converts only that slice to float64, so no pass holds a second copy of the layer.
Groups of rows (a word's occurrences, a sentence's words) are contiguous runs described
by ``starts``: the first row of each group, increasing, a group ending where the next
begins.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

_CHUNK_BYTES = 4 * 2**20  # float64 temporaries per chunk of rows


def row_chunks(n_rows: int, dim: int) -> Iterator[slice]:
    """Consecutive slices of at most 4 MiB of float64 rows of width `dim` covering
    0..n_rows: the unit of work of every pass over a layer, so that no pass holds more than
    the layer itself plus one chunk. Chunks this small are reused by the allocator from one
    to the next; chunks of 32 MiB were mapped afresh each time, with twice the page faults
    and 0.3 s more for a MiniLM layer's 2.3 s of measures (bench/results/default-run-cpu2.md)."""
    step = max(1, _CHUNK_BYTES // (8 * max(1, dim)))
    for begin in range(0, n_rows, step):
        yield slice(begin, min(begin + step, n_rows))


class SelectedRows:
    """Rows `rows` of `vectors`, read only when indexed (by a slice or an index array): a
    layer's valid occurrences as kNN points, say, without a second copy of the layer."""

    def __init__(self, vectors: np.ndarray, rows: np.ndarray) -> None:
        self.vectors, self.rows = vectors, rows
        self.shape = (len(rows), vectors.shape[1])

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, index: slice | np.ndarray) -> np.ndarray:
        return self.vectors[self.rows[index]]


def rows_with_vectors(vectors: np.ndarray) -> np.ndarray:
    """Bool mask (n,) of the occurrences that count: rows finite and not all zero (a NaN
    row is an occurrence the model gave no vector, or one a correction was fitted on)."""
    mask = np.empty(len(vectors), dtype=bool)
    for chunk in row_chunks(len(vectors), vectors.shape[1]):
        rows = vectors[chunk]
        mask[chunk] = np.isfinite(rows).all(axis=1) & np.any(rows != 0, axis=1)
    return mask


def row_norms(vectors: np.ndarray, order: np.ndarray | None = None) -> np.ndarray:
    """Float64 L2 norm of each row of ``vectors[order]`` (``vectors`` without `order`),
    read a chunk at a time."""
    n_rows = len(vectors) if order is None else len(order)
    norms = np.empty(n_rows)
    for chunk in row_chunks(n_rows, vectors.shape[1]):
        block = np.asarray(vectors[chunk if order is None else order[chunk]], np.float64)
        norms[chunk] = np.sqrt(np.einsum("ij,ij->i", block, block))
    return norms


def keep_rows(vectors: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """``vectors[keep]`` for a bool mask, computed in place: kept rows move up chunk by
    chunk (each lands at or before where it was), and the first ``keep.sum()`` rows are
    returned as a view. No second copy of the layer is made; `vectors` is overwritten."""
    kept = np.flatnonzero(keep)
    if len(kept) == len(vectors):
        return vectors
    for chunk in row_chunks(len(kept), vectors.shape[1]):
        vectors[chunk] = vectors[kept[chunk]]
    return vectors[: len(kept)]


def unit_rows(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to unit L2 norm, as float32. Zero or non-finite rows are an error."""
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    if not np.all(np.isfinite(norms)) or np.any(norms == 0):
        raise ValueError("unit_rows: every row must be finite and non-zero")
    return vectors / norms


def group_sizes(starts: np.ndarray, n_rows: int) -> np.ndarray:
    """Length of each contiguous group given its start rows."""
    return np.diff(np.append(np.asarray(starts, dtype=np.int64), n_rows))


def run_starts(*keys: np.ndarray) -> np.ndarray:
    """Start positions of the runs over which every key array stays constant."""
    if len(keys[0]) == 0:
        return np.zeros(0, dtype=np.int64)
    changes = np.zeros(len(keys[0]), dtype=bool)
    changes[0] = True
    for key in keys:
        changes[1:] |= key[1:] != key[:-1]
    return np.flatnonzero(changes)


def complete_group_sums(
    rows: np.ndarray,
    starts: np.ndarray,
    *,
    order: np.ndarray | None = None,
    unit: bool = False,
    with_unit: bool = False,
) -> Iterator[tuple[slice, np.ndarray]]:
    """Float64 sums of contiguous groups of rows, yielded as (groups, sums (len, d)) once
    each group is complete, in order: never more than one chunk's groups at a time, so
    per-group reductions (a norm, a dot product) need no (n_groups, d) array.

    Row i of the sequence summed is ``rows[order[i]]`` (``rows[i]`` without `order`),
    scaled to unit length with `unit` (a zero or non-finite row is then a ValueError). With
    `with_unit` (not `unit`) the sums are (len, 2d): the rows' sums, then their unit-length
    rows' sums, from one read of each row (and the same check). Read chunk by chunk
    (`row_chunks`) in float64, each chunk's groups summed as a sparse group-indicator matrix
    times the chunk (several times faster than ``np.add.reduceat``); the group still open at
    a chunk's end is carried into the next.
    """
    from scipy import sparse

    starts = np.asarray(starts, dtype=np.int64)
    n_rows = len(rows) if order is None else len(order)
    if len(starts) == 0:
        return
    open_group, open_sum = -1, None
    for chunk in row_chunks(n_rows - starts[0], rows.shape[1]):
        positions = np.arange(chunk.start, chunk.stop) + starts[0]
        chosen = positions if order is None else order[positions]
        block = np.asarray(rows[chosen], np.float64)
        if unit or with_unit:
            norms = np.sqrt(squared_norms(block))[:, None]  # 4× faster than linalg.norm
            if not np.all(np.isfinite(norms)) or np.any(norms == 0):
                raise ValueError("rows scaled to unit length must be finite and non-zero")
            if with_unit:
                block = np.hstack([block, block / norms])
            else:
                block /= norms
        group = np.searchsorted(starts, positions, side="right") - 1
        first = int(group[0])
        indicator = sparse.csr_matrix(
            (np.ones(len(positions)), (group - first, np.arange(len(positions)))),
            shape=(group[-1] - first + 1, len(positions)),
        )
        partial = np.asarray(indicator @ block)
        if first == open_group:
            partial[0] += open_sum
        elif open_group >= 0:
            yield slice(open_group, open_group + 1), open_sum[None]
        if len(partial) > 1:
            yield slice(first, first + len(partial) - 1), partial[:-1]
        open_group, open_sum = first + len(partial) - 1, partial[-1]
    yield slice(open_group, open_group + 1), open_sum[None]


def group_sums(rows: np.ndarray, starts: np.ndarray, **options: Any) -> np.ndarray:
    """Float64 sum of the rows of each contiguous group, shape (n_groups, d) ((n_groups, 2d)
    `with_unit`): for groups far fewer than rows (words, not contexts). Options as
    `complete_group_sums`."""
    sums = np.zeros((len(starts), rows.shape[1] * (2 if options.get("with_unit") else 1)))
    for groups, partial in complete_group_sums(rows, starts, **options):
        sums[groups] = partial
    return sums


def squared_norms(rows: np.ndarray) -> np.ndarray:
    return np.einsum("ij,ij->i", rows, rows, dtype=np.float64)


def groups_by_size(
    vectors: np.ndarray,
    starts: np.ndarray,
    order: np.ndarray | None = None,
    dtype: type = np.float64,
) -> Iterator[tuple[np.ndarray, np.ndarray | None]]:
    """Yield (group indices, stacked rows) for the contiguous groups of rows, by size.

    Row i of the sequence grouped is ``vectors[order[i]]`` (``vectors[i]`` without `order`).
    Groups of one size n ≤ d that occur more than once come stacked as (k, n, d) arrays
    of `dtype` (float64 by default) of at most one `row_chunks` chunk each, so a per-group
    eigenproblem can be solved for all of them in one batched call on their n×n Gram
    matrices (far faster for the many words with few occurrences). Other groups come with
    None: solve those one at a time (larger ones on the d×d scatter).
    """
    starts = np.asarray(starts, dtype=np.int64)
    sizes = group_sizes(starts, len(vectors) if order is None else len(order))
    dim = vectors.shape[1]
    for size in np.unique(sizes):
        chosen = np.flatnonzero(sizes == size)
        if size > dim or len(chosen) == 1:
            yield chosen, None
            continue
        for batch in row_chunks(len(chosen) * size, dim):
            part = chosen[batch.start // size : batch.stop // size]
            if len(part) == 0:
                continue
            rows = starts[part][:, None] + np.arange(size)
            yield part, np.asarray(vectors[rows if order is None else order[rows]], dtype)
