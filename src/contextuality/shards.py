"""HDF5 embedding shards: one file per (model, layer), rows aligned with occurrence ids.

Layout of a shard: dataset ``vectors`` of shape (n_occurrences, hidden_size), float16
(or float32 when a model's values overflow float16), row i = occurrence_id i. A row of NaN
marks an occurrence the model produced no vector for (all its subword tokens were cut
by truncation or dropped by the tokenizer). Attributes carry the provenance; ``complete``
is set last, and the file only gets its final name after that.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from contextuality.errors import ShardMismatchError
from contextuality.measures import row_chunks
from contextuality.provenance import partial_path, remove_stale_partials

DATASET = "vectors"
_CHUNK_BYTES = 1 << 20


class ShardSetWriter:
    """Writes the shards of several layers of one model in a single pass.

    Temporary files left by an interrupted earlier run are removed first. Each shard is
    created under a temporary name; `commit` marks every shard complete and
    renames it into place, `abort` (or leaving the ``with`` block on an error) deletes them.
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
        self._final = {layer: Path(path) for layer, path in paths.items()}
        for path in self._final.values():
            remove_stale_partials(path)
        self._partial = {layer: partial_path(path) for layer, path in paths.items()}
        self._files: dict[int, h5py.File] = {}
        self._datasets: dict[int, h5py.Dataset] = {}
        rows_per_chunk = max(1, min(n_rows, _CHUNK_BYTES // (dim * np.dtype(dtype).itemsize)))
        try:
            for layer in self.layers:
                handle = h5py.File(self._partial[layer], "w")
                self._files[layer] = handle
                self._datasets[layer] = handle.create_dataset(
                    DATASET,
                    shape=(n_rows, dim),
                    dtype=dtype,
                    chunks=(rows_per_chunk, dim) if n_rows else None,  # an empty part
                )
                handle.attrs.update(_h5_safe({**attributes, "layer": layer, "complete": False}))
        except BaseException:
            self.abort()
            raise

    def write(self, first_row: int, block: np.ndarray) -> None:
        """Write rows ``first_row:first_row+n`` of every layer; block is (n_layers, n, dim)."""
        for position, layer in enumerate(self.layers):
            self._datasets[layer][first_row : first_row + block.shape[1]] = block[position]

    def commit(self, attributes: dict[str, Any]) -> None:
        """Record final attributes, mark complete, close and move every shard into place."""
        for layer in self.layers:
            handle = self._files.pop(layer)
            handle.attrs.update(_h5_safe({**attributes, "complete": True}))
            handle.close()
            os.replace(self._partial[layer], self._final[layer])

    def abort(self) -> None:
        """Close and delete every temporary shard not yet committed."""
        for layer, handle in self._files.items():
            handle.close()
            self._partial[layer].unlink(missing_ok=True)
        self._files.clear()

    def __enter__(self) -> ShardSetWriter:
        return self

    def __exit__(self, kind, value, traceback) -> None:
        self.abort()


def _h5_safe(attributes: dict[str, Any]) -> dict[str, Any]:
    """HDF5 attributes cannot hold None or nested dicts: store None as "" and dicts as text."""
    safe = {}
    for key, value in attributes.items():
        if value is None:
            safe[key] = ""
        elif isinstance(value, dict | list | tuple):
            safe[key] = json.dumps(value, default=str)
        elif isinstance(value, str):
            safe[key] = str(value)  # plain str: h5py rejects subclasses like torch's version
        else:
            safe[key] = value
    return safe


def _read_attributes(handle: Any) -> dict[str, Any]:
    """An open shard's attributes as plain Python values, dicts and lists decoded (`_h5_safe`
    stored them as JSON text)."""
    attributes = {}
    for key, value in handle.attrs.items():
        if isinstance(value, np.generic):
            value = value.item()
        if isinstance(value, str) and value[:1] in ("{", "["):
            value = json.loads(value)
        attributes[key] = value
    return attributes


def check_attributes(
    path: Path,
    attributes: dict[str, Any],
    index_checksum: str | None,
    expected: dict[str, Any] | None,
    what: str = "shard",
) -> None:
    """Refuse (ShardMismatchError) a `what` (a shard, a part, a state file) that is
    incomplete, was built for another occurrence index than `index_checksum` (None: not
    checked) or whose attributes differ from `expected`."""
    if not attributes.get("complete", False):
        raise ShardMismatchError(f"{path}: incomplete {what} (extraction did not finish)")
    checks = dict(expected or {})
    if index_checksum is not None:
        checks = {"index_checksum": index_checksum, **checks}
    for key, value in checks.items():
        if attributes.get(key) == value:
            continue
        if key == "index_checksum":
            raise ShardMismatchError(
                f"{path}: extracted for occurrence index {attributes.get(key)}, but the "
                f"current index is {value}; delete the {what} to re-extract"
            )
        raise ShardMismatchError(
            f"{path}: extracted with {key} = {attributes.get(key)!r}, but the current "
            f"settings give {value!r}; delete the {what} to re-extract"
        )


def shard_attributes(path: str | os.PathLike) -> dict[str, Any]:
    """A shard's attributes as plain Python values."""
    with h5py.File(path, "r") as handle:
        return _read_attributes(handle)


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
                block = dataset[chunk]
            else:
                low, high = np.searchsorted(rows, [first_row + chunk.start, first_row + chunk.stop])
                if low == high:
                    continue
                block = dataset[chunk][rows[low:high] - first_row - chunk.start]
            out[filled : filled + len(block)] = block if convert is None else convert(block)
            filled += len(block)


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
    try:
        handle = h5py.File(path, "r")
    except OSError as error:
        raise ShardMismatchError(f"{path}: not a readable HDF5 shard ({error})") from error
    with handle:
        attributes = _read_attributes(handle)
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
    attributes = _read_attributes(handle)
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


def load_shard_parts(
    paths: Sequence[str | os.PathLike],
    index_checksum: str,
    n_rows: int | None = None,
    expected: dict[str, Any] | None = None,
    dtype: str | None = "float32",
    rows: np.ndarray | None = None,
    convert: tuple[Callable[[np.ndarray], np.ndarray], int] | None = None,
) -> tuple[np.ndarray, dict[str, Any]]:
    """Gather the parts of one layer of a partitioned extraction (`extract.partition_bounds`)
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
            try:
                handles.append(h5py.File(path, "r"))
            except OSError as error:
                raise ShardMismatchError(f"{path}: not a readable HDF5 shard ({error})") from error
        found = [
            _checked_part(path, handle, index_checksum, expected)
            for path, handle in zip(paths, handles, strict=True)
        ]
        order = sorted(range(len(paths)), key=lambda position: int(found[position]["part"]))
        first = found[order[0]]
        for position in order[1:]:
            for key in sorted(set(first) | set(found[position])):
                if key not in _PER_PART and found[position].get(key) != first.get(key):
                    raise ShardMismatchError(
                        f"{paths[position]}: {key} = {found[position].get(key)!r}, but "
                        f"{paths[order[0]]} has {first.get(key)!r}: not parts of one extraction"
                    )
            if handles[position][DATASET].shape[1] != handles[order[0]][DATASET].shape[1]:
                raise ShardMismatchError(f"{paths[position]}: another width than {paths[order[0]]}")
        numbers = [int(found[position]["part"]) for position in order]
        n_parts = int(first["n_parts"])
        if numbers != list(range(n_parts)):
            missing = sorted(set(range(n_parts)) - set(numbers))
            repeated = sorted({number for number in numbers if numbers.count(number) > 1})
            raise ShardMismatchError(
                f"{paths[order[0]]}: an extraction in {n_parts} parts, but the parts given are "
                f"{numbers} (missing {missing or 'none'}, given twice {repeated or 'none'})"
            )
        end = 0
        for position in order:
            if int(found[position]["first_row"]) != end:
                raise ShardMismatchError(
                    f"{paths[position]}: starts at row {found[position]['first_row']}, but "
                    f"the parts before it end at row {end}: the parts overlap or leave a gap"
                )
            end += handles[position][DATASET].shape[0]
        total = int(first["n_rows_total"])
        if end != total:
            raise ShardMismatchError(
                f"{paths[order[-1]]}: the parts end at row {end}, but their extraction has "
                f"{total} rows: a part is incomplete"
            )
        if n_rows is not None and total != n_rows:
            raise ShardMismatchError(
                f"{paths[order[0]]}: the parts hold {total} rows, but the occurrence index "
                f"has {n_rows}"
            )
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
