"""An alignment's finished parts (each layer's neighbours, each null and draw) kept on
disk as they finish, under a key of all they rest on, so that a stopped job takes up where
it stopped.

Written atomically, read back under the same key alone: every layer's vectors, the rows'
sentences and positions, the settings, the seed and the code. A layer's neighbours have a
key of their own, their search's alone (the rows searched, the search's settings and
code), so that a change in the measures keeps the searches a stopped alignment finished.
At every STS occurrence on 2 cores an alignment is hours of searches and resamples
(`workflow.geometry_resources`)."""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import math
import os
import re
import shutil
import time
from collections.abc import Callable, Iterable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any, Protocol

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
# The code a layer's neighbours come from, part of their key: the search and its indices,
# and the stream its calibration rows are drawn from.
SEARCH_SOURCES = (
    "geometry/neighbours.py",
    "geometry/search.py",
    "geometry/index.py",
    "geometry/exact_distance.py",
    "configuration/random_streams.py",
)
# The libraries a search runs in, their versions part of its key (an index's graph, an
# exact search's rounding).
SEARCH_LIBRARIES = ("faiss-cpu", "faiss-gpu", "torch")
# The folder of a store's root that keeps every layer's neighbours, by their search's key.
SEARCHES = "neighbours"
# The entry of a part's file that holds the seconds it took to compute.
SECONDS = "seconds_to_compute"


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


def code_digest(sources: tuple[str, ...] | None = None) -> str:
    """The digest of the source an alignment's parts come from (None: `SOURCES`; a
    search's, `SEARCH_SOURCES`) and of numpy's version (its generators draw the nulls, the
    draws and a search's calibration rows)."""
    roots = [PACKAGE / source for source in (SOURCES if sources is None else sources)]
    files = sorted(
        path for root in roots for path in (root.rglob("*.py") if root.is_dir() else [root])
    )
    named = [(path.relative_to(PACKAGE).as_posix(), path.read_bytes()) for path in files]
    return digest([np.__version__, *named])


@dataclass(frozen=True)
class ResumeStore:
    """One alignment's finished parts in `directory` (a folder of its key's own), each an
    ``.npz`` named by what it is; every layer's neighbours in `searches`, each named by
    its search's key (a folder the store's root shares among its alignments)."""

    directory: Path
    searches: Path

    @classmethod
    def keyed(cls, root: str | Path, parts: Iterable[Any]) -> ResumeStore:
        """The store under `root` for the alignment that `parts` (with the geometry's
        code) determine."""
        return cls(Path(root) / digest([code_digest(), *parts]), Path(root) / SEARCHES)

    def scoped(self, scope: str) -> ResumeStore:
        """The store of one part of the alignment (a set of occurrences), in a folder named
        by `scope` with what a file name cannot hold everywhere (``>``) as ``_``."""
        scoped = self.directory / re.sub(r"[^A-Za-z0-9_.-]", "_", scope)
        return ResumeStore(scoped, self.searches)

    def count(self) -> int:
        """How many finished parts it holds, in every scope (searches apart)."""
        return sum(1 for _ in self.directory.rglob("*.npz")) if self.directory.exists() else 0

    def neighbours(self, searched: Path) -> Neighbours | None:
        """The neighbours kept at `searched` (a search's place, `searched`), or None."""
        stored = _read(searched)
        if stored is None:
            return None
        return Neighbours(stored["indices"], stored["cosines"], float(stored["recall"]))

    def keep_neighbours(self, searched: Path, found: Neighbours, seconds: float) -> None:
        """Keep at `searched` (a search's place) the neighbours it `found` in `seconds`."""
        arrays = {"indices": found.indices, "cosines": found.cosines, "recall": found.recall}
        _write(searched, arrays, seconds)

    def searched(self, search: Iterable[Any]) -> Path:
        """Where the neighbours of the search that `search` (the rows searched and its
        settings, with the search's code, `SEARCH_SOURCES`, and its libraries' versions,
        `SEARCH_LIBRARIES`) determines are kept."""
        libraries = [_version(name) for name in SEARCH_LIBRARIES]
        key = digest([code_digest(SEARCH_SOURCES), libraries, *search])
        return self.searches / f"{key}.npz"

    def grids(self, name: str) -> dict[str, np.ndarray] | None:
        """The grids of every measure kept as `name`, or None."""
        return _read(self.directory / f"{name}.npz")

    def keep_grids(self, name: str, grids: dict[str, np.ndarray], seconds: float) -> None:
        """Keep the `grids` computed in `seconds` as `name`."""
        _write(self.directory / f"{name}.npz", grids, seconds)


@dataclass
class Resumed:
    """What a job read of the parts a stopped run had kept (those written before `since`,
    a ``time.time()``): how many, and the seconds they took to compute (NaN where a part
    does not say)."""

    since: float
    parts: int = 0
    seconds: float = 0.0


# The ledger of the job under way (`resumable`), None outside one.
_RESUMED: ContextVar[Resumed | None] = ContextVar("resumed", default=None)


def _version(distribution: str) -> str | None:
    """The installed version of `distribution`, or None."""
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None


def _read(path: Path) -> dict[str, np.ndarray] | None:
    """The arrays of the ``.npz`` at `path` (its seconds apart), or None where there is
    none; a part a stopped run kept counted in the job's ledger (`Resumed`)."""
    if not path.exists():
        return None
    with np.load(path) as stored:
        arrays = {key: stored[key] for key in stored.files}
    seconds = float(arrays.pop(SECONDS, math.nan))
    ledger = _RESUMED.get()
    if ledger is not None and path.stat().st_mtime < ledger.since:
        ledger.parts += 1
        ledger.seconds += seconds
    return arrays


def _write(path: Path, arrays: dict[str, Any], seconds: float) -> None:
    """`arrays` and the `seconds` they took into an ``.npz`` at `path`, atomically."""
    with atomic_path(path) as temporary, open(temporary, "wb") as handle:
        np.savez(handle, **arrays, **{SECONDS: seconds})


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


class ResampleDone(Protocol):
    """Told of each null or draw of an alignment as it is done: `read` where it was read
    from a stopped run's kept parts rather than computed (so that a rate counts the
    computed ones alone; `progress.Told.update`)."""

    def __call__(self, *, read: bool) -> None: ...


def kept_grids(
    store: ResumeStore | None,
    name: str,
    compute: Callable[[], dict[str, np.ndarray]],
    done: ResampleDone | None = None,
) -> dict[str, np.ndarray]:
    """The grids `store` keeps as `name`, else those `compute` gives, kept there as soon
    as they are found (no store: computed, nothing kept); `done` then told whether they
    were read."""
    kept = None if store is None else store.grids(name)
    read = kept is not None
    if kept is None:
        started = time.perf_counter()
        kept = compute()
        if store is not None:
            store.keep_grids(name, kept, time.perf_counter() - started)
    if done is not None:
        done(read=read)
    return kept


@dataclass(frozen=True)
class ResumeFolder:
    """A job's store of finished parts: `keywords` for the alignment's calls
    (``resume_in``; none without an output) and what the job read of a stopped run's
    (`resumed`)."""

    keywords: dict[str, Path]
    resumed: Resumed


@contextlib.contextmanager
def resumable(output: str | os.PathLike | None) -> Iterator[ResumeFolder]:
    """The folder beside `output` (``<output>.resume``) that keeps an alignment's finished
    parts until `output` is written, as ``resume_in`` (`alignment.alignment_between`), then
    removed; nothing without an output. A job stopped part-way leaves it for the next,
    which counts what it reads of it (`Resumed`)."""
    resumed = Resumed(time.time())
    if output is None:
        yield ResumeFolder({}, resumed)
        return
    folder = Path(output).with_name(f"{Path(output).name}.resume")
    token = _RESUMED.set(resumed)
    try:
        yield ResumeFolder({"resume_in": folder}, resumed)
    finally:
        _RESUMED.reset(token)
    shutil.rmtree(folder, ignore_errors=True)
