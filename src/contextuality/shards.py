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
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from contextuality.errors import ShardMismatchError
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
                    DATASET, shape=(n_rows, dim), dtype=dtype, chunks=(rows_per_chunk, dim)
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


def shard_attributes(path: str | os.PathLike) -> dict[str, Any]:
    """A shard's attributes as plain Python values."""
    with h5py.File(path, "r") as handle:
        return _read_attributes(handle)


def load_shard(
    path: str | os.PathLike,
    index_checksum: str,
    n_rows: int | None = None,
    expected: dict[str, Any] | None = None,
) -> tuple[np.ndarray, dict[str, Any]]:
    """Read a shard's vectors as float32 after checking it matches the occurrence index.

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
        if not attributes.get("complete", False):
            raise ShardMismatchError(f"{path}: incomplete shard (extraction did not finish)")
        if attributes.get("index_checksum") != index_checksum:
            raise ShardMismatchError(
                f"{path}: extracted for occurrence index {attributes.get('index_checksum')}, "
                f"but the current index is {index_checksum}; delete the shard to re-extract"
            )
        for key, value in (expected or {}).items():
            if attributes.get(key) != value:
                raise ShardMismatchError(
                    f"{path}: extracted with {key} = {attributes.get(key)!r}, but the current "
                    f"settings give {value!r}; delete the shard to re-extract"
                )
        if DATASET not in handle:
            raise ShardMismatchError(f"{path}: no '{DATASET}' dataset")
        dataset = handle[DATASET]
        if n_rows is not None and dataset.shape[0] != n_rows:
            raise ShardMismatchError(
                f"{path}: {dataset.shape[0]} rows, but the occurrence index has {n_rows}"
            )
        vectors = dataset[...].astype(np.float32)
    return vectors, attributes
