"""Streaming measures: contextuality of a corpus too large to store its vectors.

SelfSim, IntraSim and the anisotropy baseline need only running sums per word and layer,
so a `StreamingAccumulator` takes the place of the shards' `ShardSetWriter` in the
extraction (`extract.extract_to_shards(..., writer=...)`) and keeps, per layer, in float64
(u = f/‖f‖; a context is a sentence):

- per indexed word w: Σ_j u_j, Σ_j f_j, Σ_s ‖Σ_{j∈s} u_j‖², n_w and Σ_s n_{w,s}², whence
  SelfSim(w) = (‖Σ_j u_j‖² − Σ_s ‖Σ_{j∈s} u_j‖²) / (n_w² − Σ_s n_{w,s}²) exactly;
- for the layer: Σ_i u_i, per dimension Σ_s (Σ_{i∈s} u_i)², N and Σ_s n_s², whence the
  exact anisotropy baseline (‖Σu‖² − Σ_s‖Σ_{i∈s}u_i‖²)/(N² − Σ_s n_s²) and each
  dimension's share of it (``rogue_share[k]``);
- per sentence: IntraSim(s) = (Σ_i u_i)·s̄ / (n ‖s̄‖), s̄ = Σ_i f_i, from the sentence's two
  sums (a sentence never spans two blocks).

MEV and the static vectors (a word's first principal direction) need the occurrences
themselves: they come from a seeded sample drawn from the occurrence index before the
forward pass, at most ``word_sample_size`` occurrences per indexed word (uniform without
replacement; every occurrence of a word that has no more), whose rows are kept as float32
as they stream by. So are the rows of the MEV baseline's samples, drawn exactly as
`analysis.measure_layer` draws them from a shard (`measures.explained_variance_baseline`
with the generator seeded [seed, 1]): with no missing vector the draws are the same
occurrences. State: O(words × d) per layer in memory; the kept rows go straight to the
layer's state file as they arrive.

`StreamingAccumulator.commit` writes one HDF5 state file per layer (temporary name, then
renamed, like the shards, with the same provenance attributes); `load_state` reads one,
`measure_state` turns it into the per-word table, per-sentence table and summary that
`analysis.measure_layer` gives for the exact family, and `static_vectors_from_state` into
static vectors. What a streaming run cannot give is listed in `NOT_STREAMED` and in every
summary it writes.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import pandas as pd

from contextuality import analysis, isotropy, measures
from contextuality.errors import ShardMismatchError
from contextuality.provenance import partial_path, remove_stale_partials
from contextuality.shards import ShardSetWriter, _h5_safe, _read_attributes, check_attributes

log = logging.getLogger(__name__)

FORMAT = "contextuality-streaming-state/1"
# Generator streams: [seed, 1] is the MEV baseline's (as in analysis), [seed, 5] the words'.
_WORD_SAMPLE_STREAM = 5

# Summary measures of `analysis.measure_layer` that a streaming run lacks: the paper's
# sampled estimators (their samples are drawn from sentences' vectors after the fact), the
# isotropy scores that need every vector again (a covariance or a second pass), and the
# degeneration analysis (nearest neighbours among all occurrences).
NOT_STREAMED = (
    "selfsim[paper]",
    "mev[truncated_svd]",
    "intrasim[paper]",
    "anisotropy[paper]",
    "isoscore",
    "isoscore*",
    "effective_rank",
    "partition_ratio",
    "degeneration",
)
# Per-word columns of `analysis.measure_layer`'s table that a streaming run lacks.
NOT_STREAMED_COLUMNS = ("selfsim_paper", "mev_truncated_svd")


@dataclass(frozen=True)
class StreamingSettings:
    """What a streaming run samples (config ``streaming`` with ``measures``' settings).

    word_sample_size: at most this many occurrences per indexed word for MEV and the static
    vectors (all of a word's when it has no more). seed, baseline_sample_size,
    sample_replicates: the measures' (`analysis.MeasureSettings`), which fix the MEV
    baseline's samples; the words' sample is drawn from the generator [seed, 5].
    """

    word_sample_size: int = 1000
    seed: int = 0
    baseline_sample_size: int = 1000
    sample_replicates: int = 50

    @classmethod
    def from_measures(
        cls, settings: analysis.MeasureSettings, word_sample_size: int = 1000
    ) -> StreamingSettings:
        return cls(
            word_sample_size=word_sample_size,
            seed=settings.seed,
            baseline_sample_size=settings.baseline_sample_size,
            sample_replicates=settings.sample_replicates,
        )

    def as_dict(self) -> dict[str, int]:
        return {
            "word_sample_size": self.word_sample_size,
            "seed": self.seed,
            "baseline_sample_size": self.baseline_sample_size,
            "sample_replicates": self.sample_replicates,
        }


def word_sample_rows(
    word_id: np.ndarray, tracked: np.ndarray, sample_size: int, seed: int
) -> np.ndarray:
    """Rows (sorted) of a seeded uniform sample without replacement of at most `sample_size`
    occurrences of each word with ``tracked[word]``; every occurrence of a word that has no
    more. Each row gets a key from the generator [seed, 5] whatever its word, and a word's
    sample is its rows with the smallest keys, so one word's sample does not depend on which
    other words are tracked."""
    word_id = np.asarray(word_id, dtype=np.int64)
    keys = np.random.default_rng([seed, _WORD_SAMPLE_STREAM]).random(len(word_id))
    rows = np.flatnonzero(np.asarray(tracked, dtype=bool)[word_id])
    order = rows[np.lexsort((keys[rows], word_id[rows]))]
    starts = measures.run_starts(word_id[order])
    sizes = measures.group_sizes(starts, len(order))
    rank = np.arange(len(order)) - np.repeat(starts, sizes)
    return np.sort(order[rank < sample_size])


def baseline_sample_draws(n_rows: int, settings: StreamingSettings) -> list[np.ndarray]:
    """The rows of the MEV baseline's 1 + sample_replicates samples, in the order and from
    the generator of `measures.explained_variance_baseline` as `analysis` calls it."""
    rng = np.random.default_rng([settings.seed, 1])
    size = min(settings.baseline_sample_size, n_rows)
    return [
        np.sort(rng.choice(n_rows, size=size, replace=False))
        for _ in range(settings.sample_replicates + 1)
    ]


def _group_sums(
    group: np.ndarray, n_groups: int, rows: np.ndarray, columns: np.ndarray | None = None
) -> np.ndarray:
    """(n_groups, d) float64 sums: ``rows[columns[i]]`` (``rows[i]`` without `columns`) added
    into group ``group[i]``, as a sparse group-indicator matrix times the rows (several times
    faster than ``np.add.reduceat``, and no reordered copy of the rows is made)."""
    from scipy import sparse

    columns = np.arange(len(group)) if columns is None else columns
    indicator = sparse.csr_matrix(
        (np.ones(len(group)), (group, columns)), shape=(n_groups, len(rows))
    )
    return np.asarray(indicator @ rows)


@dataclass
class _LayerSums:
    """One layer's running sums (see the module docstring), for `n_words` tracked words and
    `n_sentences` sentences."""

    word_unit_sum: np.ndarray
    word_vector_sum: np.ndarray
    word_context_square: np.ndarray
    word_n: np.ndarray
    word_context_pairs: np.ndarray
    word_n_with_repeats: np.ndarray
    unit_sum: np.ndarray
    sentence_square_by_dimension: np.ndarray
    n: int = 0
    same_sentence_pairs: int = 0
    sentence_n: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    sentence_intrasim: np.ndarray = field(default_factory=lambda: np.zeros(0))

    @classmethod
    def empty(cls, n_words: int, n_sentences: int, dim: int) -> _LayerSums:
        return cls(
            word_unit_sum=np.zeros((n_words, dim)),
            word_vector_sum=np.zeros((n_words, dim)),
            word_context_square=np.zeros(n_words),
            word_n=np.zeros(n_words, np.int64),
            word_context_pairs=np.zeros(n_words, np.int64),
            word_n_with_repeats=np.zeros(n_words, np.int64),
            unit_sum=np.zeros(dim),
            sentence_square_by_dimension=np.zeros(dim),
            sentence_n=np.zeros(n_sentences, np.int64),
            sentence_intrasim=np.full(n_sentences, np.nan),
        )


class StreamingAccumulator(ShardSetWriter):
    """A `shards.ShardSetWriter` (``write``, ``commit``, ``abort``, a context manager that
    aborts on leaving) whose files hold running sums and sampled rows instead of vectors.

    paths: state file of each layer, in the order of the blocks' first axis.
    word_id, sentence_id: (n_rows,) the occurrence index, rows sorted by sentence.
    indexed: (n_word_types,) bool, the words whose SelfSim, MEV and static vectors are
    wanted (default every word). sentence_copies: times the corpus repeats each sentence
    (by sentence_id; default once), for the words' ``n_with_repeats``.
    attributes: provenance recorded in every state file (as in a shard's).
    threads: layers summed at once (numpy releases the GIL for the arithmetic).

    Blocks must come in row order, each holding whole sentences; rows that are NaN or all
    zero (no vector) are skipped, as `measures.rows_with_vectors` skips them in a shard.
    """

    def __init__(
        self,
        paths: dict[int, str | os.PathLike],
        word_id: np.ndarray,
        sentence_id: np.ndarray,
        dim: int,
        attributes: dict[str, Any],
        settings: StreamingSettings,
        indexed: np.ndarray | None = None,
        sentence_copies: np.ndarray | None = None,
        threads: int = 1,
    ) -> None:
        self.layers = list(paths)
        self._threads, self._pool = threads, None
        self._final = {layer: Path(path) for layer, path in paths.items()}
        self._word_id = np.asarray(word_id, dtype=np.int64)
        self._sentence_id = np.asarray(sentence_id, dtype=np.int64)
        if len(self._word_id) != len(self._sentence_id):
            raise ValueError("word_id and sentence_id must have one entry per row")
        if np.any(np.diff(self._sentence_id) < 0):
            raise ValueError("the occurrence index's rows must be sorted by sentence")
        self.n_rows, self.dim, self.settings = len(self._word_id), int(dim), settings
        n_types = int(self._word_id.max(initial=-1)) + 1
        if indexed is None:
            indexed = np.ones(n_types, dtype=bool)
        indexed = np.asarray(indexed, dtype=bool)
        present = np.zeros(len(indexed), dtype=bool)
        present[self._word_id] = True
        self.word_ids = np.flatnonzero(indexed & present)
        self._slot = np.full(len(indexed), -1, dtype=np.int64)
        self._slot[self.word_ids] = np.arange(len(self.word_ids))
        n_sentences = int(self._sentence_id.max(initial=-1)) + 1
        self._copies = (
            np.ones(n_sentences, dtype=np.int64)
            if sentence_copies is None
            else np.asarray(sentence_copies, dtype=np.int64)
        )
        word_rows = word_sample_rows(
            self._word_id, indexed, settings.word_sample_size, settings.seed
        )
        baseline_rows = np.unique(np.concatenate(baseline_sample_draws(self.n_rows, settings)))
        self.kept_rows = np.union1d(word_rows, baseline_rows).astype(np.int64)
        self._in_word_sample = np.isin(self.kept_rows, word_rows)
        self._sums = {
            layer: _LayerSums.empty(len(self.word_ids), n_sentences, self.dim)
            for layer in self.layers
        }
        self._attributes = {
            **attributes,
            "format": FORMAT,
            "n_rows": self.n_rows,
            "dim": self.dim,
            "streaming": settings.as_dict(),
        }
        self._next_row = 0
        log.info(
            "streaming %d layers: %.3g GB of sums in memory, %.3g GB of %d sampled rows on disk",
            len(self.layers),
            len(self.layers) * len(self.word_ids) * self.dim * 16 / 1e9,
            len(self.layers) * len(self.kept_rows) * self.dim * 4 / 1e9,
            len(self.kept_rows),
        )
        for path in self._final.values():
            remove_stale_partials(path)
        self._partial = {layer: partial_path(path) for layer, path in self._final.items()}
        self._files: dict[int, h5py.File] = {}
        self._kept: dict[int, h5py.Dataset] = {}
        try:
            for layer in self.layers:
                handle = h5py.File(self._partial[layer], "w")
                self._files[layer] = handle
                handle.create_dataset("kept_rows", data=self.kept_rows)
                handle.create_dataset("in_word_sample", data=self._in_word_sample)
                self._kept[layer] = handle.create_dataset(
                    "kept_vectors",
                    shape=(len(self.kept_rows), self.dim),
                    dtype=np.float32,
                    chunks=(max(1, min(len(self.kept_rows), 4096)), self.dim)
                    if len(self.kept_rows)
                    else None,
                )
                handle.attrs.update(
                    _h5_safe({**self._attributes, "layer": layer, "complete": False})
                )
        except BaseException:
            self.abort()
            raise

    def write(self, first_row: int, block: np.ndarray) -> None:
        """Add rows ``first_row:first_row+n`` of every layer; block is (n_layers, n, dim) and
        holds whole sentences, the rows following the previous block's."""
        n = block.shape[1]
        if block.shape != (len(self.layers), n, self.dim):
            raise ValueError(f"block of shape {block.shape}, expected ({len(self.layers)}, n, d)")
        if first_row != self._next_row:
            raise ValueError(f"block starts at row {first_row}, expected {self._next_row}")
        end = first_row + n
        if end > self.n_rows:
            raise ValueError(f"block ends at row {end}, past the index's {self.n_rows} rows")
        sentence_id = self._sentence_id
        if n and (
            (first_row > 0 and sentence_id[first_row - 1] == sentence_id[first_row])
            or (end < self.n_rows and sentence_id[end - 1] == sentence_id[end])
        ):
            raise ValueError(f"rows {first_row}:{end} split a sentence between two blocks")
        low, high = np.searchsorted(self.kept_rows, [first_row, end])
        kept = self.kept_rows[low:high] - first_row
        for position, layer in enumerate(self.layers):
            if high > low:
                self._kept[layer][low:high] = np.asarray(block[position, kept], dtype=np.float32)
        jobs = [
            (self._sums[layer], block[position], first_row)
            for position, layer in enumerate(self.layers)
        ]
        if self._threads > 1 and len(jobs) > 1:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(
                    min(self._threads, len(jobs)), thread_name_prefix="stream"
                )
            list(self._pool.map(lambda job: self._add(*job), jobs))
        else:
            for job in jobs:
                self._add(*job)
        self._next_row = end

    def _add(self, sums: _LayerSums, rows: np.ndarray, first_row: int) -> None:
        valid = np.flatnonzero(measures.rows_with_vectors(rows))
        if len(valid) == 0:
            return
        # [f | u] side by side in float64, so that each group sum is one product
        both = np.empty((len(valid), 2 * self.dim))
        vectors, unit = both[:, : self.dim], both[:, self.dim :]
        vectors[:] = rows if len(valid) == len(rows) else rows[valid]
        norms = np.sqrt(np.einsum("ij,ij->i", vectors, vectors))
        np.divide(vectors, norms[:, None], out=unit)
        sentence = self._sentence_id[first_row + valid]
        # sentences: the layer's sums and each sentence's IntraSim
        starts = measures.run_starts(sentence)
        sizes = measures.group_sizes(starts, len(valid))
        sentence_sums = _group_sums(np.repeat(np.arange(len(starts)), sizes), len(starts), both)
        vector_sums, unit_sums = sentence_sums[:, : self.dim], sentence_sums[:, self.dim :]
        sums.unit_sum += unit_sums.sum(axis=0)
        sums.sentence_square_by_dimension += np.sum(unit_sums**2, axis=0)
        sums.n += len(valid)
        sums.same_sentence_pairs += int(np.sum(sizes**2))
        with np.errstate(invalid="ignore", divide="ignore"):
            intrasim = np.einsum("ij,ij->i", unit_sums, vector_sums) / (
                sizes * np.sqrt(np.einsum("ij,ij->i", vector_sums, vector_sums))
            )
        sums.sentence_intrasim[sentence[starts]] = intrasim
        sums.sentence_n[sentence[starts]] = sizes
        # words: rows of tracked words by (word, sentence), rows kept in order within each
        slot = self._slot[self._word_id[first_row + valid]]
        chosen = np.flatnonzero(slot >= 0)
        if len(chosen) == 0:
            return
        order = chosen[np.argsort(slot[chosen], kind="stable")]
        word_starts = measures.run_starts(slot[order])
        context_starts = measures.run_starts(slot[order], sentence[order])
        context_sizes = measures.group_sizes(context_starts, len(order))
        context_of = np.repeat(np.arange(len(context_starts)), context_sizes)
        context_sums = _group_sums(context_of, len(context_starts), both, order)
        context_word = np.searchsorted(word_starts, context_starts, side="right") - 1
        word_sums = _group_sums(context_word, len(word_starts), context_sums)
        slots = slot[order][word_starts]
        sums.word_vector_sum[slots] += word_sums[:, : self.dim]
        sums.word_unit_sum[slots] += word_sums[:, self.dim :]
        sums.word_context_square[slots] += np.bincount(
            context_word,
            weights=np.sum(context_sums[:, self.dim :] ** 2, axis=1),
            minlength=len(slots),
        )
        sums.word_context_pairs[slots] += np.bincount(
            context_word, weights=context_sizes**2, minlength=len(slots)
        ).astype(np.int64)
        sums.word_n[slots] += measures.group_sizes(word_starts, len(order))
        sums.word_n_with_repeats[slots] += np.add.reduceat(
            self._copies[sentence[order]], word_starts
        )

    def commit(self, attributes: dict[str, Any]) -> None:
        """Write every layer's sums with final `attributes`, mark the files complete, close
        and move each into place. Refused (ValueError) before every row was written."""
        if self._next_row != self.n_rows:
            raise ValueError(f"commit after {self._next_row} of {self.n_rows} rows")
        for layer in self.layers:
            handle = self._files[layer]
            sums = self._sums[layer]
            handle.create_dataset("word_id", data=self.word_ids)
            for name in (
                "word_unit_sum",
                "word_vector_sum",
                "word_context_square",
                "word_n",
                "word_context_pairs",
                "word_n_with_repeats",
                "unit_sum",
                "sentence_square_by_dimension",
                "sentence_n",
                "sentence_intrasim",
            ):
                handle.create_dataset(name, data=getattr(sums, name))
            counts = {"n_valid": sums.n, "same_sentence_pairs": sums.same_sentence_pairs}
            handle.attrs.update(_h5_safe(counts))
        self._stop_threads()
        super().commit(attributes)

    def abort(self) -> None:
        """Close and delete every state file not yet committed."""
        self._stop_threads()
        super().abort()

    def _stop_threads(self) -> None:
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None


@dataclass
class StreamingState:
    """One layer's state file: its attributes (provenance, ``layer``, ``streaming``
    settings, ``n_rows``, ``n_valid``, ``same_sentence_pairs``), its sums (see
    `StreamingAccumulator`) and its kept rows (``kept_rows`` sorted occurrence ids,
    ``kept_vectors`` float32, NaN where an occurrence had no vector; ``in_word_sample``
    marks the words' sample, the others are the MEV baseline's)."""

    attributes: dict[str, Any]
    word_id: np.ndarray
    sums: _LayerSums
    kept_rows: np.ndarray
    kept_vectors: np.ndarray
    in_word_sample: np.ndarray

    @property
    def settings(self) -> StreamingSettings:
        return StreamingSettings(**self.attributes["streaming"])


def load_state(
    path: str | os.PathLike,
    index_checksum: str | None = None,
    n_rows: int | None = None,
    expected: dict[str, Any] | None = None,
) -> StreamingState:
    """Read a state file, refusing (ShardMismatchError) one that is incomplete, was
    accumulated over another occurrence index or number of rows, or whose attributes
    differ from `expected`, as `shards.load_shard` refuses a shard."""
    path = Path(path)
    try:
        handle = h5py.File(path, "r")
    except OSError as error:
        raise ShardMismatchError(f"{path}: not a readable state file ({error})") from error
    with handle:
        attributes = _read_attributes(handle)
        if attributes.get("format") != FORMAT:
            raise ShardMismatchError(f"{path}: not a streaming state file ({FORMAT})")
        checks = dict(expected or {})
        if n_rows is not None:
            checks["n_rows"] = n_rows
        check_attributes(path, attributes, index_checksum, checks, what="state file")
        data = {name: handle[name][...] for name in handle}
    sums = _LayerSums(
        **{
            name: data[name]
            for name in _LayerSums.__dataclass_fields__
            if name not in ("n", "same_sentence_pairs")
        },
        n=int(attributes["n_valid"]),
        same_sentence_pairs=int(attributes["same_sentence_pairs"]),
    )
    return StreamingState(
        attributes=attributes,
        word_id=data["word_id"],
        sums=sums,
        kept_rows=data["kept_rows"],
        kept_vectors=data["kept_vectors"],
        in_word_sample=data["in_word_sample"],
    )


def _anisotropy(sums: _LayerSums) -> float:
    """(‖Σu‖² − Σ_s‖Σ_{i∈s}u_i‖²)/(N² − Σ_s n_s²), as `measures.anisotropy_baseline`."""
    pairs = float(sums.n) ** 2 - sums.same_sentence_pairs
    if pairs <= 0:
        return float("nan")
    return float((sums.unit_sum @ sums.unit_sum - sums.sentence_square_by_dimension.sum()) / pairs)


def _rogue_dimensions(sums: _LayerSums, top: int = 3) -> isotropy.RogueDimensions:
    """`isotropy.rogue_dimensions` from the sums: C_i = (S_i² − Σ_s S_{s,i}²)/(N² − Σ_s n_s²)."""
    pairs = float(sums.n) ** 2 - sums.same_sentence_pairs
    contributions = (sums.unit_sum**2 - sums.sentence_square_by_dimension) / pairs
    largest = np.argsort(-contributions, kind="stable")[:top]
    return isotropy.RogueDimensions(
        dimensions=tuple(int(i) for i in largest),
        contributions=tuple(float(c) for c in contributions[largest]),
        total=float(contributions.sum()),
    )


class _KeptRows:
    """The kept rows as if they were the whole layer, for `measures.explained_variance_baseline`:
    ``len`` is the index's row count and indexing by occurrence ids gives their vectors, the
    rows without a vector left out (a row that was not kept is an error)."""

    def __init__(self, rows: np.ndarray, vectors: np.ndarray, n_rows: int) -> None:
        self._rows, self._vectors, self._n_rows = rows, vectors, n_rows
        self.shape = (n_rows, vectors.shape[1])

    def __len__(self) -> int:
        return self._n_rows

    def __getitem__(self, index: np.ndarray) -> np.ndarray:
        index = np.asarray(index, dtype=np.int64)
        positions = np.minimum(np.searchsorted(self._rows, index), len(self._rows) - 1)
        if not np.array_equal(self._rows[positions], index):
            raise KeyError("a row outside the state's kept rows was asked for")
        matrix = self._vectors[positions]
        return matrix[measures.rows_with_vectors(matrix)]


def _sampled_groups(
    state: StreamingState, word_of_row: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The words' sampled rows with a vector, grouped by word (rows in occurrence order
    within each, as a shard's rows sorted by word and sentence): (vectors, position of each
    group's word in ``state.word_id``, group starts)."""
    chosen = np.flatnonzero(state.in_word_sample)
    chosen = chosen[measures.rows_with_vectors(state.kept_vectors[chosen])]
    words = word_of_row[state.kept_rows[chosen]]
    chosen = chosen[np.argsort(words, kind="stable")]
    words = word_of_row[state.kept_rows[chosen]]
    starts = measures.run_starts(words)
    positions = np.searchsorted(state.word_id, words[starts])
    return state.kept_vectors[chosen], positions, starts


def _check_settings(state: StreamingState, settings: analysis.MeasureSettings) -> None:
    drawn = state.settings
    for name in ("seed", "baseline_sample_size", "sample_replicates"):
        if getattr(drawn, name) != getattr(settings, name):
            raise ValueError(
                f"the state was sampled with {name} = {getattr(drawn, name)}, but the measure "
                f"settings give {getattr(settings, name)}; stream again with these settings"
            )


def measure_state(
    state: StreamingState,
    occurrences: pd.DataFrame,
    vocab: pd.DataFrame,
    settings: analysis.MeasureSettings,
) -> analysis.LayerMeasures:
    """The exact family of `analysis.measure_layer` from a layer's streamed state.

    Per-word table: the same columns (vocabulary columns, class, n, n_with_repeats,
    selfsim, mev, mev_centered and the adjusted values) less `NOT_STREAMED_COLUMNS`, plus
    ``n_sampled``, the occurrences behind a word's MEV (all of them when the word has at
    most ``word_sample_size``, and then MEV equals the shard's). Per-sentence table and
    summary as `analysis.measure_layer`'s, intervals from the same generators: with no
    missing vector and every word sampled whole, every streamed value and interval equals
    the shard path's. The summary's ``streaming`` says what was sampled and which measures
    the run lacks (`NOT_STREAMED`).

    occurrences: the occurrence index (its ``word_id``, to place the sampled rows).
    """
    _check_settings(state, settings)
    sums = state.sums
    n_rows = int(state.attributes["n_rows"])
    if len(occurrences) != n_rows:
        raise ValueError(f"{len(occurrences)} occurrences, but the state has {n_rows} rows")
    cosine = _anisotropy(sums)
    # per word
    columns = ["word", "count", "count_with_repeats", "n_contexts", "frequency_rank"]
    words = vocab.set_index("word_id").loc[state.word_id, columns].reset_index()
    words["word_class"] = [analysis.word_class(word) for word in words["word"]]
    words["n"] = sums.word_n
    words["n_with_repeats"] = sums.word_n_with_repeats
    n = sums.word_n.astype(np.float64)
    pairs = n**2 - sums.word_context_pairs
    with np.errstate(invalid="ignore", divide="ignore"):
        squared = np.einsum("ij,ij->i", sums.word_unit_sum, sums.word_unit_sum)
        words["selfsim"] = np.where(pairs > 0, (squared - sums.word_context_square) / pairs, np.nan)
    vectors, positions, starts = _sampled_groups(state, occurrences["word_id"].to_numpy())
    statistics = measures.first_component_statistics(vectors, starts)
    for column in ("mev", "mev_centered"):
        values = np.full(len(words), np.nan)
        values[positions] = getattr(statistics, column)
        words[column] = values
    sampled = np.zeros(len(words), dtype=np.int64)
    sampled[positions] = measures.group_sizes(starts, len(vectors))
    words["n_sampled"] = sampled
    words = words[words["n"] >= 2].reset_index(drop=True)
    # per sentence
    multi_word = np.flatnonzero(sums.sentence_n >= 2)
    sentences = pd.DataFrame(
        {
            "sentence_id": multi_word.astype(occurrences["sentence_id"].dtype),
            "n_words": sums.sentence_n[multi_word],
            "intrasim": sums.sentence_intrasim[multi_word],
            "intrasim_adjusted": sums.sentence_intrasim[multi_word] - cosine,
        }
    )
    # baselines: the MEV baseline's samples were kept as they streamed by
    kept = _KeptRows(state.kept_rows, state.kept_vectors, n_rows)
    baselines = {"cosine": analysis.Baseline(cosine)}
    for name in ("mev", "mev_centered"):
        baselines[name] = analysis.Baseline(
            *measures.explained_variance_baseline(
                kept,
                settings.baseline_sample_size,
                np.random.default_rng([settings.seed, 1]),
                centered=name == "mev_centered",
                n_draws=settings.sample_replicates,
            )
        )
    streamed = {column: spec for column, spec in analysis.WORD_MEASURES.items() if column in words}
    for column, (_, family) in streamed.items():
        words[f"{column}_adjusted"] = words[column] - baselines[family].value
    # summary, drawing from the bootstrap generator as measure_layer does
    rng = np.random.default_rng([settings.seed, 2])
    results = {}
    for column, (name, family) in analysis.WORD_MEASURES.items():
        if column in streamed:
            results[name] = analysis._summarize(words[column], baselines[family], settings, rng)
        else:  # the shard path's draws for a measure not streamed, so later ones match:
            # as many as it has values (selfsim[paper]: every word; the TruncatedSVD ratio:
            # those with variance, as mev_centered)
            proxy = words["n"] if column == "selfsim_paper" else words["mev_centered"]
            n_values = int(proxy.notna().sum())
            measures.bootstrap_means(np.zeros(n_values), settings.bootstrap_resamples, rng)
    results["intrasim"] = analysis._summarize(
        sentences["intrasim"], baselines["cosine"], settings, rng
    )
    for group in ("stopword", "content"):
        results[f"selfsim[{group}]"] = analysis._summarize(
            words.loc[words["word_class"] == group, "selfsim"], baselines["cosine"], settings, rng
        )
    results["anisotropy"] = {"raw": cosine, "n": sums.n}
    if float(sums.n) ** 2 > sums.same_sentence_pairs:
        rogue = _rogue_dimensions(sums)
        for k in range(1, 4):
            results[f"rogue_share[{k}]"] = {
                "raw": rogue.share(k),
                "n": sums.n,
                "dimensions": ",".join(str(dimension) for dimension in rogue.dimensions[:k]),
            }
    if words["selfsim"].notna().sum() >= 3:
        rho = measures.spearman_correlation(words["selfsim"], words["count"])
        results["selfsim~frequency"] = {"raw": rho, "n": int(words["selfsim"].notna().sum())}
    summary = {
        "n_occurrences": n_rows,
        "n_missing": n_rows - sums.n,
        "baseline_sample_size": settings.baseline_sample_size,
        "bootstrap_resamples": settings.bootstrap_resamples,
        "sample_replicates": settings.sample_replicates,
        "isoscore_shrinkage": settings.isoscore_shrinkage,
        "confidence": settings.confidence,
        "seed": settings.seed,
        "measures": results,
        "streaming": {
            **state.settings.as_dict(),
            "words_sampled_whole": int(np.sum(words["n_sampled"] == words["n"])),
            "not_streamed": list(NOT_STREAMED),
            "not_streamed_columns": list(NOT_STREAMED_COLUMNS),
        },
    }
    return analysis.LayerMeasures(words=words, sentences=sentences, summary=summary)


def static_vectors_from_state(
    state: StreamingState, occurrences: pd.DataFrame, vocab: pd.DataFrame, method: str
) -> tuple[list[str], np.ndarray]:
    """`static.static_vectors` of the state's words: ``pc1`` the first principal direction
    of each word's sampled occurrences (of all of them when it has at most
    ``word_sample_size``), ``mean`` the exact mean of all its occurrence vectors.

    Returns the words in vocabulary order and an (n_words, d) float32 matrix.
    """
    from contextuality.static import METHODS, principal_directions_per_group

    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    words = vocab.set_index("word_id").loc[:, "word"]
    if method == "mean":
        present = np.flatnonzero(state.sums.word_n > 0)
        result = state.sums.word_vector_sum[present] / state.sums.word_n[present, None]
    else:
        vectors, present, starts = _sampled_groups(state, occurrences["word_id"].to_numpy())
        result = principal_directions_per_group(np.asarray(vectors, np.float64), starts)
    return words.loc[state.word_id[present]].tolist(), result.astype(np.float32)


def layer_state_paths(directory: str | os.PathLike, layers: Sequence[int]) -> dict[int, Path]:
    """Where a model's state files go: ``<directory>/layer_<L>.state.h5``."""
    return {layer: Path(directory) / f"layer_{layer}.state.h5" for layer in layers}
