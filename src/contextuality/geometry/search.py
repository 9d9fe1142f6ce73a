"""Each row's nearest neighbours: the exact search, the settings of the approximate one,
and the recall that measures it.

Exactly: every row against every row in chunks (on a GPU when one is given), ties broken
by the lower row. Past a number of rows an index finds them instead (`geometry.index`:
an HNSW graph or an inverted file), its breadth doubled until the recall measured on
calibration queries reaches a target, and its recall measured on other queries,

    recall = mean over sampled queries q of |{j ∈ N_index(q) : s(q, j) ≥ s_k(q)}| / k,

s_k(q) the score of the exact k-th nearest row of q, found against every row
(queries × n comparisons): a row tied with the exact neighbours counts as found.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from contextuality.configuration.schema import default
from contextuality.errors import ConfigError, check_integer, check_number

SEARCH_METHODS = ("auto", "exact", "hnsw", "ivf")
# Rows k-means trains on per cell of the index (FAISS warns under 39 a cell).
TRAINING_ROWS_PER_LIST = 64
# Similarities (chunk rows × n) computed at a time in the exact search: 2^25 float32.
SIMILARITIES_PER_CHUNK = 1 << 25
# The share of the rows an index may compare a query with (FAISS's count of its distance
# computations) before `auto` gives it up for the exact search, which costs less past it:
# a distance costs the inverted file 7 times and the graph 17 to 23 times what it costs
# the exact search's float32 products on a CPU, which puts their even shares at 0.13 to
# 0.14 and 0.04 to 0.06 (MiniLM's last layer on STS, 526,031 distinct rows by distance:
# bench/results/scan-rates-cpu2-minilm-sts-layer6.md); the limits stay under them.
SCAN_LIMITS = {"hnsw": 0.04, "ivf": 0.12}
# Relative slack under which a found row's float64 score still ties the exact k-th's.
TIE_TOLERANCE = 1e-12


@dataclass(frozen=True)
class SearchSettings:
    """How the neighbours are searched (config ``geometry.search``): `method` ``exact``,
    ``hnsw``, ``ivf`` or ``auto`` (exact up to `exact_up_to` rows, past them the graph,
    then the inverted file where the graph gives way);
    the graph's `links` a row and `construction_breadth`, and the `breadth` it searches
    with first; the inverted file's `lists` (None: 4 √n) and the `probes` it tries first;
    the `recall_target` the breadth or probes are doubled to reach (0: as given) on
    `recall_queries` calibration rows, and as many its recall is measured on."""

    method: str = default("geometry", "search", "method")
    exact_up_to: int = default("geometry", "search", "exact_up_to")
    links: int = default("geometry", "search", "links")
    construction_breadth: int = default("geometry", "search", "construction_breadth")
    breadth: int = default("geometry", "search", "breadth")
    lists: int | None = default("geometry", "search", "lists")
    probes: int = default("geometry", "search", "probes")
    recall_target: float = default("geometry", "search", "recall_target")
    recall_queries: int = default("geometry", "search", "recall_queries")

    def __post_init__(self) -> None:
        where = "geometry.search"
        if self.method not in SEARCH_METHODS:
            raise ConfigError(f"{where}.method: {self.method!r} is none of {SEARCH_METHODS}")
        check_integer(where, "exact_up_to", self.exact_up_to, 1)
        check_integer(where, "links", self.links, 2)
        check_integer(where, "construction_breadth", self.construction_breadth, 1)
        check_integer(where, "breadth", self.breadth, 1)
        if self.lists is not None:
            check_integer(where, "lists", self.lists, 1)
        check_integer(where, "probes", self.probes, 1)
        check_number(where, "recall_target", self.recall_target, 0.0, 1.0)
        check_integer(where, "recall_queries", self.recall_queries, 1)
        if self.method in ("hnsw", "ivf"):
            faiss_module()

    def indices_for(self, rows: int) -> tuple[str, ...]:
        """The indices to try in turn for a search of `rows` rows, the next where one gives
        way (none: exact): ``auto`` past `exact_up_to` the graph, then the inverted file
        (the graph stayed at a recall of 0.982 at any breadth on the last layer of MiniLM
        on STS by distance), else the one `method` names."""
        if self.method == "auto":
            return () if rows <= self.exact_up_to else ("hnsw", "ivf")
        return () if self.method == "exact" else (self.method,)

    def scan_limit(self, index: str) -> float:
        """The share of the rows the `index` (``hnsw``, ``ivf``) may compare each query
        with before `auto` gives it up (`SCAN_LIMITS`; every row otherwise)."""
        return SCAN_LIMITS[index] if self.method == "auto" else 1.0

    def lists_for(self, rows: int) -> int:
        """The inverted file's cells for `rows` rows: `lists`, or 4 √n (FAISS's guide: 4
        to 16 √n), at most one cell per `TRAINING_ROWS_PER_LIST` rows."""
        wanted = self.lists or round(4 * math.sqrt(rows))
        return max(1, min(wanted, rows // TRAINING_ROWS_PER_LIST))


def faiss_installed() -> bool:
    """Whether FAISS (the optional dependency of the indices) can be imported."""
    import importlib.util

    return importlib.util.find_spec("faiss") is not None


def faiss_module():
    """FAISS, or ConfigError naming the install (it is an optional dependency)."""
    try:
        import faiss
    except ImportError:
        raise ConfigError(
            "geometry.search: an index (hnsw, ivf) needs FAISS: pip install "
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
    # Filled in place: a chunk's small results kept as tensors would pin the allocator's
    # freed chunks below them, and the process would grow by the similarities it freed.
    indices = np.empty((len(queries), k), dtype=np.int64)
    cosines = np.empty((len(queries), k), dtype=np.float64)
    for start in range(0, len(queries), chunk):
        rows = torch.from_numpy(np.asarray(queries[start : start + chunk])).to(device)
        if dense is None:
            found = (units[queries[start : start + chunk]] @ units.T).toarray()
            similarities = torch.from_numpy(np.asarray(found, dtype=np.float32)).to(device)
        else:
            similarities = dense[rows] @ dense.T
        similarities[torch.arange(len(rows), device=device), rows] = -torch.inf
        values, columns = _top_lowest_rows(similarities, k)
        indices[start : start + len(rows)] = columns.cpu().numpy()
        cosines[start : start + len(rows)] = values.double().cpu().numpy()
    return indices, cosines


def _top_lowest_rows(similarities, k: int):
    """The `k` largest of each row of `similarities` (a torch tensor) and their columns,
    largest first, ties anywhere broken by the lower column: from ``topk`` of k + 1 where
    the one past the k is below the k-th (then no value outside them equals it), else,
    for those rows only, the lowest columns among the values equal to the k-th. (Counting
    the values equal to the k-th over every column cost a third of an exact search.)"""
    import torch

    width = min(k + 1, similarities.shape[1])
    values, columns = torch.topk(similarities, width, dim=1)
    if width > k:
        ambiguous = values[:, k] == values[:, k - 1]
        values, columns = values[:, :k], columns[:, :k]
    else:  # every column among the k: nothing outside them to tie with
        ambiguous = torch.zeros(len(values), dtype=torch.bool, device=values.device)
    kth = values[:, -1:]
    if ambiguous.any():
        rows = ambiguous.nonzero().ravel()
        tied = similarities[rows]
        greater, equal = tied > kth[rows], tied == kth[rows]
        needed = k - greater.sum(dim=1, keepdim=True)
        chosen = greater | (equal & (torch.cumsum(equal, dim=1) <= needed))
        columns[rows] = chosen.nonzero()[:, 1].view(-1, k)
        values[rows] = torch.gather(tied, 1, columns[rows])
    columns, order = torch.sort(columns, dim=1)
    values = torch.gather(values, 1, order)
    values, order = torch.sort(values, dim=1, descending=True, stable=True)
    return values, torch.gather(columns, 1, order)


def without_self(found: np.ndarray, scores: np.ndarray, k: int, rows: np.ndarray | None = None):
    """The `k` neighbours of each row of a search that asked for k + 1 (the queries
    `rows`, default every row in order): the row itself left out where it was found, the
    farthest otherwise (FAISS pads a short list with -1, which sorts last)."""
    n = len(found)
    rows = np.arange(n) if rows is None else rows
    own = found == rows[:, None]
    drop = np.where(own.any(axis=1), own.argmax(axis=1), k)
    keep = np.ones_like(found, dtype=bool)
    keep[np.arange(n), drop] = False
    indices = found[keep].reshape(n, k)
    values = scores[keep].reshape(n, k).astype(np.float64)
    return indices, np.where(indices < 0, -np.inf, values)


def share_found(
    rows: np.ndarray,
    indices: np.ndarray,
    queries: np.ndarray,
    device: str = "cpu",
    by_distance: bool = False,
) -> float:
    """The recall of a search's neighbours `indices` (n × k) on `queries` (row positions):
    the share of the k found for each query that are as near as its exact k-th nearest
    row, averaged over the queries,

        recall = mean over q of |{j ∈ N(q) : s(q, j) ≥ s_k(q)}| / k,

    s the cosine of unit `rows` (by distance, minus the distance), both sides in float64,
    so that a row tied with an exact neighbour (a repeated vector) counts as found: the
    exact search's choice among tied rows (the lower row) is a convention, not a nearer
    row."""
    exact = exact_nearest(rows, queries, indices.shape[1], by_distance, device)
    return recall_of(rows, queries, indices[queries], exact, by_distance)


def recall_of(rows, queries, found, exact, by_distance: bool) -> float:
    """`share_found` from the `found` and `exact` neighbours of `queries` (queries × k)."""
    kth = _scores(rows, queries, exact, by_distance).min(axis=1, keepdims=True)
    scored = _scores(rows, queries, found, by_distance)
    return float(np.mean(scored >= kth - TIE_TOLERANCE * np.abs(kth)))


def _scores(rows, queries, candidates, by_distance: bool) -> np.ndarray:
    """The float64 cosine (dot product of unit rows) of each query with each of its
    `candidates` (queries × k), or minus their distance; -inf for a candidate not found."""
    query = np.asarray(rows[queries], dtype=np.float64)[:, None, :]
    other = np.asarray(rows[np.maximum(candidates, 0)], dtype=np.float64)
    values = -np.linalg.norm(other - query, axis=2) if by_distance else np.sum(other * query, 2)
    return np.where(candidates < 0, -np.inf, values)


def exact_nearest(rows, queries: np.ndarray, k: int, by_distance: bool, device: str):
    """The exact k nearest other rows of each of `queries` (queries × k): by cosine
    (`exact_neighbours`), or by squared distance in float64 (a chunk of queries against
    every row at a time)."""
    if not by_distance:
        return exact_neighbours(rows, queries, k, device)[0]
    norms = np.einsum("ij,ij->i", rows, rows)
    chunk = max(1, SIMILARITIES_PER_CHUNK // (2 * len(rows)))
    nearest = np.empty((len(queries), k), dtype=np.int64)
    for start in range(0, len(queries), chunk):
        chosen = queries[start : start + chunk]
        squared = rows[chosen] @ rows.T
        squared *= -2.0
        squared += norms  # minus the query's own squared norm, which orders nothing
        squared[np.arange(len(chosen)), chosen] = np.inf
        nearest[start : start + len(chosen)] = _smallest(squared, k)
    return nearest


# Up to this many smallest values of a row are picked by as many passes of argmin, past
# it by one argpartition: on rows of 16,000 two passes took under a tenth of the time of
# one partition.
ARGMIN_PASSES_UP_TO = 4


def _smallest(values: np.ndarray, k: int) -> np.ndarray:
    """The columns of each row's `k` smallest `values` (rows × k, in no set order);
    `values` is overwritten where k is at most `ARGMIN_PASSES_UP_TO`."""
    if k > ARGMIN_PASSES_UP_TO:
        return np.argpartition(values, k - 1, axis=1)[:, :k]
    picked = np.empty((len(values), k), dtype=np.int64)
    rows = np.arange(len(values))
    for place in range(k):
        picked[:, place] = np.argmin(values, axis=1)
        values[rows, picked[:, place]] = np.inf
    return picked


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
    order, bounds = grouped(group, group.max() + 1)
    starts, ends = bounds[:-1], bounds[1:]

    def first(row: int) -> np.ndarray:
        start = starts[group[row]]
        return order[start : min(start + count, ends[group[row]])]

    return first


def grouped(group: np.ndarray, groups: int) -> tuple[np.ndarray, np.ndarray]:
    """The rows of each of `groups` groups (`group`: each row's, 0 to groups − 1) in row
    order, and where each begins: group j's rows are ``members[starts[j]:starts[j + 1]]``
    (starts: groups + 1)."""
    members = np.argsort(group, kind="stable")
    starts = np.concatenate([[0], np.cumsum(np.bincount(group, minlength=groups))])
    return members, starts
