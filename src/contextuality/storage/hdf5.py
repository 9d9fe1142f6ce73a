"""HDF5 files with provenance attributes, written under a temporary name until complete.

A shard (`shards`) and a streamed layer's state file (`contextuality.streaming`) are both
HDF5 files, one per layer, whose attributes record where they came from (model, revision,
settings hash, index checksum, versions). They are written under a temporary name and
get their final name only once complete (`LayerFiles`); a reader refuses one that is
incomplete or was made for another index or other settings (`check_attributes`).
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


def encode_attributes(attributes: dict[str, Any]) -> dict[str, Any]:
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


def read_attributes(handle: Any) -> dict[str, Any]:
    """An open file's attributes as plain Python values, dicts and lists decoded
    (`encode_attributes` stored them as JSON text)."""
    attributes = {}
    for key, value in handle.attrs.items():
        if isinstance(value, np.generic):
            value = value.item()
        if isinstance(value, str) and value[:1] in ("{", "["):
            value = json.loads(value)
        attributes[key] = value
    return attributes


def open_to_read(path: Path, what: str = "HDF5 shard") -> h5py.File:
    """`path` opened for reading; ShardMismatchError naming `what` where it is not a
    readable HDF5 file."""
    try:
        return h5py.File(path, "r")
    except OSError as error:
        raise ShardMismatchError(f"{path}: not a readable {what} ({error})") from error


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


class LayerFiles:
    """One HDF5 file per layer, written under temporary names (files left by an interrupted
    earlier run are removed first) and moved into place together by `commit`; `abort`
    deletes them. ``files[layer]`` is the open file of a layer, its attributes set to
    `attributes` with ``layer`` and ``complete = False``.
    """

    def __init__(self, paths: dict[int, str | os.PathLike], attributes: dict[str, Any]) -> None:
        self._final = {layer: Path(path) for layer, path in paths.items()}
        for path in self._final.values():
            remove_stale_partials(path)
        self._partial = {layer: partial_path(path) for layer, path in self._final.items()}
        self.files: dict[int, h5py.File] = {}
        try:
            for layer in self._final:
                handle = h5py.File(self._partial[layer], "w")
                self.files[layer] = handle
                handle.attrs.update(
                    encode_attributes({**attributes, "layer": layer, "complete": False})
                )
        except BaseException:
            self.abort()
            raise

    def commit(self, attributes: dict[str, Any]) -> None:
        """Record final attributes, mark each file complete, close it and move it into place."""
        for layer in list(self._final):
            handle = self.files.pop(layer)
            handle.attrs.update(encode_attributes({**attributes, "complete": True}))
            handle.close()
            os.replace(self._partial[layer], self._final[layer])

    def abort(self) -> None:
        """Close and delete every temporary file not yet committed."""
        for layer, handle in self.files.items():
            handle.close()
            self._partial[layer].unlink(missing_ok=True)
        self.files.clear()
