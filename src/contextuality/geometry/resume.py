"""An alignment's finished parts (each layer's neighbours, each null and draw) kept on
disk as they finish, under a key of all they rest on, so that a stopped job takes up where
it stopped.

Written atomically, read back under the same key alone: every layer's vectors, the rows'
sentences and positions, the settings, the seed and the code. At every STS occurrence on
2 cores an alignment is hours of searches and resamples (`workflow.geometry_resources`)."""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import os
import re
import shutil
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from scipy import sparse

from contextuality.files.provenance import atomic_path
from contextuality.geometry.neighbours import Neighbours
from contextuality.jobs.console import say

# Bytes hashed at a time (a million rows of a layer are hashed without a copy of them all).
HASHED_BYTES = 1 << 26
# The code an alignment's parts come from, part of every key: the geometry package, the
# random streams its nulls and draws are drawn from, and the rows it reads (a change in
# any starts an alignment afresh).
PACKAGE = Path(__file__).resolve().parent.parent
SOURCES = ("geometry", "configuration/random_streams.py", "rows.py")


def digest(parts: Iterable[Any]) -> str:
    """A BLAKE2b digest of `parts`: arrays by dtype, shape and bytes (sparse ones by their
    CSR arrays), dataclasses by their fields, dicts by their sorted items, anything else
    by its repr."""
    hashed = hashlib.blake2b(digest_size=16)
    for part in parts:
        _hash(hashed, part)
    return hashed.hexdigest()


def _hash(hashed, part: Any) -> None:
    if sparse.issparse(part):
        csr = sparse.csr_matrix(part)
        hashed.update(f"sparse{csr.shape}".encode())
        for array in (csr.data, csr.indices, csr.indptr):
            _hash(hashed, array)
    elif isinstance(part, np.ndarray) and part.dtype.hasobject:
        _hash(hashed, part.tolist())
    elif isinstance(part, np.ndarray):
        hashed.update(f"{part.dtype.str}{part.shape}".encode())
        flat = np.ascontiguousarray(part).reshape(-1).view(np.uint8)
        for start in range(0, flat.size, HASHED_BYTES):
            hashed.update(flat[start : start + HASHED_BYTES])
    elif dataclasses.is_dataclass(part) and not isinstance(part, type):
        hashed.update(type(part).__name__.encode())
        for item in dataclasses.fields(part):
            _hash(hashed, item.name)
            _hash(hashed, getattr(part, item.name))
    elif isinstance(part, dict):
        hashed.update(f"dict{len(part)}".encode())
        for key in sorted(part, key=repr):
            _hash(hashed, key)
            _hash(hashed, part[key])
    elif isinstance(part, list | tuple):
        hashed.update(f"{type(part).__name__}{len(part)}".encode())
        for item in part:
            _hash(hashed, item)
    else:
        hashed.update(repr(part).encode())


def code_digest() -> str:
    """The digest of the source an alignment's parts come from (`SOURCES`) and of numpy's
    version (its generators draw the nulls and draws)."""
    roots = [PACKAGE / source for source in SOURCES]
    files = sorted(
        path for root in roots for path in (root.rglob("*.py") if root.is_dir() else [root])
    )
    named = [(path.relative_to(PACKAGE).as_posix(), path.read_bytes()) for path in files]
    return digest([np.__version__, *named])


@dataclass(frozen=True)
class ResumeStore:
    """One alignment's finished parts in `directory` (a folder of its key's own), each an
    ``.npz`` named by what it is."""

    directory: Path

    @classmethod
    def keyed(cls, root: str | Path, parts: Iterable[Any]) -> ResumeStore:
        """The store under `root` for the alignment that `parts` (with the geometry's
        code) determine."""
        return cls(Path(root) / digest([code_digest(), *parts]))

    def scoped(self, scope: str) -> ResumeStore:
        """The store of one part of the alignment (a set of occurrences), in a folder named
        by `scope` with what a file name cannot hold everywhere (``>``) as ``_``."""
        return ResumeStore(self.directory / re.sub(r"[^A-Za-z0-9_.-]", "_", scope))

    def count(self) -> int:
        """How many finished parts it holds, in every scope."""
        return sum(1 for _ in self.directory.rglob("*.npz")) if self.directory.exists() else 0

    def neighbours(self, name: str) -> Neighbours | None:
        """The neighbours kept as `name`, or None."""
        stored = self._read(name)
        if stored is None:
            return None
        return Neighbours(stored["indices"], stored["cosines"], float(stored["recall"]))

    def keep_neighbours(self, name: str, found: Neighbours) -> None:
        self._write(name, indices=found.indices, cosines=found.cosines, recall=found.recall)

    def grids(self, name: str) -> dict[str, np.ndarray] | None:
        """The grids of every measure kept as `name`, or None."""
        return self._read(name)

    def keep_grids(self, name: str, grids: dict[str, np.ndarray]) -> None:
        self._write(name, **grids)

    def _read(self, name: str) -> dict[str, np.ndarray] | None:
        path = self.directory / f"{name}.npz"
        if not path.exists():
            return None
        with np.load(path) as stored:
            return {key: stored[key] for key in stored.files}

    def _write(self, name: str, **arrays: Any) -> None:
        final = self.directory / f"{name}.npz"
        with atomic_path(final) as temporary, open(temporary, "wb") as handle:
            np.savez(handle, **arrays)


def opened(resume_in: str | Path | None, what: str, parts: Iterable[Any]) -> ResumeStore | None:
    """The store under `resume_in` for the alignment `what` that `parts` determine (None:
    none), saying on the console how many parts of a stopped run it holds."""
    if resume_in is None:
        return None
    store = ResumeStore.keyed(resume_in, parts)
    finished = store.count()
    if finished:
        say(f"{what}: {finished} finished parts of a stopped run read from {store.directory}")
    return store


def kept_grids(
    store: ResumeStore | None, name: str, compute: Callable[[], dict[str, np.ndarray]]
) -> dict[str, np.ndarray]:
    """The grids `store` keeps as `name`, else those `compute` gives, kept there as soon
    as they are found (no store: computed, nothing kept)."""
    kept = None if store is None else store.grids(name)
    if kept is None:
        kept = compute()
        if store is not None:
            store.keep_grids(name, kept)
    return kept


@contextlib.contextmanager
def resumable(output: str | os.PathLike | None) -> Iterator[dict[str, Path]]:
    """The folder beside `output` (``<output>.resume``) that keeps an alignment's finished
    parts until `output` is written, as ``resume_in`` (`alignment.alignment_between`), then
    removed; nothing without an output. A job stopped part-way leaves it for the next."""
    if output is None:
        yield {}
        return
    folder = Path(output).with_name(f"{Path(output).name}.resume")
    yield {"resume_in": folder}
    shutil.rmtree(folder, ignore_errors=True)
