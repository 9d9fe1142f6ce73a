"""HDF5 files with provenance attributes, written under a temporary name until complete.

A shard (`shards`) and a streamed layer's state file (`contextuality.streaming`) are both
HDF5 files, one per layer, whose attributes record where they came from (model, revision,
settings hash, index checksum, versions). They are written under temporary names owned by
the writing process and get their final names together, once all are complete
(`LayerFiles`); a reader refuses one that is incomplete or was made for another index or
other settings (`check_attributes`). Every dataset is written with a checksum of each of its
chunks (HDF5's fletcher32 filter), which HDF5 verifies on every read, and its attributes a
digest (`seal_attributes`); a state file's datasets each carry a digest of their values
(`record_digests`). A file damaged on disk, in its data or in HDF5's own metadata, is
refused in one line (`read_checked`, `reading`), not measured. Files written before the
checksums are still read; a shard's count of rows without a vector is checked for them
too (`shards`).

A full disk (ENOSPC) met making or committing the files, or writing a shard, is a
StorageError, one line, and leaves no temporary file behind.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import logging
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from contextuality.errors import ContextualityError, ShardMismatchError, StorageError, one_line
from contextuality.files.provenance import (
    canonical_json,
    partial_path,
    remove_stale_partials,
    sha256_bytes,
)

log = logging.getLogger(__name__)

REBUILD = "delete it and rerun snakemake (or the extract step) to write it again"

# Files whose close failed: h5py crashes the process when it releases one, so they are kept
# referenced, and the error that caused the failure is reported instead.
_UNCLOSABLE: list[h5py.File] = []


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


ATTRIBUTES_DIGEST = "attributes_sha256"


def _attributes_digest(attributes: dict[str, Any]) -> str:
    """SHA-256 of a file's attributes (decoded, its own digest left out)."""
    return sha256_bytes(canonical_json(attributes).encode())


def seal_attributes(handle: h5py.File) -> None:
    """Record the digest of the file's attributes as they now are (`ATTRIBUTES_DIGEST`),
    which `read_attributes` compares."""
    if ATTRIBUTES_DIGEST in handle.attrs:
        del handle.attrs[ATTRIBUTES_DIGEST]
    handle.attrs[ATTRIBUTES_DIGEST] = _attributes_digest(read_attributes(handle))


def read_attributes(handle: Any) -> dict[str, Any]:
    """An open file's attributes as plain Python values, dicts and lists decoded
    (`encode_attributes` stored them as JSON text); ShardMismatchError where they differ
    from the digest written with them (`ATTRIBUTES_DIGEST`; files written before it have
    none)."""
    attributes = {}
    for key, value in handle.attrs.items():
        if isinstance(value, np.generic):
            value = value.item()
        if isinstance(value, str) and value[:1] in ("{", "["):
            value = json.loads(value)
        attributes[key] = value
    recorded = attributes.pop(ATTRIBUTES_DIGEST, None)
    if recorded is not None and recorded != _attributes_digest(attributes):
        raise ShardMismatchError(
            f"{handle.filename}: damaged, its attributes differ from the digest written with "
            f"them; {REBUILD}"
        )
    return attributes


# What h5py raises on a file whose metadata (superblock, object headers, attributes) is
# damaged: a damaged file is all these, never a traceback.
_DAMAGE = (OSError, RuntimeError, KeyError, ValueError, TypeError, IndexError, AttributeError)


@contextlib.contextmanager
def damage_refused(path: Path, what: str = "HDF5 shard") -> Iterator[None]:
    """Turn an error HDF5 raises reading `path` (`_DAMAGE`) into one ShardMismatchError
    line naming the file and how to rebuild it; the package's own errors pass unchanged."""
    try:
        yield
    except ContextualityError:
        raise
    except _DAMAGE as error:
        raise ShardMismatchError(
            f"{path}: damaged or not a {what}, it cannot be read ({one_line(error)}); {REBUILD}"
        ) from error


def open_to_read(path: Path, what: str = "HDF5 shard") -> h5py.File:
    """`path` opened for reading; ShardMismatchError naming `what` where it is not a
    readable HDF5 file."""
    try:
        return h5py.File(path, "r")
    except OSError as error:
        raise ShardMismatchError(f"{path}: not a readable {what} ({one_line(error)})") from error


@contextlib.contextmanager
def reading(path: Path, what: str = "HDF5 shard") -> Iterator[h5py.File]:
    """`path` open for reading (`open_to_read`), any error its damage raises while it is
    read one line (`damage_refused`)."""
    with damage_refused(path, what), open_to_read(path, what) as handle:
        yield handle


DIGEST = "content_sha256"
_DIGEST_BLOCK_BYTES = 64 << 20


def record_digests(handle: h5py.File) -> None:
    """Store beside each dataset of `handle` the SHA-256 of its values (`DIGEST`), which
    `read_checked` compares when the whole dataset is read: a chunk lost from HDF5's index
    reads as fill values, which no chunk checksum sees."""
    for dataset in handle.values():
        digest = hashlib.sha256()
        if dataset.ndim == 0:
            digest.update(np.ascontiguousarray(dataset[()]).tobytes())
        else:  # in blocks of rows, C order: the bytes of the whole array, never all held
            row_bytes = max(1, dataset.dtype.itemsize * int(np.prod(dataset.shape[1:])))
            step = max(1, _DIGEST_BLOCK_BYTES // row_bytes)
            for start in range(0, dataset.shape[0], step):
                digest.update(np.ascontiguousarray(dataset[start : start + step]).tobytes())
        dataset.attrs[DIGEST] = digest.hexdigest()


def read_checked(dataset: h5py.Dataset, selection: Any = Ellipsis) -> np.ndarray:
    """``dataset[selection]``, a ShardMismatchError naming the file and how to rebuild it
    where HDF5 cannot read it (a chunk whose checksum does not match its data) or, read
    whole, its values differ from their recorded digest (`record_digests`)."""
    try:
        values = dataset[selection]
        recorded = dataset.attrs.get(DIGEST) if selection is Ellipsis else None
    except _DAMAGE as error:
        raise ShardMismatchError(
            f"{dataset.file.filename}: damaged, its data cannot be read ({one_line(error)}); "
            f"{REBUILD}"
        ) from error
    if recorded is not None and recorded != sha256_bytes(np.ascontiguousarray(values).tobytes()):
        raise ShardMismatchError(
            f"{dataset.file.filename}: damaged, dataset {dataset.name} differs from the digest "
            f"written with it; {REBUILD}"
        )
    return values


def raise_if_disk_full(error: BaseException, directory: Path) -> None:
    """Raise StorageError, one line, from `error` when it is a full disk (ENOSPC) met
    while writing into `directory`."""
    if isinstance(error, OSError) and error.errno == errno.ENOSPC:
        raise StorageError(
            f"{directory}: the disk filled up while writing ({os.strerror(errno.ENOSPC)}); "
            "no file was kept: free space and run again"
        ) from error


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
        if key == "layer":
            raise ShardMismatchError(
                f"{path}: holds layer {attributes.get(key)}, not layer {value}; delete the "
                f"{what} to re-extract"
            )
        if key == "index_checksum":
            raise ShardMismatchError(
                f"{path}: extracted for occurrence index {attributes.get(key)}, but the "
                f"current index is {value}; delete the {what} to re-extract"
            )
        raise ShardMismatchError(
            f"{path}: extracted with {key} = {attributes.get(key)!r}, but the current "
            f"settings give {value!r}; delete the {what} to re-extract"
        )


class _ChecksummedFile(h5py.File):
    """An HDF5 file whose every dataset stores a checksum per chunk (fletcher32)."""

    def create_dataset(self, name: str, *args: Any, **options: Any) -> h5py.Dataset:
        return super().create_dataset(name, *args, fletcher32=True, **options)


def _close(handle: h5py.File) -> None:
    """Close `handle`, keeping it referenced for good if that fails (`_UNCLOSABLE`)."""
    try:
        handle.close()
    except BaseException:
        _UNCLOSABLE.append(handle)
        raise


def synced(path: Path) -> None:
    """Flush a file's (or a directory's entries') data from the page cache to the disk."""
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


class LayerFiles:
    """One HDF5 file per layer, written under temporary names and moved into place together
    by `commit`, all or none; `abort` deletes them. ``files[layer]`` is the open file of a
    layer, its attributes set to `attributes` with ``layer`` and ``complete = False``; its
    datasets get checksums (`_ChecksummedFile`).

    Temporary files of these names that an ended writer left are removed first (a running
    writer's are kept, `provenance.remove_stale_partials`); then `check_space`, given the
    directory, may refuse the job (a disk too full for it) before any file is made.
    chunk_cache: bytes of HDF5's chunk cache per dataset (None: h5py's default). With 0
    each write reaches the disk when made, so a full disk fails that write, not the close
    (`_UNCLOSABLE`); a writer whose writes cover whole chunks loses nothing by it.
    """

    def __init__(
        self,
        paths: dict[int, str | os.PathLike],
        attributes: dict[str, Any],
        check_space: Callable[[Path], None] | None = None,
        chunk_cache: int | None = None,
    ) -> None:
        self._final = {layer: Path(path) for layer, path in paths.items()}
        for path in self._final.values():
            remove_stale_partials(path)
        self._partial: dict[int, Path] = {}
        self.files: dict[int, h5py.File] = {}
        self.directory = next(iter(self._final.values())).parent if paths else Path()
        if check_space is not None:
            check_space(self.directory)
        try:
            for layer, final in self._final.items():
                self._partial[layer] = partial_path(final)
                handle = _ChecksummedFile(self._partial[layer], "w", rdcc_nbytes=chunk_cache)
                self.files[layer] = handle
                handle.attrs.update(
                    encode_attributes({**attributes, "layer": layer, "complete": False})
                )
        except BaseException as error:
            self.abort()
            raise_if_disk_full(error, self.directory)
            raise

    def commit(self, attributes: dict[str, Any]) -> None:
        """Record final attributes and mark every file complete, close them all and flush
        them to the disk (`synced`), then move them all into place (`_move_into_place`):
        a file under its final name is whole, even after a crash of the machine. On any
        failure nothing is moved and every temporary file is deleted."""
        try:
            for handle in self.files.values():
                handle.attrs.update(encode_attributes({**attributes, "complete": True}))
                seal_attributes(handle)
            while self.files:
                layer = next(iter(self.files))
                _close(self.files.pop(layer))
                synced(self._partial[layer])
            self._move_into_place()
            synced(self.directory)
        except BaseException as error:
            self.abort()
            raise_if_disk_full(error, self.directory)
            raise

    def _move_into_place(self) -> None:
        """Rename every closed temporary file onto its final name, setting aside what each
        replaces until all are in place. Should a rename fail, the files already moved are
        taken back (what they replaced is restored) and it raises."""
        moved: list[tuple[Path, Path | None]] = []
        try:
            for layer in list(self._partial):
                final = self._final[layer]
                replaced = partial_path(final) if final.exists() else None
                if replaced is not None:
                    os.replace(final, replaced)
                moved.append((final, replaced))
                os.replace(self._partial[layer], final)
                del self._partial[layer]
        except BaseException:
            for final, replaced in reversed(moved):
                with contextlib.suppress(OSError):
                    if replaced is None:
                        final.unlink(missing_ok=True)
                    else:
                        os.replace(replaced, final)
            raise
        for _, replaced in moved:
            if replaced is not None:
                with contextlib.suppress(OSError):
                    replaced.unlink(missing_ok=True)

    def abort(self) -> None:
        """Close and delete every temporary file not yet moved into place. Never raises: it
        runs while another error (often a full disk) is on its way to the user."""
        for layer, handle in self.files.items():
            with contextlib.suppress(OSError):
                os.truncate(self._partial[layer], 0)  # room for what closing writes
            try:
                _close(handle)
            except Exception as error:  # the error being raised says more
                log.warning("%s: not closed (%s)", self._partial[layer], one_line(error))
        self.files.clear()
        for partial in self._partial.values():
            with contextlib.suppress(OSError):
                partial.unlink(missing_ok=True)
        self._partial.clear()


CHUNKS_DIGEST = "chunks_sha256"


def chunks_digest(dataset: h5py.Dataset) -> str:
    """SHA-256 of each stored chunk's place and of the fletcher32 checksum HDF5 stored with
    it, read from the file (four bytes a chunk): it changes wherever a chunk's data does,
    rows rewritten in place through h5py included, since h5py computes the new chunk's
    checksum as it writes. Recorded when the file is written (`record_chunks_digest`),
    compared when its rows are read (`check_chunks_digest`)."""
    digest = hashlib.sha256()
    chunks: list[tuple[tuple[int, ...], int, int]] = []
    dataset.id.chunk_iter(
        lambda info: chunks.append((info.chunk_offset, info.byte_offset, info.size))
    )
    descriptor = dataset.file.id.get_vfd_handle()
    for offset, byte_offset, size in sorted(chunks):
        stored = os.pread(descriptor, 4, byte_offset + size - 4)
        digest.update(np.asarray(offset, dtype="<i8").tobytes() + stored)
    return digest.hexdigest()


def record_chunks_digest(dataset: h5py.Dataset) -> None:
    """Store `chunks_digest` of a dataset written whole, as its attribute, once its
    chunks are on the file (flushed)."""
    dataset.file.flush()
    dataset.attrs[CHUNKS_DIGEST] = chunks_digest(dataset)


def check_chunks_digest(dataset: h5py.Dataset) -> None:
    """Refuse (ShardMismatchError) a dataset whose chunks' checksums are not those recorded
    when it was written: rows rewritten since. Datasets written before the record pass."""
    recorded = dataset.attrs.get(CHUNKS_DIGEST)
    if recorded is not None and recorded != chunks_digest(dataset):
        raise ShardMismatchError(
            f"{dataset.file.filename}: its rows were rewritten after it was written (the "
            f"checksums of its chunks are not those recorded then); {REBUILD}"
        )
