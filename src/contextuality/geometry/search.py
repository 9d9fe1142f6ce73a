"""Each row's nearest neighbours by cosine: exact, or from an index with measured recall.

Exactly: every row against every row in chunks (on a GPU when one is given). Past a
number of rows: an inverted-file index (FAISS's ``IndexIVFFlat``), whose recall against
the exact search is measured on sampled queries and kept with what it finds.

An inverted-file index cuts the unit rows into `lists` cells by k-means (trained on a
seeded sample of rows) and compares each query with the rows of its `probes` nearest
cells only: about n · probes / lists comparisons a query instead of n. The cosines of the
neighbours it finds are exact; the neighbours it misses are what its recall counts,

    recall = mean over sampled queries q of |N_index(q) ∩ N_exact(q)| / k,

the exact neighbours of those queries found against every row (queries × n comparisons).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from contextuality.configuration.schema import default
from contextuality.errors import ConfigError, check_integer

SEARCH_METHODS = ("auto", "exact", "ivf")
# Rows k-means trains on per cell of the index (FAISS warns under 39 a cell).
TRAINING_ROWS_PER_LIST = 64
# Similarities (chunk rows × n) computed at a time in the exact search: 2^25 float32.
SIMILARITIES_PER_CHUNK = 1 << 25


@dataclass(frozen=True)
class SearchSettings:
    """How the neighbours are searched (config ``geometry.search``): `method`
    ``exact``, ``ivf`` or ``auto`` (exact up to `exact_up_to` rows, the index past them);
    the index's `lists` (None: 4 √n) and `probes`; the `recall_queries` its recall is
    measured on."""

    method: str = default("geometry", "search", "method")
    exact_up_to: int = default("geometry", "search", "exact_up_to")
    lists: int | None = default("geometry", "search", "lists")
    probes: int = default("geometry", "search", "probes")
    recall_queries: int = default("geometry", "search", "recall_queries")

    def __post_init__(self) -> None:
        where = "geometry.search"
        if self.method not in SEARCH_METHODS:
            raise ConfigError(f"{where}.method: {self.method!r} is none of {SEARCH_METHODS}")
        check_integer(where, "exact_up_to", self.exact_up_to, 1)
        if self.lists is not None:
            check_integer(where, "lists", self.lists, 1)
        check_integer(where, "probes", self.probes, 1)
        check_integer(where, "recall_queries", self.recall_queries, 1)
        if self.method == "ivf":
            faiss_module()

    def method_for(self, rows: int) -> str:
        """``exact`` or ``ivf`` for a search of `rows` rows."""
        if self.method != "auto":
            return self.method
        return "exact" if rows <= self.exact_up_to else "ivf"

    def lists_for(self, rows: int) -> int:
        """The index's cells for `rows` rows: `lists`, or 4 √n (FAISS's guide: 4 to 16
        √n), at most one cell per `TRAINING_ROWS_PER_LIST` rows."""
        wanted = self.lists or round(4 * math.sqrt(rows))
        return max(1, min(wanted, rows // TRAINING_ROWS_PER_LIST))


def faiss_module():
    """FAISS, or ConfigError naming the install (it is an optional dependency)."""
    try:
        import faiss
    except ImportError:
        raise ConfigError(
            "geometry.search: an inverted-file index needs FAISS: pip install "
            "'contextuality[scale]' (faiss-cpu), or set method: exact"
        ) from None
    return faiss


def exact_neighbours(units, queries: np.ndarray, k: int, device: str):
    """The `k` nearest rows of `units` (unit rows, float32, n × d; numpy or a scipy sparse
    matrix) to each row of `queries` (row positions), the query itself left out: indices
    (queries × k) and float64 cosines, nearest first, ties broken by the lower row."""
    import torch
    from scipy import sparse

    n = units.shape[0]
    dense = None if sparse.issparse(units) else torch.from_numpy(units).to(device)
    chunk = max(1, SIMILARITIES_PER_CHUNK // n)
    indices, cosines = [], []
    for start in range(0, len(queries), chunk):
        rows = torch.from_numpy(np.asarray(queries[start : start + chunk])).to(device)
        if dense is None:
            found = (units[queries[start : start + chunk]] @ units.T).toarray()
            similarities = torch.from_numpy(np.asarray(found, dtype=np.float32)).to(device)
        else:
            similarities = dense[rows] @ dense.T
        similarities[torch.arange(len(rows), device=device), rows] = -torch.inf
        kth = torch.topk(similarities, k, dim=1).values[:, -1:]
        greater = similarities > kth
        equal = similarities == kth
        needed = k - greater.sum(dim=1, keepdim=True)
        chosen = greater | (equal & (torch.cumsum(equal, dim=1) <= needed))
        columns = chosen.nonzero()[:, 1].view(-1, k)
        values = torch.gather(similarities, 1, columns)
        values, order = torch.sort(values, dim=1, descending=True, stable=True)
        indices.append(torch.gather(columns, 1, order).cpu().numpy())
        cosines.append(values.double().cpu().numpy())
    return np.concatenate(indices), np.concatenate(cosines)


def index_neighbours(
    units: np.ndarray,
    k: int,
    settings: SearchSettings,
    random: np.random.Generator,
    device: str = "cpu",
    by_distance: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """Each row's `k` nearest other rows of `units` (unit rows, float32) in an
    inverted-file index trained on a sample drawn from `random`, on a CUDA `device` where
    FAISS is built for one: indices (n × k) and float64 cosines, nearest first; with
    `by_distance`, of any float32 rows by squared distance, negated (nearest first)."""
    faiss = faiss_module()
    n, width = units.shape
    lists = settings.lists_for(n)
    quantizer = (faiss.IndexFlatL2 if by_distance else faiss.IndexFlatIP)(width)
    metric = faiss.METRIC_L2 if by_distance else faiss.METRIC_INNER_PRODUCT
    index = faiss.IndexIVFFlat(quantizer, width, lists, metric)
    if device.startswith("cuda") and getattr(faiss, "get_num_gpus", lambda: 0)() > 0:
        resources = faiss.StandardGpuResources()  # held while the index searches
        index = faiss.index_cpu_to_gpu(resources, int(device.partition(":")[2] or 0), index)
    training = min(n, lists * TRAINING_ROWS_PER_LIST)
    index.train(units[np.sort(random.choice(n, training, replace=False))])
    index.add(units)
    index.nprobe = min(settings.probes, lists)
    scores, found = index.search(units, k + 1)
    return _without_self(found, -scores if by_distance else scores, k)


def euclidean_neighbours(
    points: np.ndarray,
    k: int,
    settings: SearchSettings | None = None,
    random: np.random.Generator | None = None,
) -> tuple[np.ndarray, np.ndarray, float]:
    """Each point's distances to its `k` nearest other points (n × k, nearest first), their
    rows, and the search's recall: exactly (scikit-dimension's ``get_nn``), or where
    `settings` says so for this many points in an inverted-file index by squared distance
    (float32; the distances of the points it finds then computed in float64), its recall
    measured on ``settings.recall_queries`` points drawn from `random` against an exact
    search of them."""
    from skdim import get_nn

    n = len(points)
    if settings is None or settings.method_for(n) == "exact":
        distances, indices = get_nn(points, k=k)
        return distances, indices, 1.0
    random = random if random is not None else np.random.default_rng(0)
    rows = np.ascontiguousarray(points, dtype=np.float32)
    indices, _ = index_neighbours(rows, k, settings, random, by_distance=True)
    distances, indices = _exact_distances(points, indices)
    queries = np.sort(random.choice(n, min(n, settings.recall_queries), replace=False))
    return distances, indices, _euclidean_recall(points, indices, queries)


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


def _euclidean_recall(points: np.ndarray, indices: np.ndarray, queries: np.ndarray) -> float:
    """The share of each query's exact k nearest points (by squared distance in float64,
    a chunk of queries against every point at a time) that `indices` holds."""
    k, norms = indices.shape[1], np.sum(points**2, axis=1)
    chunk = max(1, SIMILARITIES_PER_CHUNK // (2 * len(points)))
    shared = 0
    for start in range(0, len(queries), chunk):
        chosen = queries[start : start + chunk]
        squared = norms[chosen][:, None] - 2.0 * points[chosen] @ points.T + norms[None, :]
        squared[np.arange(len(chosen)), chosen] = np.inf
        nearest = np.argpartition(squared, k - 1, axis=1)[:, :k]
        pairs = zip(indices[chosen], nearest, strict=True)
        shared += sum(np.intersect1d(one, two).size for one, two in pairs)
    return float(shared / (k * len(queries)))


def _without_self(found: np.ndarray, cosines: np.ndarray, k: int):
    """The `k` neighbours of each row of a search that asked for k + 1: the row itself
    left out where it was found, the farthest otherwise (FAISS pads a short list with -1,
    which sorts last)."""
    n = len(found)
    own = found == np.arange(n)[:, None]
    drop = np.where(own.any(axis=1), own.argmax(axis=1), k)
    keep = np.ones_like(found, dtype=bool)
    keep[np.arange(n), drop] = False
    indices = found[keep].reshape(n, k)
    values = cosines[keep].reshape(n, k).astype(np.float64)
    return indices, np.where(indices < 0, -np.inf, values)


def recall(
    units: np.ndarray,
    indices: np.ndarray,
    queries: np.ndarray,
    device: str,
) -> float:
    """The share of the exact k nearest rows of each of `queries` (row positions) that
    `indices` (n × k, a search's neighbours) holds, averaged over the queries."""
    k = indices.shape[1]
    exact, _ = exact_neighbours(units, queries, k, device)
    found = indices[queries]
    shared = [np.intersect1d(one, two).size for one, two in zip(found, exact, strict=True)]
    return float(np.mean(shared) / k)


def one_hot_codes(units) -> np.ndarray | None:
    """The codes of rows that are blocks of one-hot vectors (a scipy sparse matrix whose
    rows all hold the same number m of equal nonzeros: the word baselines), each row's m
    columns (n × m, ascending); None for any other matrix."""
    from scipy import sparse

    if not sparse.issparse(units):
        return None
    rows = sparse.csr_matrix(units)
    rows.sort_indices()
    counts = np.diff(rows.indptr)
    if len(counts) == 0 or counts.min() != counts.max() or counts[0] == 0:
        return None
    if not np.all(rows.data == rows.data[0]):
        return None
    return rows.indices.reshape(len(counts), counts[0])


def categorical_neighbours(codes: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The `k` nearest other rows of one-hot blocks (`one_hot_codes`: each row's m codes,
    one per block) by cosine, the shared codes over m, as the exact search orders them (by
    cosine, ties by the lower row) without comparing every pair: a row's neighbours are
    the first rows, in row order, of those sharing all its codes, then (m = 2) one of
    them, then none. Indices (n × k) and float64 cosines; O(n · k) where the exact search
    is O(n²). For one or two codes a row (the word baselines)."""
    n, width = codes.shape
    if width > 2 or not 1 <= k < n:
        raise ValueError(f"one-hot rows of one or two codes and 1 <= k < n (m={width}, k={k})")
    full = _first_rows(codes, k + 1)
    alone = (
        [_first_rows(codes[:, [block]], 2 * k + 1) for block in range(width)] if width > 1 else []
    )
    every = np.arange(min(n, 2 * k + 2))
    indices = np.empty((n, k), dtype=np.int64)
    cosines = np.empty((n, k), dtype=np.float64)
    for row in range(n):
        levels = [(1.0, full(row))]
        if alone:
            levels.append((0.5, np.union1d(*(first(row) for first in alone))))
        levels.append((0.0, every))
        taken: list[int] = []
        shares: list[float] = []
        for share, candidates in levels:
            for other in candidates:
                if len(taken) == k:
                    break
                if other == row or other in taken:
                    continue
                if share == 0.0 and np.any(codes[other] == codes[row]):
                    continue
                taken.append(int(other))
                shares.append(share)
        indices[row], cosines[row] = taken, shares
    return indices, cosines


def _first_rows(keys: np.ndarray, count: int):
    """A function of a row giving the first `count` rows, in row order, whose `keys`
    (n × j) equal its own."""
    _, group = np.unique(keys, axis=0, return_inverse=True)
    group = group.ravel()
    order = np.argsort(group, kind="stable")
    starts = np.searchsorted(group[order], np.arange(group.max() + 1))
    ends = np.append(starts[1:], len(order))

    def first(row: int) -> np.ndarray:
        start = starts[group[row]]
        return order[start : min(start + count, ends[group[row]])]

    return first
