"""The sums over rows that debiased CKA's unbiased HSIC needs beyond the cross-products.

The rows' squared norms in each layer, against each other and against every feature,
accumulated a chunk of rows at a time beside `linear_cka.CrossProducts`."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy import sparse


class NormSums:
    """Sums over rows that the unbiased HSIC needs beyond the cross-products, for two sets
    of layers (side 0, side 1) with rows' squared norms d (rows × layers) per side:
    Σd per layer (`total`), Σ d_side0 d_side1ᵀ between layers, and Σ x d_otherᵀ, each
    feature of one side against each layer's norm on either side."""

    def __init__(self, widths: tuple[Sequence[int], Sequence[int]]) -> None:
        counts = [len(side) for side in widths]
        self.total = [np.zeros(count) for count in counts]
        self._between = {(a, b): np.zeros((counts[a], counts[b])) for a in (0, 1) for b in (0, 1)}
        self._features = {
            (a, b): np.zeros((sum(widths[a]), counts[b])) for a in (0, 1) for b in (0, 1)
        }

    def add(
        self,
        parts: tuple[np.ndarray, np.ndarray],
        widths: tuple[Sequence[int], Sequence[int]],
        counts: np.ndarray | None = None,
    ) -> None:
        """Add a chunk: the (rows × Σwidths) shifted float64 rows of each set (one array
        twice when both sets are the same layers), each row counted `counts` times (a
        column; None: once)."""
        if parts[1] is parts[0]:  # one set: its sums against either side are one sum
            squared = squared_norms(parts[0], widths[0])
            counted = squared if counts is None else squared * counts
            between = counted.T @ squared
            features = np.asarray(parts[0].T @ counted)
            totals = counted.sum(axis=0)
            for side in (0, 1):
                self.total[side] += totals
                for other in (0, 1):
                    self._between[side, other] += between
                    self._features[side, other] += features
            return
        squared = [squared_norms(part, side) for part, side in zip(parts, widths, strict=True)]
        counted = squared if counts is None else [side * counts for side in squared]
        for side in (0, 1):
            self.total[side] += counted[side].sum(axis=0)
            for other in (0, 1):
                self._between[side, other] += counted[side].T @ squared[other]
                self._features[side, other] += np.asarray(parts[side].T @ counted[other])

    def own_sums(self) -> NormSums:
        """These sums less those between the two sides (zero): what a re-pairing of the
        right side's rows keeps (`CrossProducts.repaired`)."""
        kept = NormSums.__new__(NormSums)
        kept.total = [total.copy() for total in self.total]
        kept._between = {
            key: sums.copy() if key[0] == key[1] else np.zeros_like(sums)
            for key, sums in self._between.items()
        }
        kept._features = {
            key: sums.copy() if key[0] == key[1] else np.zeros_like(sums)
            for key, sums in self._features.items()
        }
        return kept

    def add_between(
        self, parts: tuple[np.ndarray, np.ndarray], widths: tuple[Sequence[int], Sequence[int]]
    ) -> None:
        """Add a chunk's sums between the two sides only (rows once each, as `add`)."""
        squared = [squared_norms(part, side) for part, side in zip(parts, widths, strict=True)]
        for side, other in ((0, 1), (1, 0)):
            self._between[side, other] += squared[side].T @ squared[other]
            self._features[side, other] += np.asarray(parts[side].T @ squared[other])

    def between(self, side_a: int, a: int, side_b: int, b: int) -> float:
        """Σ_rows d_a d_b for layer a of side_a and layer b of side_b."""
        return float(self._between[side_a, side_b][a, b])

    def features(self, side: int, other: int, layer: int) -> np.ndarray:
        """Σ_rows x d for every feature x of `side` against layer `layer` of side `other`."""
        return self._features[side, other][:, layer]


def squared_norms(part, widths: Sequence[int]) -> np.ndarray:
    """Each row's squared norm in each layer (rows × layers), float64."""
    if sparse.issparse(part):
        layer_of_column = np.repeat(np.arange(len(widths)), widths)
        indicator = sparse.csr_matrix(
            (np.ones(len(layer_of_column)), (np.arange(len(layer_of_column)), layer_of_column))
        )
        return np.asarray((part.multiply(part) @ indicator).todense())
    return np.add.reduceat(np.square(part, dtype=np.float64), _layer_starts(widths), axis=1)


def _layer_starts(widths: Sequence[int]) -> np.ndarray:
    """First column of each layer in its stacked rows."""
    return np.concatenate([[0], np.cumsum(widths)[:-1]]).astype(np.int64)
