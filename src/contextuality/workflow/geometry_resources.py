"""A geometry job's memory and runtime for a scheduler, from the rows and layers it reads.

Both above what finished jobs measured (bench/geometry_memory.py; tests check the
declarations against its records): memory in MB, runtime in minutes."""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from contextuality.files.tables import read_parquet
from contextuality.geometry.dimension import REPEAT_SPARE
from contextuality.geometry.search import SearchSettings
from contextuality.workflow.config import check_geometry_study

# What a geometry job holds at its peak beyond its sampled rows (`alignment_memory_needed`,
# `dimension_memory_needed`), fitted above the peaks bench/geometry_memory.py reads from
# finished runs:
# the interpreter with torch, FAISS and scikit-learn loaded (MB);
GEOMETRY_BASE_MB = 1200
# CKA's float64 cross-products of every layer side by side, (layers × width)² each: the
# values', a resample's and their chunk's; as many of the layers' with the word baselines'
# one-hot columns, (layers × width) × (baselines × words) each (their own products stay
# sparse, a few entries a row: `linear_cka.CrossProducts`);
CKA_PRODUCT_COPIES = 3
# one layer's sampled rows again this many times over while its neighbours are searched
# in an alignment job (its float32 unit rows, the index's own copy of them, the exact
# search's chunks);
SEARCH_COPIES_OF_A_LAYER = 10
# each row's k neighbours in every layer, in bytes per neighbour (indices and cosines,
# the sparse mask and kernel, an HSIC's sparse temporaries);
BYTES_PER_NEIGHBOUR = 60
# one layer's sampled rows again this many times over in its intrinsic-dimension job
# (float64 points, the float32 rows and the index's copy of them, the exact distances'
# chunks; the exact search by distance a centred float64 copy and a float32 one besides
# its index's), above the peaks of STS's every occurrence;
DIMENSION_SEARCH_COPIES = 17
# each row's distances to its range_max nearest points and the spare ones searched past
# them (`dimension.REPEAT_SPARE`), with their rows (bytes);
BYTES_PER_DISTANCE = 16
# and the bytes of a stored value (float16), from which a shard's width is read.
STORED_BYTES_PER_VALUE = 2

# The seconds a geometry job spends (`dimension_runtime_needed`, `alignment_runtime_needed`)
# on the 2 CPU cores its records were measured on, fitted above them and then doubled
# (`RUNTIME_MARGIN`): starting (torch and FAISS loaded, the rows read);
GEOMETRY_BASE_SECONDS = 120
# an exact search, every row against every row: pairs × width compared a second (the
# exact search took 138 s for 10^5 rows of 768 on 2 cores, bench/results/neighbours-cpu2);
EXACT_VALUES_PER_SECOND = 2e10
# an index's search of 10^5 rows of width 384 (built, calibrated, every row searched) by
# distance for an intrinsic dimension's range of neighbours, and by cosine for an
# alignment's k (its 14 searches of STS's every occurrence took 58 of its job's 72 minutes,
# the slowest 8), and how it grows with the rows (the graph's growth exponent measured,
# 1.27);
INDEX_SECONDS_AT_1E5 = 120
ALIGNMENT_INDEX_SECONDS_AT_1E5 = 60
INDEX_GROWTH = 1.3
# the dimension's curves over scale after the search, a row;
CURVE_SECONDS_PER_ROW = 2e-3
# a resample (a permutation or a bootstrap draw) for each pair of layers of width 384:
# its fixed part (Procrustes' eigenvalues) and a row's (cross-products, neighbours);
DRAW_SECONDS_PER_PAIR = 0.15
DRAW_SECONDS_PER_ROW_PAIR = 8e-6
# the occurrences an alignment job aligns apart, each searched and resampled (every one,
# and those past each sentence's first token);
ALIGNMENT_SUBSETS = 2
# the searches of an alignment job (one a layer and subset) whose indices may give way to
# an exact search in one attempt (STS's every occurrence: one layer of seven, by distance);
SEARCHES_GIVING_WAY = 1
# and the margin over the fitted seconds.
RUNTIME_MARGIN = 2


def alignment_memory_needed(
    stored_bytes: int,
    rows: int,
    sampled: int,
    layers: int,
    neighbours: int,
    corrected: bool = False,
    baseline_columns: int = 0,
) -> int:
    """The memory (MB) an alignment job holds at its peak: `sampled` of the `rows` of
    `layers` layers stored in `stored_bytes` (float16; float32 once `corrected`), CKA's
    cross-products of them all and of them with the word baselines' `baseline_columns`
    (`_JobRows.baseline_columns`), each layer's copies while it is searched and every
    layer's lists of `neighbours` (geometry.alignment.k) a row."""
    sampled_mb = _sampled_mb(stored_bytes, rows, sampled, corrected)
    widths = stored_bytes / (rows * STORED_BYTES_PER_VALUE)  # every layer's, side by side
    needed = (
        GEOMETRY_BASE_MB
        + CKA_PRODUCT_COPIES * 8 * widths * (widths + baseline_columns) / 1e6
        + sampled_mb * (1 + SEARCH_COPIES_OF_A_LAYER / layers)
        + sampled * layers * neighbours * BYTES_PER_NEIGHBOUR / 1e6
    )
    return int(needed)


def dimension_memory_needed(
    stored_bytes: int, rows: int, sampled: int, distances: int, corrected: bool = False
) -> int:
    """The memory (MB) a layer's intrinsic-dimension job holds at its peak: `sampled` of
    the `rows` of its layer stored in `stored_bytes`, their copies while they are
    searched, and each row's `distances` (geometry.intrinsic_dimension.range_max) nearest
    points and the spare ones with their rows."""
    sampled_mb = _sampled_mb(stored_bytes, rows, sampled, corrected)
    needed = (
        GEOMETRY_BASE_MB
        + sampled_mb * (1 + DIMENSION_SEARCH_COPIES)
        + sampled * (distances + REPEAT_SPARE) * BYTES_PER_DISTANCE / 1e6
    )
    return int(needed)


def _sampled_mb(stored_bytes: int, rows: int, sampled: int, corrected: bool) -> float:
    """The MB of `sampled` of `rows` rows stored in `stored_bytes` as a job holds them:
    float16, float32 once corrected."""
    return stored_bytes * sampled / rows / 1e6 * (2 if corrected else 1)


def search_seconds(
    rows: int, width: int, search: SearchSettings, at_1e5: float = INDEX_SECONDS_AT_1E5
) -> float:
    """The seconds a search of the nearest neighbours of `rows` rows of `width` takes: the
    exact search's where `search` searches exactly at this size, else an index's (built,
    calibrated, every row searched; `at_1e5` seconds at 10^5 rows of width 384)."""
    if not search.indices_for(rows):
        return _exact_seconds(rows, width)
    return at_1e5 * (rows / 1e5) ** INDEX_GROWTH * width / 384


def giving_way_seconds(rows: int, width: int, search: SearchSettings) -> float:
    """The seconds more a search takes where `auto` gives its indices up (past
    `exact_up_to`, neither reaching its recall) and searches exactly after them (MiniLM's
    last layer on STS, by distance); 0 where no index is built or none is given up."""
    giving_up = search.method == "auto" and search.indices_for(rows)
    return _exact_seconds(rows, width) if giving_up else 0.0


def _exact_seconds(rows: int, width: int) -> float:
    """An exact search's seconds: every row of `width` against every row."""
    return rows**2 * width / EXACT_VALUES_PER_SECOND


def dimension_runtime_needed(rows: int, width: int, search: SearchSettings) -> int:
    """The minutes a layer's intrinsic-dimension job asks for: its `rows` sampled rows of
    `width` searched (`search_seconds`), exactly too where its indices give way
    (`giving_way_seconds`), and their curves over scale."""
    searched = search_seconds(rows, width, search) + giving_way_seconds(rows, width, search)
    return _minutes(GEOMETRY_BASE_SECONDS + searched + CURVE_SECONDS_PER_ROW * rows)


def alignment_runtime_needed(
    rows: int, width: int, layers: int, resamples: int, baselines: int, search: SearchSettings
) -> int:
    """The minutes an alignment job asks for: each of `layers` layers of `width` searched
    on `rows` sampled rows for each subset of occurrences, `SEARCHES_GIVING_WAY` of them
    exactly too (a retry doubles the whole, `geometry_runtime_minutes`, and finds the
    searches it finished kept: `geometry.resume`), and `resamples` permutations and
    bootstrap draws of each subset's unordered pairs of layers and of every layer with the
    `baselines` word baselines at once."""
    scale = width / 384
    per_pair = DRAW_SECONDS_PER_PAIR * scale**3 + DRAW_SECONDS_PER_ROW_PAIR * rows * scale**2
    pairs = ALIGNMENT_SUBSETS * layers * (layers - 1) / 2 + layers * baselines
    searched = search_seconds(rows, width, search, ALIGNMENT_INDEX_SECONDS_AT_1E5)
    searches = ALIGNMENT_SUBSETS * layers * searched
    giving_way = SEARCHES_GIVING_WAY * giving_way_seconds(rows, width, search)
    resampled = resamples * pairs * per_pair
    return _minutes(GEOMETRY_BASE_SECONDS + searches + giving_way + resampled)


def _minutes(seconds: float) -> int:
    """`seconds` with `RUNTIME_MARGIN`, in whole minutes (Snakemake's ``runtime``)."""
    return math.ceil(RUNTIME_MARGIN * seconds / 60)


@dataclass(frozen=True)
class _JobRows:
    """What a geometry job reads: its layers' shards' bytes (`stored`), the index's
    occurrences (`rows`), how many it samples (`sampled`), the `layers` it reads and the
    distinct words expected among the sampled occurrences (`words`; 0 where not asked)."""

    stored: int
    rows: int
    sampled: int
    layers: int
    words: int = 0

    def baseline_columns(self, baselines: int) -> int:
        """The one-hot columns of `baselines` word baselines of the sampled rows, a word's
        column each (a sentence's positions, a few hundred at most beside a vocabulary of
        thousands, within the margin)."""
        return baselines * self.words

    @property
    def width(self) -> int:
        """A layer's width, from the float16 bytes of its layers side by side."""
        return round(self.stored / (self.rows * STORED_BYTES_PER_VALUE * self.layers))


def expected_words(counts: np.ndarray, sampled: int) -> int:
    """The distinct words expected among `sampled` occurrences drawn without replacement
    (`alignment.sample_rows`) from an index whose words occur `counts` times each, rounded
    up: a word of c of the n occurrences is missed with probability C(n − c, s) / C(n, s)
    (hypergeometric). Every word where every occurrence is sampled."""
    total = int(np.sum(counts))
    values, words = np.unique(np.asarray(counts, dtype=np.int64), return_counts=True)

    def missed(count: int) -> float:
        if total - count < sampled:
            return 0.0
        return math.exp(
            math.lgamma(total - count + 1)
            - math.lgamma(total - count - sampled + 1)
            - math.lgamma(total + 1)
            + math.lgamma(total - sampled + 1)
        )

    seen = sum(int(n) * (1.0 - missed(int(count))) for count, n in zip(values, words, strict=True))
    return math.ceil(round(seen, 6))  # not a word more for a sum's rounding


def _job_rows(input: Any, study: str, sample_size: int | None, words: bool = False) -> _JobRows:
    """`_JobRows` of a job's inputs: one layer's shards (``shard``) for the intrinsic
    dimension, every layer's (``layer_<L>``, both models' for a pair) for the alignment,
    and the index summary's occurrences, `sample_size` of them (every one where None);
    with `words`, the distinct words expected among them (`expected_words`, the index's
    vocabulary's counts)."""
    key = "shard" if study == "intrinsic_dimension" else "layer_"
    layers = [getattr(input, name) for name in input.keys() if key in name]  # noqa: SIM118
    stored = sum(
        os.path.getsize(path)
        for files in layers
        for path in ([files] if isinstance(files, str) else files)
    )
    rows = int(json.loads(Path(input.summary).read_text())["n_occurrences"])
    sampled = rows if sample_size is None else min(rows, sample_size)
    expected = expected_words(read_parquet(input.vocab)["count"], sampled) if words else 0
    return _JobRows(stored, rows, sampled, len(layers), expected)


def geometry_memory_mb(
    config: dict[str, Any], study: str, word_baselines: bool = False
) -> Callable[..., int]:
    """A geometry job's memory (MB) to ask a scheduler for: `dimension_memory_needed`
    (`study` ``intrinsic_dimension``: one layer's shards, input ``shard``) or
    `alignment_memory_needed` (``alignment``: inputs ``layer_<L>``, both models' for a
    pair; with the ``geometry.alignment.baselines`` where it aligns the layers with them,
    `word_baselines`) of its inputs, the index's occurrences (summary) and its words'
    counts (vocab), ``geometry.sample_size`` of the occurrences (every one where null) and
    its transform (wildcard), above the peaks measured (a test checks,
    bench/geometry_memory.py); doubled on each retry. A Snakemake resource function of the
    job's wildcards and inputs."""
    check_geometry_study(study)
    geometry = config["geometry"]
    neighbours = geometry["alignment"]["k"]
    distances = geometry["intrinsic_dimension"]["range_max"]
    baselines = len(geometry["alignment"]["baselines"]) if word_baselines else 0

    def memory_mb(wildcards: Any, input: Any, attempt: int = 1) -> int:
        job = _job_rows(input, study, geometry["sample_size"], words=baselines > 0)
        corrected = getattr(wildcards, "transform", "none") != "none"
        read = (job.stored, job.rows, job.sampled)
        if study == "intrinsic_dimension":
            needed = dimension_memory_needed(*read, distances, corrected)
        else:
            columns = job.baseline_columns(baselines)
            needed = alignment_memory_needed(*read, job.layers, neighbours, corrected, columns)
        return needed * 2 ** (attempt - 1)

    return memory_mb


def geometry_runtime_minutes(
    config: dict[str, Any], study: str, word_baselines: bool = False
) -> Callable[..., int]:
    """A geometry job's runtime (minutes) to ask a scheduler for:
    `dimension_runtime_needed` or `alignment_runtime_needed` of the rows it samples, its
    layers' width and the search, resamples and (where it aligns the layers with them,
    `word_baselines`) the baselines of config ``geometry``, above
    the seconds measured (a test checks, bench/geometry_memory.py); doubled on each retry
    (a layer whose indices give way searches exactly, which may take longer). A Snakemake
    resource function of the job's inputs."""
    check_geometry_study(study)
    geometry = config["geometry"]
    search = SearchSettings(**geometry["search"])
    alignment = geometry["alignment"]
    resamples = alignment["permutations"] + alignment["bootstrap"]
    baselines = len(alignment["baselines"]) if word_baselines else 0

    def runtime(wildcards: Any, input: Any, attempt: int = 1) -> int:
        job = _job_rows(input, study, geometry["sample_size"])
        if study == "intrinsic_dimension":
            minutes = dimension_runtime_needed(job.sampled, job.width, search)
        else:
            minutes = alignment_runtime_needed(
                job.sampled, job.width, job.layers, resamples, baselines, search
            )
        return minutes * 2 ** (attempt - 1)

    return runtime
