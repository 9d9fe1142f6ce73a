"""The streaming sink: running sums and sampled rows of each layer, in place of shards.

A `StreamingAccumulator` takes the place of the shards' writer in the extraction
(`extraction.run.run_extraction`) and keeps, per layer, the sums `state.LayerSums` lists,
in float64, and the rows of two seeded samples drawn from the occurrence index before the
forward pass: at most ``word_sample_size`` occurrences per indexed word (for MEV and the
static vectors; every occurrence of a word that has no more), and the MEV baseline's
samples, drawn exactly as `analysis.measure_layer` draws them from a shard. The sums are
torch tensors on the accumulator's device: where the model runs on a GPU, on the GPU, the
segments taken as the extraction assembled them there (``takes_device_tensors``), so
that only the final state and the sampled rows reach the host. State: O(words × d) per
layer in device memory; the kept rows go straight to the layer's state file as they
arrive.
"""

from __future__ import annotations

import logging
import os
from typing import Any

import h5py
import numpy as np

from contextuality.configuration.random_streams import generator
from contextuality.rows import group_sizes, run_starts
from contextuality.storage.hdf5 import (
    LayerFiles,
    encode_attributes,
    raise_if_disk_full,
    record_digests,
)
from contextuality.storage.shards import check_free_space
from contextuality.streaming.state import FORMAT, StreamingSettings
from contextuality.streaming.sums import DeviceLayerSums, RowIndex

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
    that the measures equal those of shards. device: where the sums are kept and added
    (a torch device; on CUDA, ``write`` takes the segments as device tensors).
    rows: the index rows [first, end) this accumulator sums as one part of a partitioned
    extraction (`merge.merge_parts`; None: all, as one job), written from row 0 on: the
    part's own rows, of the whole index's samples those that fall among them. A part's
    files hold its sums' limbs and its ``part_rows`` whatever its rows, all or none (a
    part of no rows writes empty sums, which merge as nothing).

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
        device: str = "cpu",
        rows: tuple[int, int] | None = None,
    ) -> None:
        import torch

        self.layers = list(paths)
        self.dtype = str(np.dtype(dtype))
        self.device = torch.device(device)
        self.takes_device_tensors = self.device.type == "cuda"
        self._word_id = np.asarray(word_id, dtype=np.int64)
        self._sentence_id = np.asarray(sentence_id, dtype=np.int64)
        if len(self._word_id) != len(self._sentence_id):
            raise ValueError("word_id and sentence_id must have one entry per row")
        if np.any(np.diff(self._sentence_id) < 0):
            raise ValueError("the occurrence index's rows must be sorted by sentence")
        self.n_rows, self.dim, self.settings = len(self._word_id), int(dim), settings
        self.first_row, self.end_row = rows if rows is not None else (0, self.n_rows)
        self.part = rows is not None  # a part's files record its rows and the sums' limbs
        indexed = self._track_words(indexed)
        n_sentences = int(self._sentence_id.max(initial=-1)) + 1
        copies = (
            np.ones(n_sentences, dtype=np.int64)
            if sentence_copies is None
            else np.asarray(sentence_copies, dtype=np.int64)
        )
        word_rows = word_sample_rows(
            self._word_id, indexed, settings.word_sample_size, settings.seed
        )
        baseline_rows = np.unique(np.concatenate(baseline_sample_draws(self.n_rows, settings)))
        kept = np.union1d(word_rows, baseline_rows).astype(np.int64)
        kept = kept[(kept >= self.first_row) & (kept < self.end_row)]
        self.kept_rows, self._in_word_sample = kept, np.isin(kept, word_rows)
        self.index = RowIndex(
            slot=torch.as_tensor(self._slot[self._word_id], device=self.device),
            sentence=torch.as_tensor(self._sentence_id, device=self.device),
            copies=torch.as_tensor(copies, device=self.device),
            n_words=len(self.word_ids),
            n_sentences=n_sentences,
            dim=self.dim,
        )
        self._sums = {layer: DeviceLayerSums(self.index) for layer in self.layers}
        self._next_row = self.first_row
        self._buffer = None
        log.info(
            "streaming %d layers on %s: %.3g GB of sums, %.3g GB of %d sampled rows on disk",
            len(self.layers),
            self.device,
            len(self.layers) * len(self.word_ids) * self.dim * 32 / 1e9,
            len(self.layers) * len(self.kept_rows) * self.dim * np.dtype(self.dtype).itemsize / 1e9,
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
        """Bytes the state files take: per layer, the kept rows (in `dtype`) and the sums
        (two float64 per tracked word and dimension, each also as two int64 limbs; a few
        per sentence)."""
        kept = len(self.kept_rows) * self.dim * np.dtype(self.dtype).itemsize
        per_layer = kept + 6 * len(self.word_ids) * self.dim * 8
        return len(self.layers) * (per_layer + self.index.n_sentences * 16)

    def _open_files(self, paths: dict[int, str | os.PathLike], attributes: dict[str, Any]) -> None:
        """Create every layer's state file under its temporary name, with the kept rows,
        once the disk is known to hold them (`shards.check_free_space`)."""
        name = str(attributes.get("model", "model"))

        def check_space(directory: os.PathLike) -> None:
            check_free_space(directory, self.state_bytes(), name, None, what="state files")

        recorded = state_attributes(attributes, self.n_rows, self.dim, self.settings)
        if self.part:
            recorded["part_rows"] = self.end_row - self.first_row  # merge.check_parts
        self._files = LayerFiles(paths, recorded, check_space)
        self._kept: dict[int, h5py.Dataset] = {}
        try:
            for layer, handle in self._files.files.items():
                self._kept[layer] = create_kept_datasets(
                    handle, self.kept_rows, self._in_word_sample, self.dim, self.dtype
                )
        except BaseException:
            self.abort()
            raise

    def _check_segment(self, first_row: int, shape: tuple[int, ...]) -> int:
        """Refuse (ValueError) a segment of another shape, out of order, past the rows or
        splitting a sentence (`first_row`: of the index); its end row."""
        n = shape[1]
        if tuple(shape) != (len(self.layers), n, self.dim):
            raise ValueError(
                f"a segment of shape {tuple(shape)}, expected ({len(self.layers)}, n, d)"
            )
        if first_row != self._next_row:
            raise ValueError(f"a segment starts at row {first_row}, expected {self._next_row}")
        end = first_row + n
        if end > self.end_row:
            raise ValueError(f"a segment ends at row {end}, past the rows' end {self.end_row}")
        sentence_id = self._sentence_id
        if n and (
            (first_row > 0 and sentence_id[first_row - 1] == sentence_id[first_row])
            or (end < self.n_rows and sentence_id[end - 1] == sentence_id[end])
        ):
            raise ValueError(f"rows {first_row}:{end} split a sentence between two segments")
        return end

    def write(self, first_row: int, vectors: Any) -> None:
        """Add rows ``first_row:first_row+n`` of every layer (counted from the accumulator's
        first row); vectors is (n_layers, n, dim), a numpy array or a torch tensor (on the
        accumulator's device, or moved there), and holds whole sentences, the rows following
        the previous segment's."""
        import torch

        first_row += self.first_row
        end = self._check_segment(first_row, tuple(vectors.shape))
        vectors = torch.as_tensor(vectors).to(self.device)
        low, high = np.searchsorted(self.kept_rows, [first_row, end])
        if high > low:
            kept = torch.as_tensor(self.kept_rows[low:high] - first_row, device=self.device)
            sampled = vectors[:, kept].to(getattr(torch, self.dtype)).cpu().numpy()
            for position, layer in enumerate(self.layers):
                self._kept[layer][low:high] = sampled[position]
        for position, layer in enumerate(self.layers):
            both, valid = self._unit_rows(vectors[position])
            self._sums[layer].add(both, valid, first_row)
        self._next_row = end

    def _unit_rows(self, rows: Any) -> tuple[Any, Any]:
        """A layer's rows (n, d) as float64 [f | u] (n, 2d), u = f/‖f‖, in a buffer kept
        from one segment to the next (a fresh one, zeroed page by page by the system, cost
        more than the sums), and which rows count: norm finite and positive (the row
        finite, not all zero)."""
        import torch

        n, d = rows.shape
        if self._buffer is None or self._buffer.shape[0] < n:
            self._buffer = torch.empty((n, 2 * d), dtype=torch.float64, device=self.device)
        both = self._buffer[:n]
        both[:, :d].copy_(rows.to(torch.float32) if rows.dtype == torch.float16 else rows)
        norms = torch.linalg.vector_norm(both[:, :d], dim=1)
        torch.div(both[:, :d], norms[:, None], out=both[:, d:])
        return both, torch.isfinite(norms) & (norms > 0)

    def commit(self, attributes: dict[str, Any]) -> None:
        """Write every layer's sums with final `attributes`, mark the files complete, close
        and move each into place. Refused (ValueError) before every row was written."""
        if self._next_row != self.end_row:
            raise ValueError(
                f"commit after row {self._next_row} of rows {self.first_row}:{self.end_row}"
            )
        for layer in self.layers:
            write_sums(self._files.files[layer], self.word_ids, self._sums[layer], self.part)
        self._files.commit(attributes)

    def abort(self) -> None:
        """Close and delete every state file not yet committed."""
        self._files.abort()

    def __enter__(self) -> StreamingAccumulator:
        return self

    def __exit__(self, kind, value, traceback) -> None:
        self.abort()
        if value is not None:
            raise_if_disk_full(value, self._files.directory)


def state_attributes(
    attributes: dict[str, Any], n_rows: int, dim: int, settings: StreamingSettings
) -> dict[str, Any]:
    """A state file's attributes: the provenance, its format, the index's rows, the width
    and the streaming settings."""
    return {
        **attributes,
        "format": FORMAT,
        "n_rows": n_rows,
        "dim": dim,
        "streaming": settings.as_dict(),
    }


def create_kept_datasets(
    handle: h5py.File, kept_rows: np.ndarray, in_word_sample: np.ndarray, dim: int, dtype: str
) -> h5py.Dataset:
    """A state file's sampled rows (``kept_rows``, ``in_word_sample``) and the
    ``kept_vectors`` dataset that their vectors go into, returned: in `dtype`, the one
    the vectors were stored as before they were summed (float16 unless it overflowed), so
    that the rows are exact and take the bytes a shard's would."""
    handle.create_dataset("kept_rows", data=kept_rows)
    handle.create_dataset("in_word_sample", data=in_word_sample)
    return handle.create_dataset(
        "kept_vectors",
        shape=(len(kept_rows), dim),
        dtype=np.dtype(dtype),
        chunks=(max(1, min(len(kept_rows), 4096)), dim) if len(kept_rows) else None,
    )


def write_sums(
    handle: h5py.File, word_ids: np.ndarray, sums: DeviceLayerSums, limbs: bool = False
) -> None:
    """A layer's sums into its state file, with their counts and every dataset's digest
    (with `limbs`, each exact sum's two limbs too: a part's file, to merge)."""
    handle.create_dataset("word_id", data=word_ids)
    for name, values in sums.arrays(limbs).items():
        handle.create_dataset(name, data=values)
    handle.attrs.update(encode_attributes(sums.totals_attributes()))
    record_digests(handle)
