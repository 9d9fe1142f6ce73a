"""How an extraction's sentences are cut: into segments, and segments into parts.

A *segment* is a run of consecutive sentences holding about ``segment_words`` units (shard
rows): the unit in which inputs are encoded, batches planned, and vectors written. A
*part* is a contiguous range of segments run as a job of its own (``extraction.partitions``
in the workflow), so that a large corpus spreads over GPUs or nodes. Parts are cut only
between segments, so a part runs exactly the batches a whole extraction runs for its
sentences. `plan_extraction` settles both before any forward pass.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from contextuality.backends.base import LoadedModel
from contextuality.errors import ConfigError

SEGMENT_WORDS = 16_384  # at least this many units per segment
SEGMENT_BYTES = 256 * 2**20  # of float16 vectors, for the default size of a segment
# On a GPU, batches of 32,768 tokens: STS's sentences pad 1.13 times in segments of
# 65,536 words against 1.27 in 16,384 (`forward.plan_batches`;
# bench/results/batch-padding-sts.md), and a segment lives in GPU memory and in two pinned
# host buffers, so at most 4 GiB of vectors.
GPU_SEGMENT_WORDS = 65_536
GPU_SEGMENT_BYTES = 4 * 2**30


def default_segment_words(n_layers: int, dim: int, device_type: str = "cpu") -> int:
    """Units per segment: on the CPU as many as 256 MiB of float16 vectors of `n_layers`
    layers of width `dim` hold, at least 16,384; on a GPU 65,536, fewer where that is more
    than 4 GiB of vectors, at least 16,384. Batches are planned within a segment, so a
    segment of more sentences pads less; the bytes bound keeps the memory of the few
    segments in flight small. Independent of the storage dtype, so that a float32 retry
    and every part of a partitioned extraction run the same segments."""
    row_bytes = n_layers * dim * 2
    if device_type == "cuda":
        return max(SEGMENT_WORDS, min(GPU_SEGMENT_WORDS, GPU_SEGMENT_BYTES // row_bytes))
    return max(SEGMENT_WORDS, SEGMENT_BYTES // row_bytes)


def segment_words_of(loaded: LoadedModel, layers: tuple[int, ...]) -> int:
    """The units per segment an extraction of `layers` runs in: the model's
    ``segment_words`` setting, else `default_segment_words` for the device it is on."""
    if loaded.spec.segment_words:
        return loaded.spec.segment_words
    device_type = next(loaded.model.parameters()).device.type
    return default_segment_words(len(layers), loaded.hidden_size, device_type)


def segments(rows_per_sentence: np.ndarray, segment_words: int) -> list[tuple[int, int]]:
    """Contiguous sentence ranges [start, end) holding about `segment_words` rows each (a
    sentence with more rows than that is a segment alone)."""
    found, start, filled = [], 0, 0
    for sentence, n_words in enumerate(rows_per_sentence):
        if filled and filled + n_words > segment_words:
            found.append((start, sentence))
            start, filled = sentence, 0
        filled += int(n_words)
    found.append((start, len(rows_per_sentence)))
    return found


def partition_bounds(
    rows_per_sentence: np.ndarray, n_parts: int, segment_words: int = SEGMENT_WORDS
) -> list[tuple[int, int]]:
    """Split the sentences into `n_parts` contiguous ranges [start, end), balanced by rows.

    rows_per_sentence: (n_sentences,) units (shard rows) of each sentence, in corpus order.
    Parts are cut only where the extraction starts a segment (`segments` with
    `segment_words`), each cut at the segment start nearest to k·total/n_parts rows: a part
    then runs exactly the batches the whole extraction runs for its sentences, so its rows
    are the whole extraction's rows, bit for bit wherever the forward pass is deterministic
    (a cut inside a segment would regroup its batches, and other padding and batch shapes
    change the last bits of a forward pass). Each part holds total/n_parts rows give or
    take one segment's rows; ``segment_words=1`` cuts between any two sentences.

    Returns exactly `n_parts` ranges, in order, covering 0..n_sentences. When there are
    fewer segments than parts, some parts are empty (start == end); the extraction of an
    empty part writes shards of 0 rows. Raises ConfigError when `n_parts` is not an
    integer ≥ 1.
    """
    if isinstance(n_parts, bool) or not isinstance(n_parts, int | np.integer) or n_parts < 1:
        raise ConfigError(f"the number of partitions must be an integer of at least 1: {n_parts!r}")
    counts = np.asarray(rows_per_sentence, dtype=np.int64)
    if counts.ndim != 1 or (counts < 0).any():
        raise ValueError("rows_per_sentence must be a 1-D array of non-negative counts")
    cuts = np.array([start for start, _ in segments(counts, segment_words)] + [len(counts)])
    before = np.concatenate([[0], np.cumsum(counts)])[cuts]  # rows before each cut
    # Integer arithmetic: cut k is the one whose n_parts·rows is nearest k·total (ties: later).
    scaled = before * n_parts
    targets = np.arange(1, n_parts, dtype=np.int64) * int(before[-1])
    above = np.minimum(np.searchsorted(scaled, targets, side="left"), len(cuts) - 1)
    below = np.maximum(above - 1, 0)
    nearer_below = targets - scaled[below] < scaled[above] - targets
    edges = [0, *cuts[np.where(nearer_below, below, above)].tolist(), len(counts)]
    return [(int(edges[k]), int(edges[k + 1])) for k in range(n_parts)]


def part_sentences(
    rows_per_sentence: np.ndarray, part: int, n_parts: int, segment_words: int = SEGMENT_WORDS
) -> tuple[int, int]:
    """The sentence range [start, end) of part `part` (0-based) of `n_parts`
    (`partition_bounds`); ConfigError for a part outside 0..n_parts−1."""
    bounds = partition_bounds(rows_per_sentence, n_parts, segment_words)
    if isinstance(part, bool) or not isinstance(part, int | np.integer) or not 0 <= part < n_parts:
        raise ConfigError(f"part {part!r} of {n_parts}: parts are numbered 0 to {n_parts - 1}")
    return bounds[part]


@dataclass(frozen=True)
class ExtractionPlan:
    """What one extraction job runs: its layers, its sentences cut into segments, its rows.

    row_offsets: (n_sentences + 1,) first row of each sentence of the whole corpus, then
    the number of rows. segments: the sentence ranges this job runs, in order. part,
    n_parts: which part of a partitioned extraction (0 of 1: the whole corpus).
    """

    layers: tuple[int, ...]
    row_offsets: np.ndarray
    segments: list[tuple[int, int]]
    first_sentence: int
    end_sentence: int
    segment_words: int
    part: int = 0
    n_parts: int = 1

    @property
    def first_row(self) -> int:
        """The occurrence id of the job's first row."""
        return int(self.row_offsets[self.first_sentence])

    @property
    def n_rows(self) -> int:
        """The rows the job writes."""
        return int(self.row_offsets[self.end_sentence]) - self.first_row

    @property
    def partitioned(self) -> bool:
        return (self.part, self.n_parts) != (0, 1)

    def part_attributes(self) -> dict[str, Any]:
        """What a part's shards and meta.json record of it (nothing for a whole extraction):
        ``part``, ``n_parts``, ``first_row``, ``n_rows_total``, ``first_sentence``,
        ``end_sentence`` and ``segment_words``; `storage.shards.load_shard_parts` gathers
        the parts by them."""
        if not self.partitioned:
            return {}
        return {
            "part": self.part,
            "n_parts": self.n_parts,
            "first_row": self.first_row,
            "n_rows_total": int(self.row_offsets[-1]),
            "first_sentence": self.first_sentence,
            "end_sentence": self.end_sentence,
            "segment_words": self.segment_words,
        }


def plan_extraction(
    loaded: LoadedModel,
    rows_per_sentence: np.ndarray,
    layers: tuple[int, ...],
    part: int = 0,
    n_parts: int = 1,
) -> ExtractionPlan:
    """The `ExtractionPlan` of part `part` of `n_parts` of an extraction of `layers`, for
    sentences of `rows_per_sentence` units (from the occurrence index). A model that must
    read the corpus as one sequence (`LoadedModel.sequential`) cannot be partitioned."""
    segment_words = segment_words_of(loaded, layers)
    counts = np.asarray(rows_per_sentence, dtype=np.int64)
    first, end = part_sentences(counts, part, n_parts, segment_words)
    if loaded.sequential and n_parts > 1:
        raise ConfigError(
            f"model {loaded.spec.name} carries its states from sentence to sentence "
            "(lstm_states: carried), so it runs the corpus as one sequence and cannot be "
            "extracted in parts"
        )
    return ExtractionPlan(
        layers=tuple(layers),
        row_offsets=np.concatenate([[0], np.cumsum(counts)]),
        segments=[
            (start, stop)
            for start, stop in segments(counts, segment_words)
            if first <= start < stop <= end
        ],
        first_sentence=first,
        end_sentence=end,
        segment_words=segment_words,
        part=part,
        n_parts=n_parts,
    )
