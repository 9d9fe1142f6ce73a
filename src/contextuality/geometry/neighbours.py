"""Alignment of two representations of the same rows by their nearest neighbours: mutual
k-NN and CKNNA (Huh et al. 2024, as platonic-rep's ``metrics.py`` defines them).

Each representation's rows are L2-normalised and every row's k nearest other rows found by
cosine (`cosine_neighbours`): exactly, chunks of rows against all of them on a GPU when one
is given, ties broken by row order, the same in every layer, so that a tie is never
resolved differently in two representations by chance; or, past a number of rows, in an
FAISS index whose recall is measured (`geometry.search`, `geometry.index`).

    mutual k-NN(A, B) = mean_i |N_A(i) ∩ N_B(i)| / k,

1 for representations with the same neighbourhoods, about k / (n − 1) for unrelated ones.
CKNNA is CKA restricted to mutual neighbours: with K, L the cosine kernels and M the mask
of pairs (i, j) with j among the k nearest of i in both,

    CKNNA(A, B) = HSIC_u(M∘K, M∘L) / √(HSIC_u(M_A∘K, M_A∘K) HSIC_u(M_B∘L, M_B∘L)),

HSIC_u the unbiased estimator of Song et al. 2012 (`hsic_unbiased`); every kernel is
nonzero on n·k entries at most, so it is computed from sparse matrices, never n × n dense.
platonic-rep adds 1e-6 to the denominator; this does not (a ratio, NaN where a
self-similarity is not positive), which moves CKNNA by up to 1e-6 / HSIC (docs/geometry.md).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
from scipy import sparse

from contextuality.configuration.random_streams import generator
from contextuality.geometry.index import index_neighbours
from contextuality.geometry.search import (
    SearchSettings,
    categorical_neighbours,
    exact_neighbours,
    one_hot_codes,
)

# Values normalised at a time in float64 (`_unit_rows`): 2^22, 32 MiB.
ROWS_PER_NORM_CHUNK = 1 << 22


@dataclass(frozen=True)
class Neighbours:
    """Each row's `k` nearest other rows by cosine (n, k), nearest first, and those
    cosines (n, k) float64; `recall`: the share of the exact neighbours the search found
    (1 for the exact search, measured on sampled queries for an index)."""

    indices: np.ndarray
    cosines: np.ndarray
    recall: float = 1.0
    # The last bootstrap draw's weights and own_hsic under them (`own_hsic_weighted`).
    _last_draw: list = field(default_factory=list, init=False, repr=False, compare=False)

    @property
    def k(self) -> int:
        return self.indices.shape[1]

    def paired(self, pairing: np.ndarray) -> Neighbours:
        """The neighbours of the representation whose row i is row ``pairing[i]`` of this
        one (a permutation): a permutation null without a second search."""
        inverse = np.empty_like(pairing)
        inverse[pairing] = np.arange(len(pairing))
        return Neighbours(inverse[self.indices[pairing]], self.cosines[pairing], self.recall)

    @cached_property
    def mask(self) -> sparse.csr_matrix:
        """The 0/1 matrix of neighbour pairs (i, j): j among the k nearest of i (n × n)."""
        return self._pairs(np.ones(self.indices.size))

    @cached_property
    def own_kernel(self) -> sparse.csr_matrix:
        """The cosine kernel on the neighbour pairs (n × n, sparse)."""
        return self._pairs(self.cosines.ravel())

    @cached_property
    def own_hsic(self) -> float:
        """HSIC_u of the kernel on the neighbour pairs with itself (CKNNA's scale)."""
        return hsic_unbiased(self.own_kernel, self.own_kernel)

    def own_hsic_weighted(self, weights: np.ndarray | None) -> float:
        """`own_hsic` with row i counted ``weights[i]`` times (a bootstrap draw); the last
        draw's value is kept, since every pair of layers in a draw asks for it."""
        if weights is None:
            return self.own_hsic
        if self._last_draw and np.array_equal(self._last_draw[0], weights):
            return self._last_draw[1]
        value = hsic_unbiased(self.own_kernel, self.own_kernel, weights)
        self._last_draw[:] = [np.array(weights), value]
        return value

    def kernel(self, mask: sparse.csr_matrix) -> sparse.csr_matrix:
        """The cosine kernel on the pairs of `mask` (a 0/1 matrix of these pairs or fewer)."""
        return self.own_kernel.multiply(mask).tocsr()

    def _pairs(self, values: np.ndarray) -> sparse.csr_matrix:
        n, k = self.indices.shape
        rows = np.repeat(np.arange(n), k)
        return sparse.csr_matrix((values, (rows, self.indices.ravel())), (n, n))


def _unit_rows(vectors):
    """Rows scaled to norm 1 (float32; a zero row stays zero); a sparse matrix stays one."""
    if sparse.issparse(vectors):
        rows = sparse.csr_matrix(vectors, dtype=np.float32)
        norms = np.sqrt(np.asarray(rows.multiply(rows).sum(axis=1), dtype=np.float64)).ravel()
        scale = sparse.diags(np.where(norms > 0, 1.0 / np.where(norms > 0, norms, 1.0), 1.0))
        return sparse.csr_matrix(scale @ rows, dtype=np.float32)
    rows = np.asarray(vectors, dtype=np.float32)
    units = np.empty_like(rows)
    chunk = max(1, ROWS_PER_NORM_CHUNK // max(1, rows.shape[1]))
    for start in range(0, len(rows), chunk):  # float64 norms, a chunk of rows at a time
        part = rows[start : start + chunk].astype(np.float64)
        norms = np.linalg.norm(part, axis=1, keepdims=True)
        units[start : start + chunk] = part / np.where(norms > 0, norms, 1.0)
    return units


def cosine_neighbours(
    vectors,
    k: int,
    device: str = "cpu",
    search: SearchSettings | None = None,
    random: np.random.Generator | None = None,
) -> Neighbours:
    """Each row's `k` nearest other rows by cosine (self excluded): exactly
    (`search.exact_neighbours`, in float32 on `device`; rows of one-hot blocks, the word
    baselines, by their codes, `search.categorical_neighbours`, the same neighbours in
    O(n · k); any other scipy sparse `vectors` always exactly), or in a FAISS index
    where `search` says so for this many rows (`index.index_neighbours`: its training
    sample and recall queries drawn from `random`; exactly where it gives way)."""
    n = vectors.shape[0]
    if not 1 <= k < n:
        raise ValueError(f"k nearest neighbours need 1 <= k < n rows (k={k}, n={n})")
    codes = one_hot_codes(vectors)
    if codes is not None and codes.shape[1] <= 2:
        return Neighbours(*categorical_neighbours(codes, k))
    units = _unit_rows(vectors)
    found = None
    if search is not None and not sparse.issparse(units) and search.indices_for(n):
        random = random if random is not None else np.random.default_rng(0)
        found = index_neighbours(units, k, search, random, device)  # None: exact is cheaper
    if found is None:
        return Neighbours(*exact_neighbours(units, np.arange(n), k, device))
    return Neighbours(found.indices, found.scores, found.recall)


def layer_neighbours(
    layers: Iterable, k: int, device: str, search: SearchSettings, seed: int
) -> list[Neighbours]:
    """`cosine_neighbours` of each of `layers` (the same rows in each; taken one at a
    time, so that an iterator holds one layer's copy at once), an index's training sample
    and recall queries from stream ``neighbour_search``, the same for every layer."""
    return [
        cosine_neighbours(vectors, k, device, search, generator(seed, "neighbour_search"))
        for vectors in layers
    ]


@dataclass(frozen=True)
class SearchedNeighbours:
    """Each sampled row's k nearest neighbours in every layer of the left model (`left`)
    and of the right (`right`, the same list within one model)."""

    left: list[Neighbours]
    right: list[Neighbours]

    def recall(self) -> np.ndarray:
        """The lower of the two searches' recall for each pair of layers (left × right)."""
        return np.minimum.outer(
            [found.recall for found in self.left], [found.recall for found in self.right]
        )


def mutual_knn(left: Neighbours, right: Neighbours, weights: np.ndarray | None = None) -> float:
    """Mean over rows of the share of a row's k nearest neighbours in `left` that are
    also among its k nearest in `right` (the same k); `weights`: how many times each row
    counts in the mean (a bootstrap draw's multiplicities; None: once each)."""
    if left.indices.shape != right.indices.shape:
        raise ValueError("mutual k-NN compares neighbours of the same rows and the same k")
    shared = np.asarray(left.mask.multiply(right.mask).sum(axis=1)).ravel()
    return float(np.average(shared, weights=weights) / left.k)


def hsic_unbiased(
    kernel: sparse.csr_matrix, other: sparse.csr_matrix, weights: np.ndarray | None = None
) -> float:
    """HSIC_u(K, L) (Song et al. 2012) of two n × n kernels, their diagonals set to zero:
    [tr(K̃L̃) + 1ᵀK̃1 · 1ᵀL̃1 / ((n−1)(n−2)) − 2 · 1ᵀK̃L̃1 / (n−2)] / (n(n−3)).
    `weights` w: row i taken w_i times, its copies not paired with each other (zero
    between them, as on the diagonal): n = Σw, tr(K̃L̃) = Σ w_i w_j K_ij L_ji,
    1ᵀK̃1 = wᵀK̃w and 1ᵀK̃L̃1 = Σ_j w_j (K̃ᵀw)_j (L̃w)_j."""
    counts = np.ones(kernel.shape[0]) if weights is None else np.asarray(weights, dtype=float)
    n = float(counts.sum())
    if n < 4:
        return float("nan")
    kernel, other = (_zero_diagonal(matrix) for matrix in (kernel, other))
    trace = float(kernel.multiply(other.T).tocsr() @ counts @ counts)
    totals = float(counts @ (kernel @ counts)) * float(counts @ (other @ counts))
    middle = float(np.sum(counts * (kernel.T @ counts) * (other @ counts)))
    value = trace + totals / ((n - 1) * (n - 2)) - 2.0 * middle / (n - 2)
    return float(value / (n * (n - 3)))


def _zero_diagonal(matrix: sparse.csr_matrix) -> sparse.csr_matrix:
    """`matrix` less its diagonal, staying sparse in CSR (no per-element edit); `matrix`
    itself where its diagonal is zero already, as every neighbour kernel's is (a row is
    not its own neighbour), which saves a copy per HSIC, a third of CKNNA's time."""
    diagonal = matrix.diagonal()
    if not diagonal.any():
        return matrix
    return (matrix - sparse.diags(diagonal, format="csr")).tocsr()


def cknna(left: Neighbours, right: Neighbours, weights: np.ndarray | None = None) -> float:
    """CKNNA: CKA of the cosine kernels on the pairs that are neighbours in both, over
    each kernel on its own neighbour pairs (NaN where one of those is not positive);
    `weights` as `hsic_unbiased` takes them."""
    if left.indices.shape != right.indices.shape:
        raise ValueError("CKNNA compares neighbours of the same rows and the same k")
    both = left.mask.multiply(right.mask).tocsr()
    between = hsic_unbiased(left.kernel(both), right.kernel(both), weights)
    scale = left.own_hsic_weighted(weights) * right.own_hsic_weighted(weights)
    return between / np.sqrt(scale) if scale > 0 else float("nan")
