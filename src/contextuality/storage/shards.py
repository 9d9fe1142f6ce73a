"""HDF5 embedding shards: one file per (model, layer), rows aligned with occurrence ids.

Layout of a shard: dataset ``vectors`` of shape (n_occurrences, hidden_size), float16
(or float32 when a model's values overflow float16), row i = occurrence_id i. A row of NaN
marks an occurrence the model produced no vector for (all its subword tokens were cut
by truncation or dropped by the tokenizer). Attributes carry the provenance; ``complete``
is set last, and the file only gets its final name after that.
"""

from __future__ import annotations

import logging
import os
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from contextuality.errors import ShardMismatchError, StorageError
from contextuality.rows import row_chunks
from contextuality.storage.hdf5 import (
    LayerFiles,
    check_attributes,
    open_to_read,
    read_attributes,
)

DATASET = "vectors"
log = logging.getLogger(__name__)
_CHUNK_BYTES = 1 << 20


class ShardSetWriter:
    """Writes the shards of several layers of one model in a single pass: an extraction's
    sink (`extraction.run.Sink`).

    Refuses (StorageError) an extraction whose shards the disk cannot hold, before any file
    is made. Each shard is created under a temporary name (`hdf5.LayerFiles`); `commit`
    marks every shard complete and renames it into place, `abort` (or leaving the ``with``
    statement on an error) deletes them.
    """

    def __init__(
        self,
        paths: dict[int, str | os.PathLike],
        n_rows: int,
        dim: int,
        dtype: str,
        attributes: dict[str, Any],
    ) -> None:
        self.layers = list(paths)
        self.dtype = str(np.dtype(dtype))
        self.bytes_to_write = shard_bytes(n_rows, len(self.layers), dim, self.dtype)
        if self.layers:
            first = Path(paths[self.layers[0]]).parent
            check_free_space(first, self.bytes_to_write, attributes.get("model", "extraction"))
        self._files = LayerFiles(paths, attributes)
        self._datasets: dict[int, h5py.Dataset] = {}
        rows_per_chunk = max(1, min(n_rows, _CHUNK_BYTES // (dim * np.dtype(dtype).itemsize)))
        try:
            for layer, handle in self._files.files.items():
                self._datasets[layer] = handle.create_dataset(
                    DATASET,
                    shape=(n_rows, dim),
                    dtype=dtype,
                    chunks=(rows_per_chunk, dim) if n_rows else None,  # an empty part
                )
        except BaseException:
            self.abort()
            raise

    def write(self, first_row: int, vectors: np.ndarray) -> None:
        """Write rows ``first_row:first_row+n`` of every layer; vectors is (n_layers, n, dim)."""
        for position, layer in enumerate(self.layers):
            self._datasets[layer][first_row : first_row + vectors.shape[1]] = vectors[position]

    def commit(self, attributes: dict[str, Any]) -> None:
        """Record final attributes, mark complete, close and move every shard into place."""
        self._files.commit(attributes)

    def abort(self) -> None:
        """Close and delete every temporary shard not yet committed."""
        self._files.abort()

    def __enter__(self) -> ShardSetWriter:
        return self

    def __exit__(self, kind, value, traceback) -> None:
        self.abort()


def shard_attributes(path: str | os.PathLike) -> dict[str, Any]:
    """A shard's attributes as plain Python values."""
    with h5py.File(path, "r") as handle:
        return read_attributes(handle)


def _read_rows(
    out: np.ndarray,
    pieces: Sequence[tuple[int, Any]],
    rows: np.ndarray | None,
    convert: Callable[[np.ndarray], np.ndarray] | None,
) -> None:
    """Fill `out` with the rows of a layer stored as `pieces` ((first row, dataset) each,
    contiguous): every row, or the increasing `rows`, each through `convert` when given.
    Datasets are read in slices of `row_chunks` rows, so nothing but `out` and one slice
    is held."""
    filled = 0
    for first_row, dataset in pieces:
        for chunk in row_chunks(*dataset.shape):
            if rows is None:
                piece = dataset[chunk]
            else:
                low, high = np.searchsorted(rows, [first_row + chunk.start, first_row + chunk.stop])
                if low == high:
                    continue
                piece = dataset[chunk][rows[low:high] - first_row - chunk.start]
            out[filled : filled + len(piece)] = piece if convert is None else convert(piece)
            filled += len(piece)


def load_shard(
    path: str | os.PathLike,
    index_checksum: str,
    n_rows: int | None = None,
    expected: dict[str, Any] | None = None,
    dtype: str | None = "float32",
    rows: np.ndarray | None = None,
    convert: tuple[Callable[[np.ndarray], np.ndarray], int] | None = None,
) -> tuple[np.ndarray, dict[str, Any]]:
    """Read a shard's vectors as `dtype` (None: as stored, e.g. float16, half the memory of
    float32) after checking it matches the occurrence index. The array is filled in slices
    of rows, so reading holds no second copy of the layer: of every row, or only of the
    increasing `rows`, and with `convert` = (function, width) each slice mapped to that
    many columns as it is read (a correction applied without the raw layer in memory).

    Refuses (ShardMismatchError) a shard that is incomplete, was extracted from a
    different occurrence index, has the wrong number of rows, or whose attributes
    differ from `expected` (e.g. another model, pooling or settings hash).
    """
    path = Path(path)
    with open_to_read(path) as handle:
        attributes = read_attributes(handle)
        check_attributes(path, attributes, index_checksum, expected)
        if DATASET not in handle:
            raise ShardMismatchError(f"{path}: no '{DATASET}' dataset")
        dataset = handle[DATASET]
        if n_rows is not None and dataset.shape[0] != n_rows:
            raise ShardMismatchError(
                f"{path}: {dataset.shape[0]} rows, but the occurrence index has {n_rows}"
            )
        vectors = _allocate(dataset.shape, dataset.dtype, dtype, rows, convert)
        _read_rows(vectors, [(0, dataset)], rows, None if convert is None else convert[0])
    return vectors, attributes


def _allocate(
    shape: tuple[int, int],
    stored: Any,
    dtype: str | None,
    rows: np.ndarray | None,
    convert: tuple[Callable[[np.ndarray], np.ndarray], int] | None,
) -> np.ndarray:
    """The array a read fills: the chosen rows, in `dtype` (None: `stored`), as wide as the
    layer or `convert`'s output."""
    n_rows = shape[0] if rows is None else len(rows)
    width = shape[1] if convert is None else convert[1]
    return np.empty((n_rows, width), dtype=stored if dtype is None else dtype)


# Attributes that differ between the parts of one partitioned extraction; every other
# attribute (model, revision, settings, checksums, versions, layer) must be the same.
PART_ATTRIBUTES = ("part", "first_row", "first_sentence", "end_sentence")
_PER_PART = (*PART_ATTRIBUTES, "n_missing", "dtype", "created_utc", "complete")


def _checked_part(
    path: Path, handle: Any, index_checksum: str, expected: dict[str, Any] | None
) -> dict[str, Any]:
    """One part's attributes, after the checks `load_shard` makes of a whole shard and a
    check that it is a part of a partitioned extraction."""
    attributes = read_attributes(handle)
    check_attributes(path, attributes, index_checksum, expected)
    if DATASET not in handle or len(handle[DATASET].shape) != 2:
        raise ShardMismatchError(f"{path}: no two-dimensional '{DATASET}' dataset")
    missing = [
        key for key in ("part", "n_parts", "first_row", "n_rows_total") if key not in attributes
    ]
    if missing:
        raise ShardMismatchError(
            f"{path}: not a part of a partitioned extraction (no {', '.join(missing)} attribute)"
        )
    return attributes


def _check_parts_fit(
    parts: list[tuple[Path, dict[str, Any], tuple[int, int]]], n_rows: int | None
) -> int:
    """Refuse (ShardMismatchError) parts, given in part order as (path, attributes, shape),
    that are not parts 0..n−1 of one extraction, each once, alike in every attribute but
    the per-part ones, of one width, their rows contiguous and covering 0..n_rows_total
    (= `n_rows` if given). Returns n_rows_total."""
    first_path, first, first_shape = parts[0]
    for path, attributes, shape in parts[1:]:
        for key in sorted(set(first) | set(attributes)):
            if key not in _PER_PART and attributes.get(key) != first.get(key):
                raise ShardMismatchError(
                    f"{path}: {key} = {attributes.get(key)!r}, but {first_path} has "
                    f"{first.get(key)!r}: not parts of one extraction"
                )
        if shape[1] != first_shape[1]:
            raise ShardMismatchError(f"{path}: another width than {first_path}")
    numbers = [int(attributes["part"]) for _, attributes, _ in parts]
    n_parts = int(first["n_parts"])
    if numbers != list(range(n_parts)):
        missing = sorted(set(range(n_parts)) - set(numbers))
        repeated = sorted({number for number in numbers if numbers.count(number) > 1})
        raise ShardMismatchError(
            f"{first_path}: an extraction in {n_parts} parts, but the parts given are "
            f"{numbers} (missing {missing or 'none'}, given twice {repeated or 'none'})"
        )
    end = 0
    for path, attributes, shape in parts:
        if int(attributes["first_row"]) != end:
            raise ShardMismatchError(
                f"{path}: starts at row {attributes['first_row']}, but "
                f"the parts before it end at row {end}: the parts overlap or leave a gap"
            )
        end += shape[0]
    total = int(first["n_rows_total"])
    if end != total:
        raise ShardMismatchError(
            f"{parts[-1][0]}: the parts end at row {end}, but their extraction has "
            f"{total} rows: a part is incomplete"
        )
    if n_rows is not None and total != n_rows:
        raise ShardMismatchError(
            f"{first_path}: the parts hold {total} rows, but the occurrence index has {n_rows}"
        )
    return total


def load_shard_parts(
    paths: Sequence[str | os.PathLike],
    index_checksum: str,
    n_rows: int | None = None,
    expected: dict[str, Any] | None = None,
    dtype: str | None = "float32",
    rows: np.ndarray | None = None,
    convert: tuple[Callable[[np.ndarray], np.ndarray], int] | None = None,
) -> tuple[np.ndarray, dict[str, Any]]:
    """Gather the parts of one layer of a partitioned extraction (`extraction.partitions`)
    into the array `load_shard` reads from a whole shard: their rows, in part order.

    paths: the shards of every part, in any order (each records its ``part``). Each is
    checked as `load_shard` checks a shard (complete, this occurrence index, `expected`
    attributes); together they must be parts 0..n−1 of the same n, each once, their rows
    contiguous (each part's ``first_row`` where the one before ends) and covering
    0..``n_rows_total`` exactly (= `n_rows` if given), of the same width, and alike in every
    attribute but the per-part ones (`PART_ATTRIBUTES`, ``n_missing``, ``dtype``,
    ``created_utc``): the same model, revision, settings, layer, index and versions.
    Anything else is refused (ShardMismatchError) before any vector is read.

    The vectors go into one preallocated (n_rows_total, d) array of `dtype` (None: as
    stored, float32 if some part had to store float32), read as `load_shard` reads (`rows`
    and `convert` as there), so reading holds no second copy. Returns it and the
    attributes of a whole shard: part 0's without its `PART_ATTRIBUTES`, ``n_missing``
    summed over the parts and ``dtype`` the stored one.
    """
    paths = [Path(path) for path in paths]
    if not paths:
        raise ShardMismatchError("no shard parts given")
    handles: list[Any] = []
    try:
        for path in paths:
            handles.append(open_to_read(path))
        found = [
            _checked_part(path, handle, index_checksum, expected)
            for path, handle in zip(paths, handles, strict=True)
        ]
        order = sorted(range(len(paths)), key=lambda position: int(found[position]["part"]))
        total = _check_parts_fit(
            [(paths[i], found[i], handles[i][DATASET].shape) for i in order], n_rows
        )
        first = found[order[0]]
        stored = np.result_type(*(handle[DATASET].dtype for handle in handles))
        width = handles[order[0]][DATASET].shape[1]
        vectors = _allocate((total, width), stored, dtype, rows, convert)
        pieces = [
            (int(found[position]["first_row"]), handles[position][DATASET]) for position in order
        ]
        _read_rows(vectors, pieces, rows, None if convert is None else convert[0])
    finally:
        for handle in handles:
            handle.close()
    whole = {key: value for key, value in first.items() if key not in PART_ATTRIBUTES}
    whole["n_missing"] = sum(int(part.get("n_missing", 0)) for part in found)
    whole["dtype"] = str(stored)
    return vectors, whole


def load_shards(
    paths: str | os.PathLike | Sequence[str | os.PathLike],
    index_checksum: str,
    n_rows: int | None = None,
    expected: dict[str, Any] | None = None,
    dtype: str | None = "float32",
    rows: np.ndarray | None = None,
    convert: tuple[Callable[[np.ndarray], np.ndarray], int] | None = None,
) -> tuple[np.ndarray, dict[str, Any]]:
    """One layer's vectors from a whole shard (a path, or a list of one: `load_shard`) or
    from the parts of a partitioned extraction (a list of several: `load_shard_parts`)."""
    if isinstance(paths, str | os.PathLike):
        paths = [paths]
    paths = list(paths)
    load = load_shard if len(paths) == 1 else load_shard_parts
    return load(
        paths[0] if len(paths) == 1 else paths,
        index_checksum,
        n_rows=n_rows,
        expected=expected,
        dtype=dtype,
        rows=rows,
        convert=convert,
    )


def shard_bytes(n_rows: int, n_layers: int, hidden_size: int, storage_dtype: str) -> int:
    """Bytes the vectors of one extraction take on disk: occurrences × layers × dimensions ×
    bytes per value (HDF5's own overhead, a few kB a file, aside)."""
    return n_rows * n_layers * hidden_size * np.dtype(storage_dtype).itemsize


def check_free_space(directory: str | Path, needed: int, name: str) -> None:
    """Say how much an extraction will write and refuse it when `directory`'s disk has
    less free space than that (StorageError), before any forward pass."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    free = shutil.disk_usage(directory).free
    log.info("%s: the shards will take %.3g GB (%.3g GB free)", name, needed / 1e9, free / 1e9)
    if needed > free:
        raise StorageError(
            f"model {name}: the shards need {needed / 1e9:.3g} GB but {directory} has "
            f"{free / 1e9:.3g} GB free; free space, extract fewer layers, or store float16"
        )
