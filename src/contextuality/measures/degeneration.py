"""Representation degeneration of one layer: norms and neighbourhood density by frequency.

Gao et al. (ICLR 2019) found that frequent words sit near the origin and densely, rare ones
far out and sparsely; Li et al. (EMNLP 2020, BERT-flow) report for BERT's vocabulary, by
frequency-rank bin (0–100, 100–500, 500–5k, 5k–10k, 10k+ of 30,522 types), the mean L2 norm
and the mean L2 distance to the k = 3 nearest neighbours. Here the same statistics are
computed for a layer's

- *static* vectors: each indexed word's mean occurrence vector, its neighbours being the
  other indexed words' mean vectors;
- *occurrences*: a seeded sample of occurrences of indexed words, their neighbours being all
  other occurrences of the layer.

Rank bins are scaled to the corpus' vocabulary size (`rank_bins`). Which occurrences count:
rows with a vector (finite, not all zero). Results are float64.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from contextuality.configuration.random_streams import generator
from contextuality.configuration.schema import default
from contextuality.errors import ConfigError
from contextuality.measures.ranks import spearman_correlation
from contextuality.rows import (
    SelectedRows,
    group_sizes,
    group_sums,
    row_chunks,
    row_norms,
    rows_with_vectors,
    run_starts,
)

_CHUNK_BYTES = 64 * 2**20
_GRAM_CHUNK_ROWS = 8192  # float32 sums within a chunk, float64 across chunks
_TILES = 256  # tiles of points whose minima bound the k-th nearest

WORD_COLUMNS = (
    "word_id",
    "word",
    "count",
    "frequency_rank",
    "bin",
    "n",
    "static_norm",
    "static_knn_distance",
    "static_knn_dot",
    "mean_direction_cosine",
    "occurrence_norm",
)
QUERY_COLUMNS = (
    "occurrence_id",
    "word_id",
    "frequency_rank",
    "bin",
    "norm",
    "knn_distance",
    "knn_dot",
)
TABLE_COLUMNS = (
    "vectors",
    "bin",
    "rank_low",
    "rank_high",
    "n_words",
    "n",
    "norm",
    "knn_distance",
    "knn_dot",
    "mean_direction_cosine",
)


def _is_int(value: object) -> bool:
    return isinstance(value, int | np.integer) and not isinstance(value, bool)


@dataclass(frozen=True)
class DegenerationSettings:
    """Settings of the degeneration measures (config section ``degeneration``).

    rank_edges: upper ends of the frequency-rank bins at `reference_vocabulary` types
    (BERT-flow's); reference_vocabulary: the edges are scaled by n_types /
    reference_vocabulary (None: used as given). neighbours: k of the kNN statistics.
    occurrence_queries: occurrences sampled as kNN queries against all occurrences.
    cone_points: occurrences sampled for the cone projection. seed: of both samples.
    """

    rank_edges: tuple[int, ...] = tuple(default("degeneration", "rank_edges"))
    reference_vocabulary: int | None = default("degeneration", "reference_vocabulary")
    neighbours: int = default("degeneration", "neighbours")
    occurrence_queries: int = default("degeneration", "occurrence_queries")
    cone_points: int = default("degeneration", "cone_points")
    seed: int = default("measures", "seed")

    def __post_init__(self) -> None:
        if not isinstance(self.rank_edges, list | tuple):
            raise ConfigError(f"rank_edges must be a list of integers, got {self.rank_edges!r}")
        edges = tuple(self.rank_edges)
        object.__setattr__(self, "rank_edges", edges)  # a YAML list becomes a tuple
        if not edges or not all(_is_int(edge) and edge > 0 for edge in edges):
            raise ConfigError(f"rank_edges must be positive integers, got {list(edges)}")
        if any(high <= low for low, high in zip(edges, edges[1:], strict=False)):
            raise ConfigError(f"rank_edges must be strictly increasing, got {list(edges)}")
        reference = self.reference_vocabulary
        if reference is not None and not (_is_int(reference) and reference > 0):
            raise ConfigError(
                f"reference_vocabulary must be a positive integer or null, got {reference!r}"
            )
        for name in ("neighbours", "occurrence_queries", "cone_points"):
            value = getattr(self, name)
            if not (_is_int(value) and value >= 1):
                raise ConfigError(f"{name} must be an integer of at least 1, got {value!r}")
        if not (_is_int(self.seed) and self.seed >= 0):
            raise ConfigError(f"seed must be a non-negative integer, got {self.seed!r}")


def rank_bins(n_types: int, settings: DegenerationSettings) -> list[tuple[int, int | None]]:
    """Half-open frequency-rank intervals [low, high) over ranks from 0 (the most frequent
    type; rank = frequency_rank − 1), the last one open (high None).

    Edges are scaled to round(edge · n_types / reference_vocabulary) (Python's round), then
    those below 1 dropped and duplicates merged: n_types = 3,052 gives 10, 50, 500, 1000.
    """
    edges = settings.rank_edges
    if settings.reference_vocabulary is not None:
        edges = (round(edge * n_types / settings.reference_vocabulary) for edge in edges)
    kept = sorted({edge for edge in edges if edge >= 1})
    lows = [0, *kept]
    return list(zip(lows, [*kept, None], strict=True))


def bin_labels(bins: list[tuple[int, int | None]]) -> list[str]:
    """``"0–30"`` for [0, 30), ``"3000+"`` for the open last bin."""
    return [f"{low}–{high}" if high is not None else f"{low}+" for low, high in bins]


def occurrence_ids(occurrences: pd.DataFrame, rows: np.ndarray) -> np.ndarray:
    """The occurrence ids of rows of a layer: its ``occurrence_id`` column (a layer may hold
    some occurrences only, e.g. a corrected one its measured sentences'), else the rows."""
    if "occurrence_id" in occurrences:
        return occurrences["occurrence_id"].to_numpy()[rows]
    return rows


def _bin_index(ranks: np.ndarray, bins: list[tuple[int, int | None]]) -> np.ndarray:
    """Position in `bins` of each 0-based rank."""
    lows = np.array([low for low, _ in bins])
    return np.searchsorted(lows, ranks, side="right") - 1


def nearest_neighbours(
    queries: np.ndarray,
    points: np.ndarray | SelectedRows,
    k: int,
    exclude: np.ndarray | None = None,
    *,
    chunk_bytes: int = _CHUNK_BYTES,
) -> tuple[np.ndarray, np.ndarray]:
    """Exact k nearest points of each query by L2 distance.

    queries: (q, d); points: (n, d), finite (an array, or `rows.SelectedRows` of a layer).
    exclude: (q,) row of `points` that query i must not match (itself), or −1. Returns
    (indices (q, k) int64, distances (q, k) float64), nearest first, ties broken by the
    lower index.

    Query chunks (each ≤ `chunk_bytes` of float32 scores) are screened in float32 with the
    score ‖p‖² − 2q·p. The k-th smallest score is bounded from above by the k-th smallest of
    the minima over tiles of points (k distinct points), and every point whose score could
    be below that bound, allowing a worst-case bound on float32 rounding, is a candidate.
    Candidates' distances are computed exactly, in float64, as ‖q − p‖; the result is that
    of a float64 search. Raises ValueError when there are fewer than k points to choose from.
    """
    queries = np.asarray(queries)
    points = points if isinstance(points, SelectedRows) else np.asarray(points)
    n_queries, n_points = len(queries), len(points)
    exclude = (
        np.full(n_queries, -1, dtype=np.int64)
        if exclude is None
        else np.asarray(exclude, dtype=np.int64)
    )
    if exclude.shape != (n_queries,) or np.any((exclude < -1) | (exclude >= n_points)):
        raise ValueError("exclude must hold one point index (or -1) per query")
    available = n_points - int(np.any(exclude >= 0))
    if k < 1 or available < k:
        raise ValueError(f"need k ≥ 1 and at least k = {k} points, have {available}")
    point_norms = row_norms(points) ** 2
    if not (np.isfinite(queries).all() and np.isfinite(point_norms).all()):
        raise ValueError("queries and points must be finite")
    indices = np.empty((n_queries, k), dtype=np.int64)
    distances = np.empty((n_queries, k))
    point_chunks = list(row_chunks(n_points, points.shape[1]))
    # |float32 score − exact score| ≤ error·(‖q‖² + ‖p‖²): (d + 10) unit roundoffs (sgemm's
    # γ_d, input and arithmetic rounding) times (‖q‖ + ‖p‖)² ≤ 2(‖q‖² + ‖p‖²), doubled.
    error = 4 * (points.shape[1] + 10) * np.finfo(np.float32).eps / 2
    lowered = (point_norms * (1 - error)).astype(np.float32)
    n_tiles = min(n_points, max(_TILES, 4 * k))
    tile_starts = np.arange(n_tiles) * n_points // n_tiles
    tile_slack = 2 * error * np.maximum.reduceat(point_norms, tile_starts)
    rows_per_chunk = max(1, chunk_bytes // (4 * n_points))
    for start in range(0, n_queries, rows_per_chunk):
        chunk = slice(start, min(start + rows_per_chunk, n_queries))
        chunk_queries, chunk_exclude = queries[chunk], exclude[chunk]
        queries32 = np.asarray(chunk_queries, dtype=np.float32)
        scores = np.empty((len(queries32), n_points), dtype=np.float32)
        for piece in point_chunks:  # float32 a chunk at a time: no float32 copy of points
            scores[:, piece] = queries32 @ np.asarray(points[piece], dtype=np.float32).T
        scores *= -2
        scores += lowered  # at most the exact score + error·‖q‖²
        excluded = np.flatnonzero(chunk_exclude >= 0)
        scores[excluded, chunk_exclude[excluded]] = np.inf
        tile_best = np.minimum.reduceat(scores, tile_starts, axis=1) + tile_slack
        bound = np.partition(tile_best, k - 1, axis=1)[:, k - 1]
        bound += 2 * error * _squared_norms(chunk_queries)
        bound = np.nextafter(bound.astype(np.float32), np.float32(np.inf))
        rows, columns = np.divmod(np.flatnonzero(scores <= bound[:, None]), n_points)
        keep = columns != chunk_exclude[rows]
        rows, columns = rows[keep], columns[keep]
        squared = _pair_squared_distances(chunk_queries, points, rows, columns, chunk_bytes)
        order = np.lexsort((columns, squared, rows))
        firsts = np.searchsorted(rows[order], np.arange(len(scores)))
        chosen = order[firsts[:, None] + np.arange(k)]
        indices[chunk] = columns[chosen]
        distances[chunk] = np.sqrt(squared[chosen])
    return indices, distances


def _pair_squared_distances(
    queries: np.ndarray,
    points: np.ndarray,
    rows: np.ndarray,
    columns: np.ndarray,
    chunk_bytes: int,
) -> np.ndarray:
    """‖queries[rows] − points[columns]‖² in float64, in batches of ≤ chunk_bytes."""
    squared = np.empty(len(rows))
    batch = max(1, chunk_bytes // (8 * queries.shape[1]))
    for start in range(0, len(rows), batch):
        pairs = slice(start, start + batch)
        difference = np.asarray(queries[rows[pairs]], dtype=np.float64) - points[columns[pairs]]
        squared[pairs] = np.einsum("ij,ij->i", difference, difference)
    return squared


def _squared_norms(rows: np.ndarray) -> np.ndarray:
    """Float64 squared L2 norm of each row."""
    return np.einsum("ij,ij->i", rows, rows, dtype=np.float64)


def _neighbour_statistics(
    queries: np.ndarray, points: np.ndarray | SelectedRows, k: int, exclude: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Mean L2 distance and mean dot product of each query with its k nearest points,
    (q,) float64 each; NaN when there are fewer than k points to choose from."""
    if len(points) - 1 < k:
        nothing = np.full(len(queries), np.nan)
        return nothing, nothing.copy()
    indices, distances = nearest_neighbours(queries, points, k, exclude)
    dots = np.einsum(
        "qd,qkd->qk", np.asarray(queries, dtype=np.float64), points[indices], dtype=np.float64
    )
    return distances.mean(axis=1), dots.mean(axis=1)


def word_degeneration(
    vectors: np.ndarray,
    occurrences: pd.DataFrame,
    vocab: pd.DataFrame,
    settings: DegenerationSettings,
) -> pd.DataFrame:
    """Static (mean-vector) statistics of each indexed word with at least one valid
    occurrence, ordered by word_id.

    vectors: (n_occurrences, d), row i = occurrence i; NaN rows are missing.
    Columns (`WORD_COLUMNS`): vocabulary columns and the rank bin's label; n (valid
    occurrences); static_norm (‖mean vector‖); static_knn_distance and static_knn_dot (mean
    L2 distance and dot product from the mean vector to the k nearest other words' mean
    vectors); mean_direction_cosine (cosine with the mean of all valid occurrences, every
    word's included); occurrence_norm (mean ‖occurrence‖).
    """
    valid = np.flatnonzero(rows_with_vectors(vectors))
    word_id = occurrences["word_id"].to_numpy()[valid]
    mean_direction = group_sums(vectors, np.zeros(min(1, len(valid)), np.int64), order=valid)
    mean_direction = mean_direction.sum(axis=0)
    rows = valid[vocab["indexed"].to_numpy()[word_id]]
    rows = rows[np.argsort(occurrences["word_id"].to_numpy()[rows], kind="stable")]
    sorted_words = occurrences["word_id"].to_numpy()[rows]
    starts = run_starts(sorted_words)
    sizes = group_sizes(starts, len(rows))
    means = group_sums(vectors, starts, order=rows) / sizes[:, None]
    norms = row_norms(vectors, rows)
    occurrence_norm = np.add.reduceat(norms, starts) / sizes if len(starts) else np.zeros(0)
    words = vocab.iloc[sorted_words[starts]][["word_id", "word", "count", "frequency_rank"]]
    words = words.reset_index(drop=True)
    labels = np.array(bin_labels(bins := rank_bins(len(vocab), settings)), dtype=object)
    words["bin"] = labels[_bin_index(words["frequency_rank"].to_numpy() - 1, bins)]
    words["n"] = sizes
    static_norm = np.linalg.norm(means, axis=1)
    words["static_norm"] = static_norm
    knn_distance, knn_dot = _neighbour_statistics(
        means, means, settings.neighbours, np.arange(len(means))
    )
    words["static_knn_distance"] = knn_distance
    words["static_knn_dot"] = knn_dot
    with np.errstate(invalid="ignore", divide="ignore"):
        words["mean_direction_cosine"] = (means @ mean_direction) / (
            static_norm * np.linalg.norm(mean_direction)
        )
    words["occurrence_norm"] = occurrence_norm
    return words[list(WORD_COLUMNS)]


def occurrence_degeneration(
    vectors: np.ndarray,
    occurrences: pd.DataFrame,
    vocab: pd.DataFrame,
    settings: DegenerationSettings,
) -> pd.DataFrame:
    """Occurrence-level kNN statistics of a seeded sample of valid occurrences of indexed
    words (min(occurrence_queries, available), without replacement), each against all other
    valid occurrences of the layer, indexed words or not. One row per query, ordered by
    occurrence_id (the row of `vectors`); columns `QUERY_COLUMNS`, norm in the vectors'
    units, knn_distance and knn_dot the means over the k neighbours."""
    valid = np.flatnonzero(rows_with_vectors(vectors))
    word_id = occurrences["word_id"].to_numpy()[valid]
    candidates = np.flatnonzero(vocab["indexed"].to_numpy()[word_id])  # positions in valid
    rng = generator(settings.seed, "degeneration_queries")
    size = min(settings.occurrence_queries, len(candidates))
    chosen = np.sort(rng.choice(candidates, size=size, replace=False))
    points = vectors if len(valid) == len(vectors) else SelectedRows(vectors, valid)
    queries = np.asarray(points[chosen], dtype=np.float64)
    knn_distance, knn_dot = _neighbour_statistics(queries, points, settings.neighbours, chosen)
    frequency_rank = vocab["frequency_rank"].to_numpy()[word_id[chosen]]
    labels = np.array(bin_labels(bins := rank_bins(len(vocab), settings)), dtype=object)
    table = {
        "occurrence_id": occurrence_ids(occurrences, valid[chosen]),
        "word_id": word_id[chosen],
        "frequency_rank": frequency_rank,
        "bin": labels[_bin_index(frequency_rank - 1, bins)],
        "norm": np.sqrt(_squared_norms(queries)),
        "knn_distance": knn_distance,
        "knn_dot": knn_dot,
    }
    return pd.DataFrame(table, columns=list(QUERY_COLUMNS))


def bins_table(
    words: pd.DataFrame, queries: pd.DataFrame, bins: list[tuple[int, int | None]]
) -> pd.DataFrame:
    """Bin means of `word_degeneration` (vectors ``static``) and `occurrence_degeneration`
    (vectors ``occurrences``): one row per (vectors, bin), every bin kept (n = 0 and NaN
    means when empty) so that every layer has the same rows. Columns `TABLE_COLUMNS`: n
    counts words (static) or queries (occurrences), n_words distinct words; rank_high is
    <NA> for the open last bin; mean_direction_cosine is NaN for occurrences."""
    labels = bin_labels(bins)
    rows = []
    sources = {
        "static": (words, "static_norm", "static_knn_distance", "static_knn_dot"),
        "occurrences": (queries, "norm", "knn_distance", "knn_dot"),
    }
    for kind, (frame, norm, knn_distance, knn_dot) in sources.items():
        position = _bin_index(frame["frequency_rank"].to_numpy() - 1, bins)
        for index, (low, high) in enumerate(bins):
            members = frame[position == index]
            rows.append(
                {
                    "vectors": kind,
                    "bin": labels[index],
                    "rank_low": low,
                    "rank_high": high,
                    "n_words": members["word_id"].nunique(),
                    "n": len(members),
                    "norm": members[norm].mean(),
                    "knn_distance": members[knn_distance].mean(),
                    "knn_dot": members[knn_dot].mean(),
                    "mean_direction_cosine": (
                        members["mean_direction_cosine"].mean() if kind == "static" else np.nan
                    ),
                }
            )
    table = pd.DataFrame(rows, columns=list(TABLE_COLUMNS))
    return table.astype({"rank_low": "Int64", "rank_high": "Int64"})


def frequency_correlations(words: pd.DataFrame) -> dict[str, float]:
    """Spearman ρ of `word_degeneration`'s statistics with count: keys
    ``occurrence_norm~frequency`` (mean norm of a word's occurrences), ``norm~frequency``,
    ``knn_distance~frequency``, ``mean_direction~frequency`` (its mean vector); NaN with
    fewer than 3 words with the statistic, or a constant one.

    The mean-vector statistics lean toward frequency by construction: the mean of n noisy
    vectors has norm about √(‖μ‖² + σ²d/n), so frequent words look nearer the origin even
    in structureless data; the occurrences' mean norm has no such bias."""
    columns = {
        "occurrence_norm~frequency": "occurrence_norm",
        "norm~frequency": "static_norm",
        "knn_distance~frequency": "static_knn_distance",
        "mean_direction~frequency": "mean_direction_cosine",
    }
    correlations = {}
    for name, column in columns.items():
        values = words[column].to_numpy(dtype=np.float64)
        count = words["count"].to_numpy(dtype=np.float64)
        finite = np.isfinite(values)
        values, count = values[finite], count[finite]
        constant = len(values) == 0 or np.ptp(values) == 0 or np.ptp(count) == 0
        correlations[name] = (
            math.nan if len(values) < 3 or constant else spearman_correlation(values, count)
        )
    return correlations


def cone_projection(
    vectors: np.ndarray,
    occurrences: pd.DataFrame,
    vocab: pd.DataFrame,
    settings: DegenerationSettings,
) -> pd.DataFrame:
    """A seeded sample of min(cone_points, available) valid occurrences projected on the top
    two right singular vectors of all valid occurrence vectors, *uncentered*: the first
    direction is then close to the layer's mean direction when the vectors form a narrow
    cone (anisotropy), and its share of the squared norm says how narrow.

    Each direction's sign is fixed so that the sampled points' mean coordinate is ≥ 0.
    Columns occurrence_id, word_id, frequency_rank, x, y (in the vectors' units), and
    explained_x, explained_y: each direction's share of Σ‖v‖² over all valid occurrences
    (σᵢ² / Σσ², the same on every row).
    """
    valid = np.flatnonzero(rows_with_vectors(vectors))
    if len(valid) == 0:
        raise ValueError("cone_projection: no valid occurrence vectors")
    gram = np.zeros((vectors.shape[1], vectors.shape[1]))
    for start in range(0, len(valid), _GRAM_CHUNK_ROWS):
        chunk = np.asarray(vectors[valid[start : start + _GRAM_CHUNK_ROWS]], dtype=np.float32)
        gram += chunk.T @ chunk
    eigenvalues, eigenvectors = np.linalg.eigh(gram)
    directions = eigenvectors[:, ::-1][:, :2]  # (d, 2), largest first
    explained = eigenvalues[::-1][:2] / np.trace(gram)
    rng = generator(settings.seed, "cone_sample")
    sample = np.sort(rng.choice(valid, size=min(settings.cone_points, len(valid)), replace=False))
    coordinates = np.asarray(vectors[sample], dtype=np.float64) @ directions
    coordinates *= np.where(coordinates.mean(axis=0) < 0, -1.0, 1.0)
    word_id = occurrences["word_id"].to_numpy()[sample]
    return pd.DataFrame(
        {
            "occurrence_id": occurrence_ids(occurrences, sample),
            "word_id": word_id,
            "frequency_rank": vocab["frequency_rank"].to_numpy()[word_id],
            "x": coordinates[:, 0],
            "y": coordinates[:, 1],
            "explained_x": explained[0],
            "explained_y": explained[1],
        }
    )


@dataclass
class LayerDegeneration:
    """One layer's degeneration analysis: `word_degeneration`'s per-word table, the table by
    frequency bin (`bins_table`) and the cone sample (`cone_projection`)."""

    words: pd.DataFrame
    bins: pd.DataFrame
    cone: pd.DataFrame


def layer_degeneration(
    vectors: np.ndarray,
    occurrences: pd.DataFrame,
    vocab: pd.DataFrame,
    settings: DegenerationSettings,
) -> LayerDegeneration:
    """The degeneration analysis of one layer's occurrence vectors (n, d), rows aligned
    with `occurrences`, against word frequency in `vocab`."""
    words = word_degeneration(vectors, occurrences, vocab, settings)
    queries = occurrence_degeneration(vectors, occurrences, vocab, settings)
    bins = bins_table(words, queries, rank_bins(len(vocab), settings))
    return LayerDegeneration(words, bins, cone_projection(vectors, occurrences, vocab, settings))


def degeneration_table(layer_bins: list[pd.DataFrame]) -> pd.DataFrame:
    """Every layer's `bins_table`, each labelled with its model, transform and layer, in
    one table whose first columns are those labels."""
    table = pd.concat(layer_bins, ignore_index=True)
    leading = ["model", "transform", "layer"]
    return table[leading + [column for column in table.columns if column not in leading]]
