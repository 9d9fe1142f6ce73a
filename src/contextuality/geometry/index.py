"""Each row's nearest neighbours from a FAISS index, its breadth calibrated to a recall.

Two indices (`geometry.search.method`): an HNSW graph (``IndexHNSWFlat``: each row
linked to `links` near rows, twice as many in its bottom layer, built with
`construction_breadth` candidates a row; a query walks it keeping its `breadth` best
candidates) and an inverted file (``IndexIVFFlat``:
the rows cut into `lists` cells by k-means on a seeded sample; a query compares the rows
of its `probes` nearest cells). How much breadth a recall needs depends on the rows
(the inverted file on MiniLM's last layer needs a quarter of its cells, on clustered
Gaussian rows a few; the graph the reverse). So the breadth is doubled from the
setting until the recall on calibration queries reaches ``recall_target``; the recall
reported is measured on other queries (`search.share_found`). Where the breadth would
compare each query with more than ``scan_limit`` of the rows (as FAISS counts its
distances; `auto`: `search.SCAN_LIMITS`, where the exact search costs less; any other
method: every row), the index gives way: to the next that `auto` tries, the inverted
file after the graph, and after the last to the exact search (None here).

Only distinct rows are indexed (`DistinctRows`): an embedding layer repeats a vector at
every occurrence of a word at a position (half of MiniLM's embedding outputs on STS), and
a graph whose rows are many copies of one vector links a copy to copies only, which kept
its recall at 0.985 at any breadth. A row's neighbours are then the copies of its own
vector and of the nearest distinct vectors, in row order within each (the exact search's
tie-break), the row itself left out.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np

from contextuality.geometry.exact_distance import exact_distance_neighbours
from contextuality.geometry.search import (
    SIMILARITIES_PER_CHUNK,
    TRAINING_ROWS_PER_LIST,
    SearchSettings,
    exact_nearest,
    faiss_installed,
    faiss_module,
    grouped,
    recall_of,
    share_found,
    without_self,
)

log = logging.getLogger(__name__)

# Queries whose distinct neighbours are expanded into rows at a time (`DistinctRows`).
EXPANDED_QUERIES_PER_CHUNK = 1 << 16


@dataclass(frozen=True)
class IndexSearch:
    """What an index found: each row's `k` nearest other rows (n × k), their
    float32-computed scores as float64 (cosines, or by distance the negated squared
    distances), nearest first, the `breadth` the search settled on (the graph's search
    breadth, or the inverted file's probes), its measured `recall`, the distinct rows it
    `indexed`, and the `share` of them a calibration query was compared with there
    (`_Built.share_compared`)."""

    indices: np.ndarray
    scores: np.ndarray
    breadth: int
    recall: float
    indexed: int
    share: float


@dataclass
class _Built:
    """A FAISS index ready to search: how to set its breadth, the breadth to try first,
    the most it takes, and the share of the rows a query meets at a breadth."""

    index: object
    method: str
    first: int
    most: int
    rows: int
    links: int = 0

    def set_breadth(self, breadth: int) -> None:
        if self.method == "hnsw":
            self.index.hnsw.efSearch = breadth
        else:
            self.index.nprobe = breadth

    def share_compared(self, breadth: int, searched: int) -> float:
        """The share of the rows each of the last `searched` queries was compared with, as
        FAISS counted its distance computations (an inverted file's cells are as unequal
        as the rows' density: on MiniLM's last layer on STS 16 of 2,901 cells compared a
        query with 3 % of the rows, five times their share); where FAISS counts none (its
        GPU index), the probed cells' share or the graph's candidates times a row's
        bottom-layer links."""
        counted = self._counter().ndis / max(searched, 1) / self.rows
        if counted > 0:
            return counted
        if self.method == "hnsw":
            return breadth * self.links / self.rows
        return breadth / self.most

    def count_from_zero(self) -> None:
        """Start FAISS's count of distance computations again."""
        self._counter().reset()

    def _counter(self):
        faiss = faiss_module()
        return faiss.cvar.hnsw_stats if self.method == "hnsw" else faiss.cvar.indexIVF_stats


@dataclass(frozen=True)
class DistinctRows:
    """The distinct rows of a set (`rows`, m × d, in order of first occurrence), the
    distinct row of each row (`of_row`, n), and the rows grouped by their distinct row in
    row order (`members`, n; distinct row j's are ``members[starts[j]:starts[j + 1]]``)."""

    rows: np.ndarray
    of_row: np.ndarray
    members: np.ndarray
    starts: np.ndarray

    def expanded(self, found: np.ndarray, scores: np.ndarray, width: int):
        """Each query's first `width` rows among the members of its distinct neighbours
        `found` (queries × j, nearest first, -1 for none), each neighbour's members in
        row order and scored as it is; -1 past them."""
        sizes = np.diff(self.starts)
        known = np.maximum(found, 0)
        taken = np.where(found >= 0, np.minimum(sizes[known], width), 0)
        indices = np.empty((len(found), width), dtype=np.int64)
        values = np.empty((len(found), width), dtype=scores.dtype)
        offsets = np.arange(width)
        for start in range(0, len(found), EXPANDED_QUERIES_PER_CHUNK):
            part = slice(start, start + EXPANDED_QUERIES_PER_CHUNK)
            valid = (offsets < taken[part, :, None]).reshape(len(taken[part]), -1)
            positions = np.minimum(self.starts[known[part], None] + offsets, len(self.members) - 1)
            candidates = self.members[positions].reshape(valid.shape)
            scored = np.repeat(scores[part], width, axis=1)
            order = np.argsort(~valid, axis=1, kind="stable")[:, :width]
            kept = np.take_along_axis(valid, order, 1)
            indices[part] = np.where(kept, np.take_along_axis(candidates, order, 1), -1)
            values[part] = np.take_along_axis(scored, order, 1)
        return indices, values


def distinct_rows(rows: np.ndarray) -> DistinctRows | None:
    """The distinct rows of `rows` (n × d), or None where no row repeats another. Rows
    are grouped by a seeded hash of their bytes (integer products, exact in any order,
    a chunk at a time, no copy of the rows) and each group checked to hold copies of one
    row; where the hash ties two different rows, by their bytes themselves instead."""
    n = len(rows)
    rows = np.ascontiguousarray(rows)
    words = rows.view(np.dtype(f"u{rows.itemsize}"))
    random = np.random.default_rng(0)
    multipliers = random.integers(1, 2**63, rows.shape[1], dtype=np.uint64) | np.uint64(1)
    hashes = np.empty(n, dtype=np.uint64)
    chunk = max(1, SIMILARITIES_PER_CHUNK // (8 * rows.shape[1]))
    for start in range(0, n, chunk):  # a sum of products modulo 2^64
        hashes[start : start + chunk] = (words[start : start + chunk] * multipliers).sum(axis=1)
    _, first, group = np.unique(hashes, return_index=True, return_inverse=True)
    if len(first) == n:
        return None
    group = group.ravel()
    if not all(
        np.array_equal(rows[start : start + chunk], rows[first[group[start : start + chunk]]])
        for start in range(0, n, chunk)
    ):
        keys = rows.view(np.dtype((np.void, rows.itemsize * rows.shape[1])))
        _, first, group = np.unique(keys.ravel(), return_index=True, return_inverse=True)
        group = group.ravel()
        if len(first) == n:
            return None
    by_first = np.argsort(first)
    renumbered = np.empty_like(by_first)
    renumbered[by_first] = np.arange(len(first))
    of_row = renumbered[group]
    members, starts = grouped(of_row, len(first))
    return DistinctRows(rows[first[by_first]], of_row, members, starts)


def _searched(built: _Built, distinct, rows, queries, k: int, by_distance: bool):
    """The `k` nearest other rows of each of `queries` (row positions; None: every row)
    found in the index, and their scores (cosines, or negated squared distances)."""
    if distinct is None:
        scores, found = built.index.search(rows if queries is None else rows[queries], k + 1)
    else:
        if queries is None:  # every distinct row, each row's own
            wanted, back = np.arange(len(distinct.rows)), distinct.of_row
            asked_rows = distinct.rows
        else:
            wanted, back = np.unique(distinct.of_row[queries], return_inverse=True)
            asked_rows = distinct.rows[wanted]
        scores, found = built.index.search(asked_rows, k + 1)
        # A distinct row is its own nearest (cosine |u|², distance 0) even where the
        # index misses it: put it first.
        found, scores = without_self(found, scores, k, wanted)
        own = np.zeros(len(wanted)) if by_distance else np.einsum("ij,ij->i", *[asked_rows] * 2)
        found = np.column_stack([wanted, found])
        scores = np.column_stack([own, scores])
        found, scores = distinct.expanded(found, scores, k + 1)
        found, scores = found[back.ravel()], scores[back.ravel()]
    return without_self(found, -scores if by_distance else scores, k, queries)


def built_index(
    faiss,
    rows: np.ndarray,
    method: str,
    settings: SearchSettings,
    random,
    by_distance: bool,
    device: str,
) -> _Built:
    """The index `method` (``hnsw`` or ``ivf``) of `rows`, built (and trained on a sample
    drawn from `random`); an inverted file on a CUDA `device` where FAISS has one (FAISS's
    GPU build has no HNSW graph, which stays on the CPU)."""
    n, width = rows.shape
    metric = faiss.METRIC_L2 if by_distance else faiss.METRIC_INNER_PRODUCT
    if method == "hnsw":
        index = faiss.IndexHNSWFlat(width, settings.links, metric)
        index.hnsw.efConstruction = settings.construction_breadth
        index.add(rows)
        links = index.hnsw.nb_neighbors(0)  # a row's in the bottom layer: 2 × links
        most = -(-n // links)  # a breadth at which a query meets every row
        return _Built(index, "hnsw", min(settings.breadth, most), most, n, links)
    lists = settings.lists_for(n)
    quantizer = (faiss.IndexFlatL2 if by_distance else faiss.IndexFlatIP)(width)
    index = faiss.IndexIVFFlat(quantizer, width, lists, metric)
    if device.startswith("cuda") and getattr(faiss, "get_num_gpus", lambda: 0)() > 0:
        resources = faiss.StandardGpuResources()
        index = faiss.index_cpu_to_gpu(resources, int(device.partition(":")[2] or 0), index)
        index.referenced_resources = resources  # held while the index searches
    training = min(n, lists * TRAINING_ROWS_PER_LIST)
    index.train(rows[np.sort(random.choice(n, training, replace=False))])
    index.add(rows)
    return _Built(index, "ivf", min(settings.probes, lists), lists, n)


@dataclass(frozen=True)
class _Calibration:
    """The queries an index's breadth is calibrated on (`queries`), their exact nearest
    (`exact`), and the queries its reported recall is measured on (`reported`)."""

    queries: np.ndarray
    exact: np.ndarray
    reported: np.ndarray


def index_neighbours(
    rows: np.ndarray,
    k: int,
    settings: SearchSettings,
    random: np.random.Generator,
    device: str = "cpu",
    by_distance: bool = False,
    exact_rows: np.ndarray | None = None,
) -> IndexSearch | None:
    """Each row's `k` nearest other rows of `rows` (float32; unit rows by cosine, any rows
    `by_distance`) in the first index of ``settings.indices_for`` their size that does not
    give way (`built_index`; training samples and the recall queries drawn from `random`), its
    breadth doubled until the recall on calibration queries reaches
    ``settings.recall_target``; the recall reported is measured on other queries,
    `exact_rows` (the rows in float64, default `rows`) scoring them. An index gives way
    where that recall needs more than ``settings.scan_limit()`` of the rows compared a
    query (a graph: or every row); None where every one does: the exact search is then
    the cheaper."""
    faiss = faiss_module()
    n = len(rows)
    exact_rows = rows if exact_rows is None else exact_rows
    distinct = distinct_rows(rows)
    indexed = rows if distinct is None else distinct.rows
    calibration = None
    methods = settings.indices_for(n)
    for method in methods:
        built = built_index(faiss, indexed, method, settings, random, by_distance, device)
        if calibration is None:  # drawn after the first index, the same for the next
            queries, reported = _recall_queries(n, settings.recall_queries, random)
            exact = exact_nearest(exact_rows, queries, k, by_distance, device)
            calibration = _Calibration(queries, exact, reported)
        what = f"{method} index of {n:,} rows" + (
            "" if distinct is None else f" ({len(indexed):,} distinct)"
        )
        breadth, calibrated, share = _calibrated(
            built, distinct, rows, exact_rows, calibration, k, settings, by_distance
        )
        if _gives_way(built, share, calibrated, settings):
            last = method == methods[-1]
            log.info(
                "%s: recall %.4f at breadth %d (%.1f%% of the rows compared a query): %s",
                what, calibrated, breadth, 100 * share,
                "searching exactly instead" if last else "trying the next index",
            )  # fmt: skip
            del built  # before the next is built
            continue
        indices, scores = _searched(built, distinct, rows, None, k, by_distance)
        found_recall = share_found(exact_rows, indices, calibration.reported, device, by_distance)
        log.info(
            "%s: breadth %d, recall %.4f (calibration %.4f)", what, breadth, found_recall,
            calibrated,
        )  # fmt: skip
        return IndexSearch(indices, scores, breadth, found_recall, len(indexed), share)
    return None


def _gives_way(built: _Built, share: float, recall: float, settings: SearchSettings) -> bool:
    """Whether an index at its calibrated breadth, comparing a query with `share` of the
    rows at `recall`, gives way: that share is past ``settings.scan_limit(method)``, or it
    is a graph short of the target (a graph's recall can stay short of it at any breadth)."""
    return share > settings.scan_limit(built.method) or (
        built.method == "hnsw" and recall < settings.recall_target
    )


def _calibrated(
    built: _Built,
    distinct,
    rows,
    exact_rows,
    calibration: _Calibration,
    k: int,
    settings: SearchSettings,
    by_distance: bool,
) -> tuple[int, float, float]:
    """The breadth of `built` doubled from its first until the recall on the calibration
    queries reaches ``settings.recall_target``, it meets every row, or it compares a query
    with more than ``settings.scan_limit(method)`` of the rows; that breadth, its recall
    and the share of the rows a query was compared with there (`_Built.share_compared`)."""
    queries = calibration.queries
    searched = len(queries) if distinct is None else len(np.unique(distinct.of_row[queries]))
    breadth = built.first
    while True:
        built.set_breadth(breadth)
        built.count_from_zero()
        found, _ = _searched(built, distinct, rows, queries, k, by_distance)
        share = built.share_compared(breadth, searched)
        recall = recall_of(exact_rows, queries, found, calibration.exact, by_distance)
        reached = recall >= settings.recall_target or breadth >= built.most
        if reached or share > settings.scan_limit(built.method):
            return breadth, recall, share
        breadth = min(2 * breadth, built.most)


def _recall_queries(n: int, queries: int, random: np.random.Generator):
    """Two sorted sets of `queries` rows drawn from `random`: the breadth's calibration
    and the reported recall's, disjoint where the rows allow (the second has the rows
    left past the first, or is the first where none are left)."""
    drawn = random.choice(n, min(n, 2 * queries), replace=False)
    calibration = np.sort(drawn[:queries])
    return calibration, (np.sort(drawn[queries:]) if len(drawn) > queries else calibration)


def euclidean_neighbours(
    points: np.ndarray,
    k: int,
    settings: SearchSettings | None = None,
    random: np.random.Generator | None = None,
) -> tuple[np.ndarray, np.ndarray, float]:
    """Each point's distances to its `k` nearest other points (n × k, nearest first), their
    rows, and the search's recall: exactly (`exact_distance.exact_distance_neighbours`
    where FAISS is installed, else scikit-dimension's ``get_nn``), or where
    `settings` says so for this many points (and the index does not give way to the exact
    search) in the index it names, by squared distance (float32, `index_neighbours`; the
    distances of the points it finds then computed in float64, its recall scored in
    float64 on points drawn from `random`)."""
    found = None
    if settings is not None and settings.indices_for(len(points)):
        random = random if random is not None else np.random.default_rng(0)
        rows = np.ascontiguousarray(points, dtype=np.float32)
        points = np.asarray(points, dtype=np.float64)
        found = index_neighbours(rows, k, settings, random, by_distance=True, exact_rows=points)
    if found is None:
        return (*_exact_euclidean(points, k), 1.0)
    distances, indices = _exact_distances(points, found.indices)
    return distances, indices, found.recall


def _exact_euclidean(points: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Each point's distances to its `k` nearest other points and their rows, exactly:
    float32 products proved in float64 where FAISS is installed (`exact_distance`),
    else scikit-dimension's float64 search."""
    if faiss_installed():
        return exact_distance_neighbours(points, k)
    from skdim import get_nn

    return get_nn(points, k=k)


def _exact_distances(points: np.ndarray, indices: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The float64 distances of each point to the neighbours `indices` found for it (an
    index's float32 squared distances lose a small distance beside large norms), both
    sorted by them, nearest first; a neighbour not found (-1) at infinity, last."""
    distances = np.empty(indices.shape)
    chunk = max(1, SIMILARITIES_PER_CHUNK // (indices.shape[1] * points.shape[1]))
    for start in range(0, len(points), chunk):
        rows = indices[start : start + chunk]
        gaps = points[np.maximum(rows, 0)] - points[start : start + chunk, None, :]
        distances[start : start + chunk] = np.where(rows < 0, np.inf, np.linalg.norm(gaps, axis=2))
    order = np.argsort(distances, axis=1, kind="stable")
    return np.take_along_axis(distances, order, 1), np.take_along_axis(indices, order, 1)
