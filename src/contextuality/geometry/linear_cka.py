"""Linear CKA (Kornblith et al. 2019) between layers of one model and between models.

For representations X (n × p) and Y (n × q) of the same n occurrences, columns centered,

    CKA(X, Y) = ‖YᵀX‖²_F / (‖XᵀX‖_F ‖YᵀY‖_F),

which equals the kernel form HSIC(K, L) / √(HSIC(K, K) HSIC(L, L)) with K = XXᵀ, L = YYᵀ and
HSIC(K, L) = tr(KHLH) (H = I − 11ᵀ/n): 1 for representations equal up to an orthogonal map
and an isotropic scale, 0 for uncorrelated ones. This form is biased upward: on n rows of
p independent dimensions its expectation for unrelated representations is about p/n, not
0. Debiased CKA (Nguyen et al. 2021) puts the unbiased HSIC estimator of Song et al. 2012
in its place, with K̃, L̃ the Gram matrices of zero diagonal:

    HSIC_u(K, L) = [tr(K̃L̃) + 1ᵀK̃1·1ᵀL̃1 / ((n−1)(n−2)) − 2·1ᵀK̃L̃1 / (n−2)] / (n(n−3)).

Both are computed from feature-space sums accumulated over chunks of rows (the
cross-products, and the rows' squared norms against each other and against the features):
O(n·p·q) time, never an n × n matrix.

Rows are shifted (by default by the first chunk's mean; both estimators ignore a shift)
and multiplied in float64, so a large common mean (decoders' vectors sit far from the
origin) does not cancel catastrophically; the alignment shifts each set of rows by its own
mean (`row_products.layer_products`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
from scipy import sparse

from contextuality.errors import InputDataError
from contextuality.geometry.norm_sums import NormSums


class CrossProducts:
    """Centered cross-products Σ(x − μ)(y − ν)ᵀ between the layers of two sets (`left` and
    `right`), accumulated over chunks of the same rows, with every layer's centered
    self-products for the normalization. With no right widths the two sets are the same
    layers (one model), and the self-products are the cross-products' diagonal blocks."""

    def __init__(
        self,
        left_widths: Sequence[int],
        right_widths: Sequence[int] | None,
        shift: tuple[np.ndarray, ...] | None = None,
        precision: type[np.floating] = np.float64,
    ) -> None:
        """`shift`: what to subtract from each set's stacked rows (one array each) before
        they are multiplied; by default the first chunk's mean. `precision`: what the rows
        are multiplied in (the products are summed in float64 either way); float32 halves
        the time, for resamples whose spread is far above its rounding."""
        self.same = right_widths is None
        self.widths = (list(left_widths), list(left_widths if self.same else right_widths))
        self.n_rows = 0
        self._shift = shift
        self._precision = precision
        self._sums = [np.zeros(sum(widths)) for widths in self.widths]
        self._cross = np.zeros(tuple(sum(widths) for widths in self.widths))
        self._self = None if self.same else tuple(_zero_blocks(widths) for widths in self.widths)
        self._norms = NormSums(self.widths)
        # Rows whose sums, self-products and own norms came with the products (`repaired`),
        # or whose layers' products with themselves did (`shuffled`: those blocks).
        self._kept_rows = 0
        self._own_blocks: list[np.ndarray] | None = None

    def repaired(self, precision: type[np.floating] | None = None) -> CrossProducts:
        """Empty products of these rows with the right side's rows paired otherwise (a
        permutation null) that keep what a re-pairing leaves as it is: each side's sums,
        self-products and sums of its own norms, these products' own (in their precision,
        float64 for the values). Only the products between the two sides are then added,
        the same rows again in another pairing: the self-products are 2/(L + 2) of the
        work at L layers of one width (2/9 at MiniLM's 7). `precision`: what the pairs'
        rows are multiplied in (None: as these were)."""
        if self._kept_rows or not self.n_rows:
            raise ValueError("repaired() takes products that hold every row, once each")
        shift = None if self._shift is None else (self._shift[0], self._shift[-1])
        precision = self._precision if precision is None else precision
        paired = CrossProducts(self.widths[0], self.widths[1], shift, precision)
        paired._sums = [sums.copy() for sums in self._sums]
        if self.same:
            paired._self = tuple(_diagonal_blocks(self._cross, self.widths[0]) for _ in (0, 1))
        else:
            paired._self = self._self
        paired._norms = self._norms.own_sums()
        paired._kept_rows = self.n_rows
        return paired

    def shuffled(self, precision: type[np.floating] = np.float32) -> CrossProducts:
        """Empty products of these layers (one set) with each layer's rows in an order of
        its own (an unordered permutation null, `layer_pairs`) that keep each layer's
        products with itself, which no reordering of its rows moves: only the products
        between two layers are then multiplied, each pair once (L(L − 1)/2 of L² blocks);
        the sums and norms are added as for any products."""
        if not self.same or self._kept_rows or not self.n_rows:
            raise ValueError("shuffled() takes one set's products that hold every row, once each")
        products = CrossProducts(self.widths[0], None, self._shift, precision)
        own = _diagonal_blocks(self._cross, self.widths[0])
        products._own_blocks = [block.copy() for block in own]
        products._kept_rows = self.n_rows
        return products

    def add(
        self,
        left: Sequence[np.ndarray],
        right: Sequence[np.ndarray] | None = None,
        weights: np.ndarray | None = None,
    ) -> None:
        """Add a chunk of rows: one (rows × width) array per layer of each set (`right`
        None for one set), shifted, multiplied and accumulated in float64 (float32 products
        of 10⁴-sized activations lose CKA's seventh digit). A layer may be a scipy sparse
        matrix (the word baselines' 0/1 rows): its set is then sparse, multiplied as such,
        and its shift must be zero. `weights`: how many times each
        row counts (a bootstrap draw's multiplicities), the same sums as that many copies
        of the row; None: once each."""
        if not left[0].shape[0]:
            return
        sets = [left] if self.same else [left, right]
        stacked = [_stacked(arrays) for arrays in sets]
        if self._shift is None:
            self._shift = tuple(_column_sums(part) / part.shape[0] for part in stacked)
        stacked = [_shifted(part, shift) for part, shift in zip(stacked, self._shift, strict=True)]
        counts = None if weights is None else np.asarray(weights, dtype=np.float64)[:, None]
        if self._kept_rows and weights is not None:
            raise ValueError("re-paired products take each row once, without weights")
        if self._kept_rows and self.n_rows + stacked[0].shape[0] > self._kept_rows:
            raise ValueError(f"re-paired products of {self._kept_rows} rows given more")
        if self._kept_rows and not self.same:
            self.n_rows += stacked[0].shape[0]
            self._norms.add_between((stacked[0], stacked[-1]), self.widths)
            _add_product(self._cross, stacked[0], stacked[-1], self._precision)
            return
        self.n_rows += stacked[0].shape[0] if weights is None else int(np.sum(weights))
        self._sums[0] += _column_sums(stacked[0], counts)
        self._sums[1] += _column_sums(stacked[-1], counts)
        self._norms.add((stacked[0], stacked[-1]), self.widths, counts)
        # Σ w x yᵀ as (√w x)ᵀ(√w y): one set's products stay a product of one array with
        # itself, which BLAS computes in half the time. The stacked rows are this chunk's
        # own copies, scaled in place once nothing else reads them.
        rooted = stacked if counts is None else [_times(part, np.sqrt(counts)) for part in stacked]
        if self._own_blocks is None:
            _add_product(self._cross, rooted[0], rooted[-1], self._precision)
        else:
            _add_between_layers(self._cross, rooted[0], self.widths[0], self._precision)
        if self._self is not None:
            for part, products, widths in zip(rooted, self._self, self.widths, strict=True):
                for index, block in enumerate(_blocks(part, widths)):
                    _add_product(products[index], block, block, self._precision)

    def cka(self) -> np.ndarray:
        """CKA between every left layer (rows) and every right layer (columns)."""
        return _normalized(*self._centered())

    def procrustes(self) -> np.ndarray:
        """The angular orthogonal-Procrustes distance (Williams et al. 2021) between every
        left layer (rows) and every right layer (columns), in radians: arccos ‖XᵀY‖_* of the
        centered layers X, Y scaled to Frobenius norm 1 (0 for representations equal up to
        a rotation and a scale, π/2 at most); NaN where a layer has no variance. Within one
        set the cross-products are symmetric: block (b, a) is block (a, b) transposed, of
        the same singular values, and a diagonal block XᵀX has its trace for norm."""
        cross, widths, self_products = self._centered()
        scales = [np.array([np.trace(block) for block in products]) for products in self_products]
        left_edges, right_edges = (_edges(side) for side in widths)
        nuclear = np.empty((len(widths[0]), len(widths[1])))
        for a, (top, bottom) in enumerate(_spans(left_edges)):
            for b, (start, stop) in enumerate(_spans(right_edges)):
                if self.same and b < a:
                    nuclear[a, b] = nuclear[b, a]
                elif self.same and b == a:
                    nuclear[a, b] = scales[0][a]
                else:
                    nuclear[a, b] = _nuclear_norm(cross[top:bottom, start:stop], self._precision)
        norms = np.sqrt(np.outer(*scales))
        with np.errstate(divide="ignore", invalid="ignore"):
            similarity = np.where(norms > 0, nuclear / norms, np.nan)
        return np.arccos(np.clip(similarity, -1.0, 1.0))

    def _centered(self) -> tuple[np.ndarray, tuple[list[int], list[int]], list[list[np.ndarray]]]:
        """The centered cross-products (Σleft widths × Σright widths), the widths, and each
        side's centered self-products (one width × width matrix per layer)."""
        self._check_complete()
        if self.n_rows < 2:
            raise InputDataError(
                f"CKA needs 2 or more occurrences with a vector in every layer compared, "
                f"{self.n_rows} here: the extraction gave hardly any word a vector (its "
                "warnings say why: sentences beyond the model's length?)"
            )
        means = [sums / self.n_rows for sums in self._sums]
        cross = self._cross - self.n_rows * np.outer(*means)
        if self._self is None:
            self_products = [_diagonal_blocks(cross, self.widths[0])] * 2
        else:
            self_products = [
                [
                    block - self.n_rows * np.outer(mean, mean)
                    for block, mean in zip(products, _blocks(side_mean, widths), strict=True)
                ]
                for products, side_mean, widths in zip(self._self, means, self.widths, strict=True)
            ]
        return cross, self.widths, self_products

    def _check_complete(self) -> None:
        """Refuse re-paired or shuffled products (`repaired`, `shuffled`) given fewer rows
        than they keep; a shuffle's products below the diagonal mirrored from above it and
        its layers' own products put on it."""
        if self._kept_rows and self.n_rows != self._kept_rows:
            raise ValueError(
                f"re-paired products keep {self._kept_rows} rows and were given {self.n_rows}"
            )
        if self._own_blocks is not None:
            for (low, high), own in zip(
                _spans(_edges(self.widths[0])), self._own_blocks, strict=True
            ):
                self._cross[low:high, low:high] = own
                self._cross[high:, low:high] = self._cross[low:high, high:].T

    def debiased_cka(self) -> np.ndarray:
        """Debiased CKA (Nguyen et al. 2021) between every left layer (rows) and every right
        layer (columns): HSIC_u(K, L) / √(HSIC_u(K, K) HSIC_u(L, L)); NaN below 4 rows or
        where a layer's HSIC_u is not positive."""
        self._check_complete()
        n = self.n_rows
        if n < 4:
            return np.full((len(self.widths[0]), len(self.widths[1])), np.nan)
        norms = self._norms
        edges = [_edges(widths) for widths in self.widths]
        own_blocks = [
            _diagonal_blocks(self._cross, self.widths[0]) if self.same else self._self[side]
            for side in (0, 1)
        ]

        def hsic(side_a: int, a: int, side_b: int, b: int, cross: np.ndarray) -> float:
            low_a, high_a = edges[side_a][a], edges[side_a][a + 1]
            low_b, high_b = edges[side_b][b], edges[side_b][b + 1]
            sum_a, sum_b = self._sums[side_a][low_a:high_a], self._sums[side_b][low_b:high_b]
            norm_products = norms.between(side_a, a, side_b, b)
            features_a = norms.features(side_a, side_b, b)[low_a:high_a]
            features_b = norms.features(side_b, side_a, a)[low_b:high_b]
            trace = np.sum(cross**2) - norm_products
            ones_a = sum_a @ sum_a - norms.total[side_a][a]
            ones_b = sum_b @ sum_b - norms.total[side_b][b]
            middle = sum_a @ cross @ sum_b - sum_a @ features_a - sum_b @ features_b
            middle += norm_products
            value = trace + ones_a * ones_b / ((n - 1) * (n - 2)) - 2 * middle / (n - 2)
            return value / (n * (n - 3))

        scales = [
            np.array([hsic(side, a, side, a, block) for a, block in enumerate(own_blocks[side])])
            for side in (0, 1)
        ]
        found = np.array(
            [
                [
                    hsic(0, a, 1, b, self._cross[top:bottom, start:stop])
                    for b, (start, stop) in enumerate(_spans(edges[1]))
                ]
                for a, (top, bottom) in enumerate(_spans(edges[0]))
            ]
        )
        norms_product = np.outer(*scales)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(norms_product > 0, found / np.sqrt(norms_product), np.nan)


def _nuclear_norm(block: np.ndarray, precision: type[np.floating]) -> float:
    """The sum of `block`'s singular values: from its SVD in float64; in float32 (a
    resample's precision) as the square roots of the eigenvalues of its smaller Gram
    matrix, four times faster, the small values then known to about 10⁻⁸ of the largest."""
    if precision == np.float64:
        return float(np.linalg.svd(block, compute_uv=False).sum())
    gram = block.T @ block if block.shape[0] >= block.shape[1] else block @ block.T
    return float(np.sqrt(np.clip(np.linalg.eigvalsh(gram), 0, None)).sum())


def _stacked(arrays: Sequence[np.ndarray]) -> np.ndarray | sparse.csr_matrix:
    """A set's layers side by side in float64: sparse (CSR) where one of them is."""
    if any(sparse.issparse(array) for array in arrays):
        return sparse.hstack(arrays, format="csr", dtype=np.float64)
    return np.concatenate(arrays, axis=1, dtype=np.float64)


def _column_sums(part, counts: np.ndarray | None = None) -> np.ndarray:
    """The sums of `part`'s columns (dense or sparse), each row counted `counts` times (a
    column; None: once), a flat float64 array, without a weighted copy of `part`."""
    if counts is None:
        return np.asarray(part.sum(axis=0), dtype=np.float64).ravel()
    return np.asarray(part.T @ counts, dtype=np.float64).ravel()


def _shifted(part, shift: np.ndarray):
    """`part` (a chunk's own stacked rows, `_stacked`) less `shift`, in place (a sparse
    set is never shifted: its shift must be zero)."""
    if not sparse.issparse(part):
        part -= shift
        return part
    if np.any(shift):
        raise ValueError("a sparse set of layers is not shifted: give it a zero shift")
    return part


def _times(part, counts: np.ndarray):
    """Each row of `part` times its count (a column), a dense `part` in place."""
    if sparse.issparse(part):
        return part.multiply(counts).tocsr()
    part *= counts
    return part


def _add_product(total: np.ndarray, left, right, precision: type[np.floating]) -> None:
    """Add leftᵀ right to `total` in place, multiplied in `precision` (sparse as given).
    Where a side is sparse (a word baseline's one-hot rows), only its columns that the
    chunk's rows touch are added to: a chunk of 1,024 rows touches at most 1,024 of a
    vocabulary's thousands of columns, and adding each chunk's whole (features × vocabulary)
    product took more time than the products themselves."""
    if not (sparse.issparse(left) or sparse.issparse(right)):
        total += _product(left, right, precision)
        return
    touched = [_touched_columns(side) for side in (left, right)]
    chosen = [
        side if columns is None else side[:, columns]
        for side, columns in zip((left, right), touched, strict=True)
    ]
    found = chosen[0].T @ chosen[1]
    found = found.toarray() if sparse.issparse(found) else np.asarray(found)
    every = [
        np.arange(side.shape[1]) if index is None else index
        for side, index in zip((left, right), touched, strict=True)
    ]
    total[np.ix_(*every)] += found


def _add_between_layers(
    total: np.ndarray, stacked: np.ndarray, widths: Sequence[int], precision: type[np.floating]
) -> None:
    """Add to `total`'s blocks above its diagonal the products between every two layers of
    one set's dense `stacked` rows (cut at `widths`), multiplied in `precision`: each
    layer's columns against those of every later layer, one product per layer."""
    rows = np.ascontiguousarray(stacked, dtype=precision)
    for low, high in _spans(_edges(widths))[:-1]:
        total[low:high, high:] += rows[:, low:high].T @ rows[:, high:]


def _touched_columns(part) -> np.ndarray | None:
    """The columns of a sparse `part` that hold a nonzero, in order; None for a dense one
    (every column)."""
    if not sparse.issparse(part):
        return None
    return np.unique(sparse.csr_matrix(part).indices)


def _product(left, right, precision: type[np.floating]) -> np.ndarray:
    """leftᵀ right of two dense arrays as a float64 array, multiplied in `precision`."""
    left_rows = np.ascontiguousarray(left, dtype=precision)
    right_rows = left_rows if right is left else np.ascontiguousarray(right, dtype=precision)
    return left_rows.T @ right_rows


def _edges(widths: Sequence[int]) -> np.ndarray:
    """Where each layer's columns start in its stacked rows, and where the last ends."""
    return np.concatenate([[0], np.cumsum(widths)])


def _zero_blocks(widths: Sequence[int]) -> list[np.ndarray]:
    """A zero (width × width) float64 matrix per layer."""
    return [np.zeros((width, width)) for width in widths]


def _blocks(stacked: np.ndarray, widths: Sequence[int]) -> list[np.ndarray]:
    """The layers' columns of `stacked` (the last axis), in order."""
    if sparse.issparse(stacked):
        return [stacked[:, low:high] for low, high in _spans(_edges(widths))]
    return np.split(stacked, np.cumsum(widths)[:-1], axis=-1)


def _spans(edges: np.ndarray) -> list[tuple[int, int]]:
    """Consecutive (start, stop) pairs of `edges`."""
    return list(zip(edges[:-1], edges[1:], strict=True))


def _diagonal_blocks(square: np.ndarray, widths: Sequence[int]) -> list[np.ndarray]:
    """The diagonal blocks of a square matrix whose rows and columns are cut at `widths`."""
    return [square[low:high, low:high] for low, high in _spans(_edges(widths))]


def _normalized(
    cross: np.ndarray,
    widths: tuple[Sequence[int], Sequence[int]],
    self_products: Sequence[Sequence[np.ndarray]],
) -> np.ndarray:
    """‖C_ij‖²_F / (‖S_i‖_F ‖S_j‖_F) for every block C_ij of `cross` (rows cut at the left
    widths, columns at the right); NaN where a layer has no variance."""
    left_norms, right_norms = (
        np.array([np.linalg.norm(block) for block in products]) for products in self_products
    )
    left_edges, right_edges = (_edges(side) for side in widths)
    squared = np.array(
        [
            [np.sum(cross[top:bottom, start:stop] ** 2) for start, stop in _spans(right_edges)]
            for top, bottom in _spans(left_edges)
        ]
    )
    norms = np.outer(left_norms, right_norms)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(norms > 0, squared / norms, np.nan)


def linear_cka(
    chunks: Iterable[tuple[Sequence[np.ndarray], Sequence[np.ndarray] | None]],
    left_widths: Sequence[int],
    right_widths: Sequence[int] | None = None,
) -> np.ndarray:
    """Linear CKA between every pair of layers from `chunks` of the same rows, each a pair
    (left layers' arrays, right layers' arrays, or None when both sets are the left layers
    and `right_widths` is None). Returns (n_left, n_right)."""
    products = CrossProducts(left_widths, right_widths)
    for left, right in chunks:
        products.add(left, right)
    return products.cka()
