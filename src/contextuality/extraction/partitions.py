"""How an extraction's sentences are cut: into parts, and parts into segments.

A *part* is a contiguous range of sentences run as a job of its own
(``extraction.partitions`` in the workflow), so that a large corpus spreads over GPUs or
nodes; parts are balanced by rows and cut between sentences (`partition_bounds`), so that
every part holds rows whatever the corpus's size. A *segment* is a run of consecutive
sentences holding about ``segment_words`` units (shard rows): the unit in which inputs are
encoded, batches planned, and vectors written. A part runs the whole extraction's segments
clipped to its sentences (`part_segments`): a segment never crosses a part's boundary, and
only the segments a cut crosses run other batches than one job runs. `plan_extraction`
settles both before any forward pass.
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


def segment_words_of(loaded: LoadedModel) -> int:
    """The units per segment an extraction runs in: the model's ``segment_words`` setting,
    else `default_segment_words` for the device it is on, bounded as if every hidden state
    were extracted. Batches are planned within a segment, and a batch's padding moves a
    vector's last bits, so segments that do not depend on which layers are extracted keep
    a layer's vectors the same bytes whether it is extracted alone or with the others (a
    layer list grown later extracts the new layers as a run of them all would)."""
    if loaded.spec.segment_words:
        return loaded.spec.segment_words
    device_type = next(loaded.model.parameters()).device.type
    return default_segment_words(loaded.n_layers + 1, loaded.hidden_size, device_type)


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


def partition_bounds(rows_per_sentence: np.ndarray, n_parts: int) -> list[tuple[int, int]]:
    """Split the sentences into `n_parts` contiguous ranges [start, end), balanced by rows.

    rows_per_sentence: (n_sentences,) units (shard rows) of each sentence, in corpus order.
    Cut k falls before the sentence holding rows whose first row is nearest k·total/n_parts
    (ties: the later), so a part holds total/n_parts rows give or take about one sentence's
    rows; sentences without rows stay with the part before them. Where at least `n_parts`
    sentences hold rows, the cuts are moved apart until every part holds rows (a sentence
    of more than total/n_parts rows pushes its neighbours' cuts along). Segments do not
    constrain the cuts: `plan_extraction` cuts the segments inside each part.

    Returns exactly `n_parts` ranges, in order, covering 0..n_sentences. Only where fewer
    sentences than parts hold rows does a part hold none (its range may be empty); it then
    writes shards of 0 rows, or a state of empty sums, that gather and merge exactly.
    Raises ConfigError when `n_parts` is not an integer ≥ 1.
    """
    if isinstance(n_parts, bool) or not isinstance(n_parts, int | np.integer) or n_parts < 1:
        raise ConfigError(f"the number of partitions must be an integer of at least 1: {n_parts!r}")
    counts = np.asarray(rows_per_sentence, dtype=np.int64)
    if counts.ndim != 1 or (counts < 0).any():
        raise ValueError("rows_per_sentence must be a 1-D array of non-negative counts")
    holding = np.flatnonzero(counts > 0)  # the sentences a part can start at
    cuts = np.concatenate([[0], holding[1:], [len(counts)]])  # candidate cuts, in order
    before = np.concatenate([[0], np.cumsum(counts)])[cuts]  # rows before each cut
    # Integer arithmetic: cut k is the one whose n_parts·rows is nearest k·total (ties: later).
    scaled = before * n_parts
    targets = np.arange(1, n_parts, dtype=np.int64) * int(before[-1])
    above = np.minimum(np.searchsorted(scaled, targets, side="left"), len(cuts) - 1)
    below = np.maximum(above - 1, 0)
    chosen = np.where(targets - scaled[below] < scaled[above] - targets, below, above)
    if n_parts <= len(holding):  # rows for every part: k cuts before cut k, n − k after
        k = np.arange(1, n_parts)
        room = np.maximum.accumulate(np.maximum(chosen - k, 0))  # chosen − k, non-decreasing
        chosen = np.minimum(room, len(holding) - n_parts) + k
    edges = [0, *cuts[chosen].tolist(), len(counts)]
    return [(int(edges[k]), int(edges[k + 1])) for k in range(n_parts)]


def part_sentences(rows_per_sentence: np.ndarray, part: int, n_parts: int) -> tuple[int, int]:
    """The sentence range [start, end) of part `part` (0-based) of `n_parts`
    (`partition_bounds`); ConfigError for a part outside 0..n_parts−1."""
    bounds = partition_bounds(rows_per_sentence, n_parts)
    if isinstance(part, bool) or not isinstance(part, int | np.integer) or not 0 <= part < n_parts:
        raise ConfigError(f"part {part!r} of {n_parts}: parts are numbered 0 to {n_parts - 1}")
    return bounds[part]


def part_segments(
    rows_per_sentence: np.ndarray, first: int, end: int, segment_words: int
) -> list[tuple[int, int]]:
    """The segments a part of sentences [first, end) runs: the whole extraction's segments
    (`segments`) clipped to the part, so that a segment never crosses a part's boundary.

    Every segment no cut crosses is one the whole extraction runs, with the same batches,
    so its rows are the whole extraction's bit for bit wherever the forward pass is
    deterministic (as on a CPU). A segment that a cut crosses is run as two, one in each
    part; their batches are planned anew, and a sentence in a batch of other neighbours
    and padding agrees with the whole extraction's rows within the float rounding of its
    dtype, not bit for bit. So at most n_parts − 1 segments differ from the one job's."""
    return [
        (max(start, first), min(stop, end))
        for start, stop in segments(rows_per_sentence, segment_words)
        if max(start, first) < min(stop, end)
    ]


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
    segment_words = segment_words_of(loaded)
    counts = np.asarray(rows_per_sentence, dtype=np.int64)
    first, end = part_sentences(counts, part, n_parts)
    if loaded.sequential and n_parts > 1:
        raise ConfigError(
            f"model {loaded.spec.name} carries its states from sentence to sentence "
            "(lstm_states: carried), so it runs the corpus as one sequence and cannot be "
            "extracted in parts"
        )
    return ExtractionPlan(
        layers=tuple(layers),
        row_offsets=np.concatenate([[0], np.cumsum(counts)]),
        segments=part_segments(counts, first, end, segment_words),
        first_sentence=first,
        end_sentence=end,
        segment_words=segment_words,
        part=part,
        n_parts=n_parts,
    )
