"""HDF5 embedding shards: one file per (model, layer), rows aligned with occurrence ids.

Layout of a shard: dataset ``vectors`` of shape (n_occurrences, hidden_size), float16
(or float32 when a model's values overflow float16), row i = occurrence_id i. A row of NaN
marks an occurrence the model produced no vector for (all its subword tokens were cut
by truncation or dropped by the tokenizer); ``n_missing`` records how many, and a shard
holding another number (rows damaged on disk read as NaN) is refused. Attributes carry the
provenance; ``complete`` is set last, and the file only gets its final name after that.
Each chunk of ``vectors`` (about 1 MiB of rows) carries a checksum (`hdf5.LayerFiles`), and
its fill value is NaN, so a chunk lost from HDF5's index reads as rows without a vector,
more than ``n_missing``: refused as damaged too.
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

from contextuality.backends import vector_settings
from contextuality.backends.settings import ModelSettings
from contextuality.errors import ShardMismatchError, StorageError
from contextuality.files.provenance import config_hash
from contextuality.rows import row_chunks
from contextuality.storage.checksums import CHECKSUM_BYTES, fletcher32
from contextuality.storage.hdf5 import (
    REBUILD,
    LayerFiles,
    check_attributes,
    check_chunks_digest,
    damage_refused,
    open_to_read,
    raise_if_disk_full,
    read_attributes,
    read_checked,
    reading,
    record_chunks_digest,
)

DATASET = "vectors"
log = logging.getLogger(__name__)
_CHUNK_BYTES = 1 << 20


class ShardSetWriter:
    """Writes the shards of several layers of one model in a single pass: an extraction's
    sink (`extraction.run.Sink`).

    Refuses (StorageError) an extraction whose shards the disk cannot hold (`shard_bytes`),
    before any file is made, temporary files that ended writers left removed first. Each
    shard is created under a temporary name (`hdf5.LayerFiles`); `commit` marks every shard
    complete and renames them all into place, `abort` (or leaving the ``with`` statement on
    an error) deletes them. A full disk met while writing is a StorageError.

    Where the vectors are on a GPU, the extraction first asks `on_device` for the
    checksums of the segment's whole chunks, computed there (`checksums.fletcher32`), and
    `write` then puts those chunks in the files as they are; the chunks a segment shares
    with its neighbours, and the dataset's last, go through HDF5's filter as before.
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
        name = attributes.get("model", "extraction")

        def check_space(directory: Path) -> None:
            check_free_space(directory, self.bytes_to_write, name, self.dtype)

        self._files = LayerFiles(paths, attributes, check_space, chunk_cache=0)
        self._datasets: dict[int, h5py.Dataset] = {}
        self.n_rows = n_rows
        self.chunk_rows = rows = chunk_rows(n_rows, dim, self.dtype)
        try:
            for layer, handle in self._files.files.items():
                self._datasets[layer] = handle.create_dataset(
                    DATASET,
                    shape=(n_rows, dim),
                    dtype=dtype,
                    chunks=(rows, dim) if n_rows else None,  # an empty part
                    fillvalue=np.nan,  # a chunk lost from the index reads as rows without vector
                )
        except BaseException as error:
            self.abort()
            raise_if_disk_full(error, self._files.directory)
            raise

    def whole_chunks(self, first_row: int, n: int) -> tuple[int, int]:
        """The chunks [k0, k1) that rows ``first_row:first_row+n`` fill entirely, the
        dataset's last chunk left out where it is partly beyond the dataset (HDF5 stores
        it whole, padded)."""
        end = first_row + n
        full_end = end if end < self.n_rows else self.n_rows - self.n_rows % self.chunk_rows
        first = -(-first_row // self.chunk_rows)
        return first, max(first, full_end // self.chunk_rows)

    def on_device(self, first_row: int, vectors: Any) -> Any:
        """The fletcher32 checksums of the whole chunks of a segment's rows
        ``first_row:first_row+n`` (vectors: (n_layers, n, dim) torch tensor, stored dtype),
        computed where the tensor is: (n_layers, k1 − k0) int64, for `write`."""
        first, end = self.whole_chunks(first_row, vectors.shape[1])
        start = first * self.chunk_rows - first_row
        rows = vectors[:, start : start + (end - first) * self.chunk_rows]
        chunks = rows.reshape(len(self.layers) * (end - first), self.chunk_rows * rows.shape[2])
        return fletcher32(chunks).reshape(len(self.layers), end - first)

    def write(self, first_row: int, vectors: np.ndarray, checksums: Any = None) -> None:
        """Write rows ``first_row:first_row+n`` of every layer; vectors is (n_layers, n, dim).
        checksums: what `on_device` gave for these rows, or None; with them, the whole
        chunks are written as they are, each followed by its checksum."""
        end = first_row + vectors.shape[1]
        first, last = self.whole_chunks(first_row, vectors.shape[1])
        if checksums is None or last == first:
            first = last = None
        try:
            for position, layer in enumerate(self.layers):
                dataset = self._datasets[layer]
                if first is None:
                    dataset[first_row:end] = vectors[position]
                    continue
                start, stop = first * self.chunk_rows, last * self.chunk_rows
                if start > first_row:
                    dataset[first_row:start] = vectors[position, : start - first_row]
                whole = vectors[position, start - first_row : stop - first_row]
                self._write_whole_chunks(dataset, first, whole, checksums[position])
                if end > stop:
                    dataset[stop:end] = vectors[position, stop - first_row :]
        except OSError as error:
            raise_if_disk_full(error, self._files.directory)
            raise

    def _write_whole_chunks(
        self, dataset: h5py.Dataset, first: int, rows: np.ndarray, checksums: np.ndarray
    ) -> None:
        """Write chunks first, first+1, ... of `dataset` from `rows` (whole chunks in order),
        each as its bytes followed by its checksum, past HDF5's filter."""
        n_chunks = len(checksums)
        chunk_bytes = rows.nbytes // n_chunks
        staged = np.empty((n_chunks, chunk_bytes + CHECKSUM_BYTES), dtype=np.uint8)
        staged[:, :chunk_bytes] = rows.reshape(n_chunks, -1).view(np.uint8)
        staged[:, chunk_bytes:] = np.asarray(checksums, "<u4").view(np.uint8).reshape(-1, 4)
        for position in range(n_chunks):
            offset = ((first + position) * self.chunk_rows, 0)
            dataset.id.write_direct_chunk(offset, staged[position])

    def commit(self, attributes: dict[str, Any]) -> None:
        """Record each shard's chunks' checksums (`hdf5.record_chunks_digest`) and the final
        attributes, mark complete, close and move every shard into place: all of them, or
        none (`hdf5.LayerFiles.commit`)."""
        try:
            for dataset in self._datasets.values():
                record_chunks_digest(dataset)
        except BaseException:
            self.abort()
            raise
        self._files.commit(attributes)

    def abort(self) -> None:
        """Close and delete every temporary shard not yet committed; never raises."""
        self._files.abort()

    def __enter__(self) -> ShardSetWriter:
        return self

    def __exit__(self, kind, value, traceback) -> None:
        self.abort()


def shard_attributes(path: str | os.PathLike) -> dict[str, Any]:
    """A shard's attributes as plain Python values."""
    with reading(Path(path)) as handle:
        return read_attributes(handle)


def _read_rows(
    out: np.ndarray,
    pieces: Sequence[tuple[int, Any]],
    rows: np.ndarray | None,
    convert: Callable[[np.ndarray], np.ndarray] | None,
) -> list[int]:
    """Fill `out` with the rows of a layer stored as `pieces` ((first row, dataset) each,
    contiguous): every row, or the increasing `rows`, each through `convert` when given.
    Datasets are read in slices of `row_chunks` rows, so nothing but `out` and one slice
    is held. Every slice is read (its checksums verified, `hdf5.read_checked`) and its rows
    without a vector counted: returns that count for each piece (`_check_missing`)."""
    filled = 0
    missing = []
    for first_row, dataset in pieces:
        count = 0
        for chunk in row_chunks(*dataset.shape):
            piece = read_checked(dataset, chunk)
            count += _rows_without_vector(piece)
            if rows is not None:
                low, high = np.searchsorted(rows, [first_row + chunk.start, first_row + chunk.stop])
                piece = piece[rows[low:high] - first_row - chunk.start]
            if len(piece):
                out[filled : filled + len(piece)] = piece if convert is None else convert(piece)
                filled += len(piece)
        missing.append(count)
    return missing


def _rows_without_vector(piece: np.ndarray) -> int:
    """How many rows of `piece` hold a NaN or ±inf, read off float16's exponent bits (all
    ones), as numpy's isfinite is slow on float16."""
    if piece.dtype == np.float16:
        return int(np.count_nonzero(((piece.view(np.uint16) & 0x7C00) == 0x7C00).any(axis=1)))
    return int(np.count_nonzero(~np.isfinite(piece).all(axis=1)))


def _check_missing(path: Path, counted: int, attributes: dict[str, Any]) -> None:
    """Refuse (ShardMismatchError) a shard with another number of rows without a vector than
    its extraction recorded (``n_missing``, where recorded): damaged rows read as NaN."""
    recorded = attributes.get("n_missing")
    if recorded not in (None, "") and counted != int(recorded):
        raise ShardMismatchError(
            f"{path}: damaged, {counted} rows have no vector but its extraction left "
            f"{recorded}; {REBUILD}"
        )


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
    different occurrence index, has the wrong number of rows, whose attributes differ from
    `expected` (e.g. another model, pooling or settings hash), or that is damaged (a chunk
    failing its checksum, or more rows without a vector than ``n_missing`` records).
    """
    path = Path(path)
    with reading(path) as handle:
        attributes = read_attributes(handle)
        check_attributes(path, attributes, index_checksum, expected)
        if DATASET not in handle:
            raise ShardMismatchError(f"{path}: no '{DATASET}' dataset")
        dataset = handle[DATASET]
        if n_rows is not None and dataset.shape[0] != n_rows:
            raise ShardMismatchError(
                f"{path}: {dataset.shape[0]} rows, but the occurrence index has {n_rows}"
            )
        check_chunks_digest(dataset)
        vectors = _allocate(dataset.shape, dataset.dtype, dtype, rows, convert)
        (missing,) = _read_rows(
            vectors, [(0, dataset)], rows, None if convert is None else convert[0]
        )
    _check_missing(path, missing, attributes)
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
# What each part records of its own: its rows, its dtype, and its sentences' parity check
# (`extraction.parity`).
_PER_PART = (*PART_ATTRIBUTES, "n_missing", "dtype", "created_utc", "complete", "parity")


def _checked_part(
    path: Path, handle: Any, index_checksum: str, expected: dict[str, Any] | None
) -> dict[str, Any]:
    """One part's attributes, after the checks `load_shard` makes of a whole shard and a
    check that it is a part of a partitioned extraction."""
    attributes = read_attributes(handle)
    check_attributes(path, attributes, index_checksum, expected)
    if DATASET not in handle or len(handle[DATASET].shape) != 2:
        raise ShardMismatchError(f"{path}: no two-dimensional '{DATASET}' dataset")
    check_chunks_digest(handle[DATASET])
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
        found = []
        for path in paths:
            with damage_refused(path):
                handles.append(open_to_read(path))
                found.append(_checked_part(path, handles[-1], index_checksum, expected))
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
        missing = _read_rows(vectors, pieces, rows, None if convert is None else convert[0])
        for position, count in zip(order, missing, strict=True):
            _check_missing(paths[position], count, found[position])
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


def chunk_rows(n_rows: int, dim: int, storage_dtype: str) -> int:
    """Rows per chunk of a shard's ``vectors``: about 1 MiB, at most the rows there are."""
    return max(1, min(n_rows, _CHUNK_BYTES // (dim * np.dtype(storage_dtype).itemsize)))


def shard_bytes(n_rows: int, n_layers: int, hidden_size: int, storage_dtype: str) -> int:
    """Bytes the vectors of one extraction take on disk: layers × the chunks of `chunk_rows`
    rows that hold `n_rows` (HDF5 stores the last one whole) × dimensions × bytes per value
    (a checksum of 4 bytes a chunk and a few kB of HDF5's own a file aside)."""
    if not n_rows:
        return 0
    rows = chunk_rows(n_rows, hidden_size, storage_dtype)
    stored_rows = -(-n_rows // rows) * rows
    return n_layers * stored_rows * hidden_size * np.dtype(storage_dtype).itemsize


def check_free_space(
    directory: str | Path, needed: int, name: str, dtype: str | None, what: str = "shards"
) -> None:
    """Say how much an extraction will write (its `what`: shards or state files) and refuse
    it when `directory`'s disk has less free space than that (StorageError), before any
    forward pass; storing float16 is suggested only to shards of another `dtype` (None:
    files whose dtype is not a setting)."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    free = shutil.disk_usage(directory).free
    log.info("%s: the %s will take %.3g GB (%.3g GB free)", name, what, needed / 1e9, free / 1e9)
    if needed > free:
        smaller = "" if dtype in (None, "float16") else ", or store float16 (storage_dtype)"
        raise StorageError(
            f"model {name}: the {what} need {needed / 1e9:.3g} GB but {directory} has "
            f"{free / 1e9:.3g} GB free; free space or extract fewer layers{smaller}"
        )


def expected_extraction(
    spec: ModelSettings | None, layer: int | None = None
) -> dict[str, Any] | None:
    """What a shard or state file extracted with `spec` of `layer` records (its
    `vector_settings`' hash, whatever layers were extracted with it), for refusing one
    extracted otherwise or holding another layer (a shard copied over another's name);
    None checks nothing."""
    expected: dict[str, Any] = {}
    if spec is not None:
        settings_hash = config_hash(vector_settings(spec))
        expected = {"model_id": spec.source, "pooling": spec.pooling, "config_hash": settings_hash}
    if layer is not None:
        expected["layer"] = int(layer)
    return expected or None
