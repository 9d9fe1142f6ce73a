"""The exact nearest neighbours by Euclidean distance at the speed of float32 matrix
products, proved exact in float64.

Every point is compared with every point by FAISS's flat index (float32 products, a
query's `k` + 1 + `SPARE_CANDIDATES` nearest kept), the candidates' distances are computed
again in float64 from the differences, and a bound on float32's rounding proves, query by
query, that no point left out is nearer than the k-th kept: a point outside the
candidates has a float32 squared distance at least the last candidate's, D, so its true
distance is at least

    √(D − γ (‖q‖ + M)²) − u (‖q‖ + M),

u = 2⁻²⁴ float32's unit roundoff, γ = 2 (d + 3) u (twice the bound on a length-d dot
product, two norms and their sum; Higham 2002, §3.1), M the largest norm of a point, all
after the points are shifted by their mean (distances are unchanged; norms, and with them
the bound, shrink), and M at most ‖q‖ plus the k-th distance (a point of larger norm is
farther than that anyway). A query whose k-th distance is not below that bound is searched again
in float64 against every point (`search.exact_nearest`, with as many spare candidates,
their distances again from the differences). On 2 CPU cores the float32 products
compared a query with MiniLM's 526,031 distinct last-layer rows on STS in 5 ms
(bench/results/scan-rates-cpu2-minilm-sts-layer6.md, the flat search)."""

from __future__ import annotations

import logging

import numpy as np

from contextuality.geometry.search import (
    SIMILARITIES_PER_CHUNK,
    exact_nearest,
    faiss_module,
    without_self,
)
from contextuality.jobs.console import Progress

log = logging.getLogger(__name__)

# Candidates a query keeps beyond its k nearest, so that the last is far enough past the
# k-th for the rounding bound to prove it.
SPARE_CANDIDATES = 8
# Queries searched at a time (a line of progress each; their candidates in memory).
QUERIES_PER_CHUNK = 1 << 14
# float32's unit roundoff.
FLOAT32_ROUNDOFF = 2.0**-24


def exact_distance_neighbours(points: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Each point's float64 distances to its `k` nearest other points (n × k, nearest
    first, ties by the lower row) and their rows (n × k), exactly, for `points` (n × d,
    any float dtype; k < n): float32 candidates proved or searched again in float64."""
    faiss = faiss_module()
    n, width = points.shape
    points = np.asarray(points, dtype=np.float64)
    points = points - points.mean(axis=0)
    shifted = points.astype(np.float32)
    norms = np.linalg.norm(points, axis=1)
    largest = float(norms.max())
    index = faiss.IndexFlatL2(width)
    index.add(shifted)
    wanted = min(n, k + 1 + SPARE_CANDIDATES)
    distances = np.empty((n, k))
    indices = np.empty((n, k), dtype=np.int64)
    unproved = []
    told = Progress(f"exact search of {n:,} points by distance", n, "points")
    for start in range(0, n, QUERIES_PER_CHUNK):
        rows = np.arange(start, min(n, start + QUERIES_PER_CHUNK))
        squared, candidates = index.search(shifted[rows], wanted)
        found, gaps = _without_query(candidates, rows, points)
        distances[rows], indices[rows] = gaps[:, :k], found[:, :k]
        if wanted < n:  # with every point a candidate, nothing is left out
            proved = _proved(squared[:, -1], gaps[:, k - 1], norms[rows], largest, width)
            unproved.append(rows[~proved])
        told.update(len(rows))
    told.finish()
    again = np.concatenate(unproved) if unproved else np.empty(0, dtype=np.int64)
    if len(again):
        log.info("exact search by distance: %s of %s points searched again in float64",
                 f"{len(again):,}", f"{n:,}")  # fmt: skip
        spare = min(n - 1, k + SPARE_CANDIDATES)
        candidates = exact_nearest(points, again, spare, True, "cpu")
        found, gaps = _ordered(points, again, candidates)
        distances[again], indices[again] = gaps[:, :k], found[:, :k]
    return distances, indices


def _proved(
    last: np.ndarray, kth: np.ndarray, query_norms: np.ndarray, largest: float, width: int
) -> np.ndarray:
    """Whether no point left out of a query's candidates is as near as its `kth` (float64)
    distance, `last` the last candidate's float32 squared distance: a point of norm past
    ‖q‖ + kth is farther than kth, and one within it, at most R = min(M, ‖q‖ + kth) with
    M the `largest` norm, is at least the rounding bound (module docstring, ‖q‖ + R for
    ‖q‖ + M) away."""
    scale = query_norms + np.minimum(largest, query_norms + kth)
    rounded = 2.0 * (width + 3) * FLOAT32_ROUNDOFF * scale**2
    return kth < np.sqrt(np.maximum(last - rounded, 0.0)) - FLOAT32_ROUNDOFF * scale


def _without_query(candidates: np.ndarray, rows: np.ndarray, points: np.ndarray):
    """The candidates of each query (`rows`) other than itself (`search.without_self`),
    ordered by their float64 distance to it (ties by the lower row), and those distances."""
    others, _ = without_self(candidates, candidates, candidates.shape[1] - 1, rows)
    return _ordered(points, rows, others)


def _ordered(points: np.ndarray, rows: np.ndarray, candidates: np.ndarray):
    """`candidates` of each of `rows` (queries × m) sorted by their float64 distance to it
    (from the differences, a chunk of queries at a time), ties by the lower row, and those
    distances."""
    gaps = np.empty(candidates.shape)
    chunk = max(1, SIMILARITIES_PER_CHUNK // (candidates.shape[1] * points.shape[1]))
    for start in range(0, len(rows), chunk):
        part = slice(start, start + chunk)
        differences = points[candidates[part]] - points[rows[part], None, :]
        gaps[part] = np.linalg.norm(differences, axis=2)
    order = np.lexsort((candidates, gaps), axis=1)
    return np.take_along_axis(candidates, order, 1), np.take_along_axis(gaps, order, 1)
