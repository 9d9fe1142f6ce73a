"""The streaming sink: running sums and sampled rows of each layer, in place of shards.

A `StreamingAccumulator` takes the place of the shards' writer in the extraction
(`extraction.run.run_extraction`) and keeps, per layer, the sums `state.LayerSums` lists,
in float64, and the rows of two seeded samples drawn from the occurrence index before the
forward pass: at most ``word_sample_size`` occurrences per indexed word (for MEV and the
static vectors; every occurrence of a word that has no more), and the MEV baseline's
samples, drawn exactly as `analysis.measure_layer` draws them from a shard. State: O(words
× d) per layer in memory; the kept rows go straight to the layer's state file as they
arrive.
"""

from __future__ import annotations

import logging
import os
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import h5py
import numpy as np

from contextuality.measures.rows import group_sizes, rows_with_vectors, run_starts
from contextuality.random_streams import generator
from contextuality.storage.hdf5 import (
    LayerFiles,
    encode_attributes,
    raise_if_disk_full,
    record_digests,
)
from contextuality.storage.shards import check_free_space
from contextuality.streaming.state import FORMAT, LayerSums, StreamingSettings

log = logging.getLogger(__name__)


def word_sample_rows(
    word_id: np.ndarray, tracked: np.ndarray, sample_size: int, seed: int
) -> np.ndarray:
    """Rows (sorted) of a seeded uniform sample without replacement of at most `sample_size`
    occurrences of each word with ``tracked[word]``; every occurrence of a word that has no
    more. Each row gets a key from the word-sample stream whatever its word, and a word's
    sample is its rows with the smallest keys, so one word's sample does not depend on which
    other words are tracked."""
    word_id = np.asarray(word_id, dtype=np.int64)
    keys = generator(seed, "word_sample").random(len(word_id))
    rows = np.flatnonzero(np.asarray(tracked, dtype=bool)[word_id])
    order = rows[np.lexsort((keys[rows], word_id[rows]))]
    starts = run_starts(word_id[order])
    sizes = group_sizes(starts, len(order))
    rank = np.arange(len(order)) - np.repeat(starts, sizes)
    return np.sort(order[rank < sample_size])


def baseline_sample_draws(n_rows: int, settings: StreamingSettings) -> list[np.ndarray]:
    """The rows of the MEV baseline's 1 + sample_replicates samples, in the order and from
    the generator of `equations.explained_variance_baseline` as `analysis` calls it."""
    rng = generator(settings.seed, "mev_baseline")
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


class StreamingAccumulator:
    """An extraction's sink (`extraction.run.Sink`: ``write``, ``commit``, ``abort``, a
    context manager that aborts on leaving) whose files hold running sums and sampled rows
    instead of vectors, one state file per layer (`state.load_state` reads them).

    paths: state file of each layer, in the order of the segments' first axis.
    word_id, sentence_id: (n_rows,) the occurrence index, rows sorted by sentence.
    indexed: (n_word_types,) bool, the words whose SelfSim, MEV and static vectors are
    wanted (default every word). sentence_copies: times the corpus repeats each sentence
    (by sentence_id; default once), for the words' ``n_with_repeats``.
    attributes: provenance recorded in every state file (as in a shard's).
    dtype: what the vectors are stored as before they are summed (float16 by default), so
    that the measures equal those of shards. threads: layers summed at once (numpy releases
    the GIL for the arithmetic).

    Segments must come in row order, each holding whole sentences; rows that are NaN or all
    zero (no vector) are skipped, as `rows.rows_with_vectors` skips them in a shard.
    """

    bytes_to_write = 0  # the sampled rows aside: their size is logged

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
        dtype: str = "float16",
        threads: int = 1,
    ) -> None:
        self.layers = list(paths)
        self.dtype = str(np.dtype(dtype))
        self._threads, self._pool = threads, None
        self._word_id = np.asarray(word_id, dtype=np.int64)
        self._sentence_id = np.asarray(sentence_id, dtype=np.int64)
        if len(self._word_id) != len(self._sentence_id):
            raise ValueError("word_id and sentence_id must have one entry per row")
        if np.any(np.diff(self._sentence_id) < 0):
            raise ValueError("the occurrence index's rows must be sorted by sentence")
        self.n_rows, self.dim, self.settings = len(self._word_id), int(dim), settings
        indexed = self._track_words(indexed)
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
            layer: LayerSums.empty(len(self.word_ids), n_sentences, self.dim)
            for layer in self.layers
        }
        self._next_row = 0
        log.info(
            "streaming %d layers: %.3g GB of sums in memory, %.3g GB of %d sampled rows on disk",
            len(self.layers),
            len(self.layers) * len(self.word_ids) * self.dim * 16 / 1e9,
            len(self.layers) * len(self.kept_rows) * self.dim * 4 / 1e9,
            len(self.kept_rows),
        )
        self._open_files(paths, attributes)

    def _track_words(self, indexed: np.ndarray | None) -> np.ndarray:
        """Number the tracked words (``word_ids``, their ``_slot``) and return the mask."""
        n_types = int(self._word_id.max(initial=-1)) + 1
        indexed = np.ones(n_types, dtype=bool) if indexed is None else np.asarray(indexed, bool)
        present = np.zeros(len(indexed), dtype=bool)
        present[self._word_id] = True
        self.word_ids = np.flatnonzero(indexed & present)
        self._slot = np.full(len(indexed), -1, dtype=np.int64)
        self._slot[self.word_ids] = np.arange(len(self.word_ids))
        return indexed

    def state_bytes(self) -> int:
        """Bytes the state files take: per layer, the kept rows (float32) and the sums
        (float64 per tracked word and dimension, twice; a few per sentence)."""
        n_sentences = len(self._copies)
        per_layer = len(self.kept_rows) * self.dim * 4 + 2 * len(self.word_ids) * self.dim * 8
        return len(self.layers) * (per_layer + n_sentences * 16)

    def _open_files(self, paths: dict[int, str | os.PathLike], attributes: dict[str, Any]) -> None:
        """Create every layer's state file under its temporary name, with the kept rows,
        once the disk is known to hold them (`shards.check_free_space`)."""
        name = str(attributes.get("model", "model"))

        def check_space(directory: os.PathLike) -> None:
            check_free_space(directory, self.state_bytes(), name, None, what="state files")

        self._files = LayerFiles(
            paths,
            {
                **attributes,
                "format": FORMAT,
                "n_rows": self.n_rows,
                "dim": self.dim,
                "streaming": self.settings.as_dict(),
            },
            check_space,
        )
        self._kept: dict[int, h5py.Dataset] = {}
        try:
            for layer, handle in self._files.files.items():
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
        except BaseException:
            self.abort()
            raise

    def write(self, first_row: int, vectors: np.ndarray) -> None:
        """Add rows ``first_row:first_row+n`` of every layer; vectors is (n_layers, n, dim)
        and
        holds whole sentences, the rows following the previous segment's."""
        n = vectors.shape[1]
        if vectors.shape != (len(self.layers), n, self.dim):
            raise ValueError(
                f"a segment of shape {vectors.shape}, expected ({len(self.layers)}, n, d)"
            )
        if first_row != self._next_row:
            raise ValueError(f"a segment starts at row {first_row}, expected {self._next_row}")
        end = first_row + n
        if end > self.n_rows:
            raise ValueError(f"a segment ends at row {end}, past the index's {self.n_rows} rows")
        sentence_id = self._sentence_id
        if n and (
            (first_row > 0 and sentence_id[first_row - 1] == sentence_id[first_row])
            or (end < self.n_rows and sentence_id[end - 1] == sentence_id[end])
        ):
            raise ValueError(f"rows {first_row}:{end} split a sentence between two segments")
        low, high = np.searchsorted(self.kept_rows, [first_row, end])
        kept = self.kept_rows[low:high] - first_row
        for position, layer in enumerate(self.layers):
            if high > low:
                self._kept[layer][low:high] = np.asarray(vectors[position, kept], dtype=np.float32)
        jobs = [
            (self._sums[layer], vectors[position], first_row)
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

    def _add(self, sums: LayerSums, rows: np.ndarray, first_row: int) -> None:
        valid = np.flatnonzero(rows_with_vectors(rows))
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
        starts = run_starts(sentence)
        sizes = group_sizes(starts, len(valid))
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
        word_starts = run_starts(slot[order])
        context_starts = run_starts(slot[order], sentence[order])
        context_sizes = group_sizes(context_starts, len(order))
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
        sums.word_n[slots] += group_sizes(word_starts, len(order))
        sums.word_n_with_repeats[slots] += np.add.reduceat(
            self._copies[sentence[order]], word_starts
        )

    def commit(self, attributes: dict[str, Any]) -> None:
        """Write every layer's sums with final `attributes`, mark the files complete, close
        and move each into place. Refused (ValueError) before every row was written."""
        if self._next_row != self.n_rows:
            raise ValueError(f"commit after {self._next_row} of {self.n_rows} rows")
        for layer in self.layers:
            handle = self._files.files[layer]
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
            handle.attrs.update(encode_attributes(counts))
            record_digests(handle)
        self._stop_threads()
        self._files.commit(attributes)

    def abort(self) -> None:
        """Close and delete every state file not yet committed."""
        self._stop_threads()
        self._files.abort()

    def __enter__(self) -> StreamingAccumulator:
        return self

    def __exit__(self, kind, value, traceback) -> None:
        self.abort()
        if value is not None:
            raise_if_disk_full(value, self._files.directory)

    def _stop_threads(self) -> None:
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None
