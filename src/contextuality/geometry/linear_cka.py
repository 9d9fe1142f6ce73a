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
    layers (one model), and the self-products are the cross-products' diagonal blocks.
    A sparse set's self-products stay sparse (a one-hot baseline's are diagonal; dense, a
    vocabulary of 30,000 words would be 7.2 GB), and only their centered norms and traces
    are computed from them, never the centered (dense) matrices."""

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
        self._cross: np.ndarray | None = None  # laid out at the first chunk (`_laid_out`)
        self._self = None if self.same else tuple([None] * len(widths) for widths in self.widths)
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
        if self._cross is None:
            self._cross = _laid_out(stacked[0], stacked[-1])
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
                    products[index] = _with_own_product(products[index], block, self._precision)

    def cka(self) -> np.ndarray:
        """CKA between every left layer (rows) and every right layer (columns):
        ‖C_ab‖²_F / (‖S_a‖_F ‖S_b‖_F) of the centered cross-products C and self-products S;
        NaN where a layer has no variance."""
        means = self._means()
        norms, _ = self._own_norms_and_traces(means)
        squared = self._each_block(means, lambda block: float(np.sum(block**2)))
        return _ratio(squared, np.outer(*norms))

    def procrustes(self) -> np.ndarray:
        """The angular orthogonal-Procrustes distance (Williams et al. 2021) between every
        left layer (rows) and every right layer (columns), in radians: arccos ‖XᵀY‖_* of the
        centered layers X, Y scaled to Frobenius norm 1 (0 for representations equal up to
        a rotation and a scale, π/2 at most); NaN where a layer has no variance. Within one
        set a diagonal block XᵀX has its trace for norm."""
        means = self._means()
        _, traces = self._own_norms_and_traces(means)
        nuclear = self._each_block(
            means,
            lambda block: _nuclear_norm(block, self._precision),
            diagonal=traces[0] if self.same else None,
        )
        similarity = _ratio(nuclear, _root(np.outer(*traces)))
        return np.arccos(np.clip(similarity, -1.0, 1.0))

    def _means(self) -> list[np.ndarray]:
        """Each side's column means (its stacked layers' widths), checked to be of 2 rows
        or more of complete products."""
        self._check_complete()
        if self.n_rows < 2:
            raise InputDataError(
                f"CKA needs 2 or more occurrences with a vector in every layer compared, "
                f"{self.n_rows} here: the extraction gave hardly any word a vector (its "
                "warnings say why: sentences beyond the model's length?)"
            )
        return [sums / self.n_rows for sums in self._sums]

    def _each_block(
        self, means: list[np.ndarray], measure, diagonal: np.ndarray | None = None
    ) -> np.ndarray:
        """`measure` of every centered block C_ab = Σ(x_a − μ_a)(y_b − ν_b)ᵀ (left layer a,
        right layer b; `means` each side's, `_means`), one block centered at a time (no
        centered copy of them all: beside a baseline's vocabulary that is a GB). Within one
        set block (b, a) is block (a, b) transposed, of the same norms, and `diagonal`
        (where given) the diagonal's values."""
        spans = [_spans(_edges(widths)) for widths in self.widths]
        found = np.empty((len(spans[0]), len(spans[1])))
        for a, (top, bottom) in enumerate(spans[0]):
            for b, (start, stop) in enumerate(spans[1]):
                if self.same and b < a:
                    found[a, b] = found[b, a]
                elif self.same and b == a and diagonal is not None:
                    found[a, b] = diagonal[a]
                else:
                    block = self._cross[top:bottom, start:stop]
                    shift = self.n_rows * np.outer(means[0][top:bottom], means[1][start:stop])
                    found[a, b] = measure(block - shift)
        return found

    def _own_norms_and_traces(
        self, means: list[np.ndarray]
    ) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """Each side's centered self-products S_a = Σ(x_a − μ_a)(x_a − μ_a)ᵀ (`means` each
        side's, `_means`): their Frobenius norms and their traces, one value per layer (a
        list of two arrays each)."""
        norms, traces = [], []
        for side in (0,) if self.same else (0, 1):
            edges = _edges(self.widths[side])
            own = _diagonal_blocks(self._cross, self.widths[0]) if self.same else self._self[side]
            found = np.array(
                [
                    _centered_norm_and_trace(block, means[side][low:high], self.n_rows)
                    for block, (low, high) in zip(own, _spans(edges), strict=True)
                ]
            ).reshape(-1, 2)
            norms.append(found[:, 0])
            traces.append(found[:, 1])
        if self.same:
            norms, traces = norms * 2, traces * 2
        return norms, traces

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
            trace = _squared_sum(cross) - norm_products
            ones_a = sum_a @ sum_a - norms.total[side_a][a]
            ones_b = sum_b @ sum_b - norms.total[side_b][b]
            middle = sum_a @ (cross @ sum_b) - sum_a @ features_a - sum_b @ features_b
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
        return _ratio(found, _root(np.outer(*scales)))


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


def _laid_out(left, right) -> np.ndarray:
    """Zero cross-products of `left`'s columns (rows) with `right`'s (columns), float64,
    laid out for `_add_product`: column-major where only the right side is sparse, so that
    each of its columns is one contiguous line."""
    order = "F" if sparse.issparse(right) and not sparse.issparse(left) else "C"
    return np.zeros((left.shape[1], right.shape[1]), order=order)


def _add_product(total: np.ndarray, left, right, precision: type[np.floating]) -> None:
    """Add leftᵀ right to `total` in place, multiplied in `precision` (sparse as given).
    Where a side is sparse (a word baseline's one-hot rows), only its columns that the
    chunk's rows touch are added to: a chunk of 1,024 rows touches at most 1,024 of a
    vocabulary's thousands of columns. Beside a dense side, those are whole lines of
    `total` (its rows, or its columns where it is column-major, `_laid_out`), gathered,
    added to and put back: twenty times faster than numpy's indexed in-place add across
    strides, which held a null of half a million rows (7 layers against the two word
    baselines) to 90 s."""
    left_sparse, right_sparse = sparse.issparse(left), sparse.issparse(right)
    if not (left_sparse or right_sparse):
        total += _product(left, right, precision)
    elif left_sparse and right_sparse:
        rows, columns = _touched_columns(left), _touched_columns(right)
        found = (left[:, rows].T @ right[:, columns]).toarray()
        total[np.ix_(rows, columns)] += found
    elif left_sparse:
        rows = _touched_columns(left)
        total[rows] = total[rows] + np.asarray(left[:, rows].T @ right)
    else:
        columns = _touched_columns(right)
        lines = total.T
        lines[columns] = lines[columns] + np.asarray(right[:, columns].T @ left)


def _add_between_layers(
    total: np.ndarray, stacked: np.ndarray, widths: Sequence[int], precision: type[np.floating]
) -> None:
    """Add to `total`'s blocks above its diagonal the products between every two layers of
    one set's dense `stacked` rows (cut at `widths`), multiplied in `precision`: each
    layer's columns against those of every later layer, one product per layer."""
    rows = np.ascontiguousarray(stacked, dtype=precision)
    for low, high in _spans(_edges(widths))[:-1]:
        total[low:high, high:] += rows[:, low:high].T @ rows[:, high:]


def _touched_columns(part) -> np.ndarray:
    """The columns of a sparse `part` that hold a nonzero, in order."""
    return np.unique(sparse.csr_matrix(part).indices)


def _product(left, right, precision: type[np.floating]) -> np.ndarray:
    """leftᵀ right of two dense arrays as a float64 array, multiplied in `precision`."""
    left_rows = np.ascontiguousarray(left, dtype=precision)
    right_rows = left_rows if right is left else np.ascontiguousarray(right, dtype=precision)
    return left_rows.T @ right_rows


def _edges(widths: Sequence[int]) -> np.ndarray:
    """Where each layer's columns start in its stacked rows, and where the last ends."""
    return np.concatenate([[0], np.cumsum(widths)])


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


def _ratio(values: np.ndarray, scales: np.ndarray) -> np.ndarray:
    """`values` / `scales` where the scale is positive, NaN elsewhere (a layer without
    variance)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(scales > 0, values / scales, np.nan)


def _root(products: np.ndarray) -> np.ndarray:
    """The square roots of products of two layers' scales, 0 where the product is not
    positive (an HSIC_u below zero on few rows; `_ratio` gives those NaN)."""
    return np.sqrt(np.clip(products, 0.0, None))


def _with_own_product(total, rows, precision: type[np.floating]):
    """`total` (None at first) plus rowsᵀ rows, a layer's product with itself: dense in
    place, sparse (a one-hot baseline's, diagonal) as a sparse sum."""
    if sparse.issparse(rows):
        found = sparse.csr_matrix(rows.T @ rows)
        return found if total is None else total + found
    if total is None:
        total = np.zeros((rows.shape[1], rows.shape[1]))
    _add_product(total, rows, rows, precision)
    return total


def _centered_norm_and_trace(own, mean: np.ndarray, n_rows: int) -> tuple[float, float]:
    """The Frobenius norm and the trace of S − n μμᵀ, a layer's self-products `own` (S, of
    its rows less a shift) centered at their `mean` μ (of the rows so shifted) over
    `n_rows` (n). A sparse S (never shifted) is not centered as a matrix (dense, V × V for
    a vocabulary of V words): ‖S − nμμᵀ‖²_F = ‖S‖²_F − 2n μᵀSμ + n²(μᵀμ)² and
    tr(S − nμμᵀ) = tr S − n μᵀμ, in O(nonzeros)."""
    if sparse.issparse(own):
        mean_norm = float(mean @ mean)
        squared = _squared_sum(own) - 2 * n_rows * float(mean @ (own @ mean))
        squared += (n_rows * mean_norm) ** 2
        return float(np.sqrt(max(squared, 0.0))), float(own.diagonal().sum()) - n_rows * mean_norm
    centered = own - n_rows * np.outer(mean, mean)
    return float(np.linalg.norm(centered)), float(np.trace(centered))


def _squared_sum(block) -> float:
    """The sum of `block`'s squared entries (dense or sparse)."""
    if sparse.issparse(block):
        return float(block.multiply(block).sum())
    return float(np.sum(block**2))


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
