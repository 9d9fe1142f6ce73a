"""Alignment between representations: orthogonal Procrustes, mutual k-NN and CKNNA against
closed forms, brute-force references and similarity-repository's published values."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.stats import ortho_group

from contextuality.geometry.linear_cka import CrossProducts
from contextuality.geometry.neighbours import (
    Neighbours,
    cknna,
    cosine_neighbours,
    hsic_unbiased,
    mutual_knn,
)


def _products(left: np.ndarray, right: np.ndarray) -> CrossProducts:
    products = CrossProducts([left.shape[1]], [right.shape[1]])
    products.add([left], [right])
    return products


# similarity-repository's reference values on np.random.seed(0), X and Y uniform 30 × 25
# (docs/instruments.md quotes them from here).
SIMILARITY_REPOSITORY = {
    "cka": 0.489342739104415,
    "debiased_cka": 0.0235986985806,
    "procrustes": 0.762981579934,
}


def test_similarity_repository_reference_values():
    """similarity-repository's reference values: linear CKA, unbiased CKA and the angular
    Procrustes distance, to the 12 digits the reference gives (the cross-products are
    float64, `linear_cka`)."""
    np.random.seed(0)  # noqa: NPY002 (the reference's own generator)
    left = np.random.rand(30, 25)  # noqa: NPY002
    right = np.random.rand(30, 25)  # noqa: NPY002
    products = _products(left, right)
    for measure, expected in SIMILARITY_REPOSITORY.items():
        assert getattr(products, measure)()[0, 0] == pytest.approx(expected, abs=1e-12)


def test_procrustes_of_a_rotated_scaled_shifted_copy_is_zero():
    rng = np.random.default_rng(3)
    vectors = rng.normal(size=(200, 12))
    rotated = 3.5 * vectors @ ortho_group.rvs(12, random_state=4) + 7.0
    assert _products(vectors, rotated).procrustes()[0, 0] == pytest.approx(0.0, abs=2e-7)


def test_procrustes_is_symmetric_bounded_and_matches_its_definition():
    rng = np.random.default_rng(5)
    left, right = rng.normal(size=(80, 6)), rng.normal(size=(80, 9))
    forward = _products(left, right).procrustes()[0, 0]
    backward = _products(right, left).procrustes()[0, 0]
    centered = [side - side.mean(axis=0) for side in (left, right)]
    scaled = [side / np.linalg.norm(side) for side in centered]
    expected = np.arccos(np.linalg.svd(scaled[0].T @ scaled[1], compute_uv=False).sum())
    assert forward == pytest.approx(expected, abs=1e-7)
    assert backward == pytest.approx(forward, abs=1e-7)
    assert 0.0 < forward <= np.pi / 2


def _brute_neighbours(vectors: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Every pair's cosine in float64, self excluded, sorted by cosine then by row."""
    units = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    similarities = units @ units.T
    np.fill_diagonal(similarities, -np.inf)
    order = np.lexsort(
        (np.broadcast_to(np.arange(len(vectors)), similarities.shape), -similarities)
    )
    indices = order[:, :k]
    return indices, np.take_along_axis(similarities, indices, axis=1)


def test_cosine_neighbours_agree_with_brute_force_ties_broken_by_row():
    rng = np.random.default_rng(7)
    vectors = rng.normal(size=(150, 8)).astype(np.float32)
    vectors[40] = vectors[3]  # repeats: ties that the lower row wins
    vectors[90] = vectors[3] * 2.0
    vectors[120] = vectors[7]
    found = cosine_neighbours(vectors, 6)
    indices, cosines = _brute_neighbours(vectors.astype(np.float64), 6)
    assert np.array_equal(found.indices, indices)
    np.testing.assert_allclose(found.cosines, cosines, atol=1e-6)
    assert list(found.indices[3][:2]) == [40, 90]
    assert list(found.indices[40][:2]) == [3, 90]


def test_cosine_neighbours_in_chunks_equal_one_pass(monkeypatch):
    from contextuality.geometry import search

    rng = np.random.default_rng(8)
    vectors = rng.normal(size=(97, 5))
    whole = cosine_neighbours(vectors, 4)
    monkeypatch.setattr(search, "SIMILARITIES_PER_CHUNK", 97 * 10)
    chunked = cosine_neighbours(vectors, 4)
    assert np.array_equal(whole.indices, chunked.indices)


def test_cosine_neighbours_refuse_k_out_of_range():
    with pytest.raises(ValueError, match="1 <= k < n"):
        cosine_neighbours(np.ones((5, 3)), 5)


# Rows and tolerance of mutual k-NN between independent representations against its
# expectation, k/(n − 1) (docs/instruments.md quotes them from here).
INDEPENDENT_ROWS, INDEPENDENT_TOLERANCE = 2000, 0.003


def test_mutual_knn_of_identical_is_one_and_of_independent_about_k_over_n_minus_one():
    rng = np.random.default_rng(9)
    n, k = INDEPENDENT_ROWS, 10
    vectors = rng.normal(size=(n, 16))
    found = cosine_neighbours(vectors, k)
    assert mutual_knn(found, found) == 1.0
    independent = cosine_neighbours(rng.normal(size=(n, 16)), k)
    assert mutual_knn(found, independent) == pytest.approx(k / (n - 1), abs=INDEPENDENT_TOLERANCE)


def test_paired_neighbours_are_those_of_the_permuted_rows():
    rng = np.random.default_rng(10)
    vectors = rng.normal(size=(120, 6))
    pairing = rng.permutation(120)
    relabelled = cosine_neighbours(vectors, 5).paired(pairing)
    searched = cosine_neighbours(vectors[pairing], 5)
    assert np.array_equal(relabelled.indices, searched.indices)
    np.testing.assert_allclose(relabelled.cosines, searched.cosines, atol=1e-6)


def _dense_hsic_unbiased(kernel: np.ndarray, other: np.ndarray) -> float:
    """platonic-rep's hsic_unbiased, densely."""
    n = len(kernel)
    kernel, other = kernel.copy(), other.copy()
    np.fill_diagonal(kernel, 0)
    np.fill_diagonal(other, 0)
    value = (
        np.sum(kernel * other.T)
        + kernel.sum() * other.sum() / ((n - 1) * (n - 2))
        - 2 * np.sum(kernel @ other) / (n - 2)
    )
    return value / (n * (n - 3))


def _dense_cknna(left: np.ndarray, right: np.ndarray, k: int) -> float:
    """CKNNA with dense n × n kernels and masks, as platonic-rep computes it (without its
    1e-6 in the denominator)."""
    kernels = []
    for vectors in (left, right):
        units = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
        kernels.append(units @ units.T)

    def mask(kernel):
        masked = kernel.copy()
        np.fill_diagonal(masked, -np.inf)
        top = np.argsort(-masked, axis=1, kind="stable")[:, :k]
        chosen = np.zeros_like(kernel)
        np.put_along_axis(chosen, top, 1.0, axis=1)
        return chosen

    masks = [mask(kernel) for kernel in kernels]

    def similarity(a, b, mask_a, mask_b):
        both = mask_a * mask_b
        return _dense_hsic_unbiased(both * a, both * b)

    between = similarity(kernels[0], kernels[1], *masks)
    own = [
        similarity(kernel, kernel, chosen, chosen)
        for kernel, chosen in zip(kernels, masks, strict=True)
    ]
    return between / np.sqrt(own[0] * own[1])


def test_cknna_agrees_with_dense_reference_and_is_one_on_identical_rows():
    rng = np.random.default_rng(11)
    left = rng.normal(size=(70, 6))
    right = left @ rng.normal(size=(6, 9)) + 0.5 * rng.normal(size=(70, 9))
    k = 7
    found = [cosine_neighbours(side, k) for side in (left, right)]
    assert cknna(*found) == pytest.approx(_dense_cknna(left, right, k), rel=1e-9)
    assert cknna(found[0], found[0]) == pytest.approx(1.0, abs=1e-12)


def test_sparse_hsic_agrees_with_dense():
    rng = np.random.default_rng(12)
    found = [cosine_neighbours(rng.normal(size=(40, 4)), 5) for _ in range(2)]
    kernels = [side.own_kernel for side in found]
    expected = _dense_hsic_unbiased(kernels[0].toarray(), kernels[1].toarray())
    assert hsic_unbiased(*kernels) == pytest.approx(expected, rel=1e-12)


def test_neighbours_of_different_shapes_are_refused():
    small = Neighbours(np.zeros((4, 2), dtype=int), np.zeros((4, 2)))
    large = Neighbours(np.zeros((4, 3), dtype=int), np.zeros((4, 3)))
    with pytest.raises(ValueError, match="same k"):
        mutual_knn(small, large)
    with pytest.raises(ValueError, match="same k"):
        cknna(small, large)


def test_cka_past_the_first_word_keeps_its_precision_beside_a_massive_activation():
    """First words carrying a massive dimension (10⁴, as a decoder's first token does) move
    the mean of every row far from that of the rows past them: CKA of those rows still
    agrees with float64 to 1e-7, each set of rows shifted by its own mean."""
    from test_geometry import debiased_kernel_cka

    from contextuality.geometry.alignment import (
        AlignmentSettings,
        SampledLayers,
        SampleRows,
        alignment_between,
    )

    rng = np.random.default_rng(11)
    n, first = 400, np.arange(400) % 5 == 0
    base = rng.normal(size=(n, 6))
    layers = {
        layer: base @ rng.normal(size=(6, 8)) + rng.normal(scale=0.3, size=(n, 8))
        for layer in range(3)
    }
    for vectors in layers.values():
        vectors[first, 0] = 1e4
    sampled = SampledLayers({k: v.astype(np.float32) for k, v in layers.items()}, {})
    sample = SampleRows(~first, np.arange(n), sampled=False)
    settings = AlignmentSettings(permutations=1, bootstrap=0)
    table = alignment_between(("m", sampled), None, sample, 0, 0.95, settings).table
    past = table[table["occurrences"] == "position>0"]
    rows = [v.astype(np.float32).astype(np.float64)[~first] for v in layers.values()]
    centered = [x - x.mean(axis=0) for x in rows]
    for a, b, cka, debiased in past[["layer_a", "layer_b", "cka", "cka_debiased"]].itertuples(
        index=False
    ):
        x, y = centered[a], centered[b]
        expected = np.sum((y.T @ x) ** 2) / np.sqrt(np.sum((x.T @ x) ** 2) * np.sum((y.T @ y) ** 2))
        assert cka == pytest.approx(expected, abs=1e-7), (a, b)
        assert debiased == pytest.approx(debiased_kernel_cka(x, y), abs=1e-7), (a, b)


def _correlated_layers(seed: int, layers: tuple[int, ...], n: int = 360) -> dict:
    """Float32 layers of `n` rows sharing a 5-dimensional signal, each with its own noise."""
    rng = np.random.default_rng(seed)
    base = rng.normal(size=(n, 5))
    return {
        layer: (base @ rng.normal(size=(5, 12)) + rng.normal(size=(n, 12))).astype(np.float32)
        for layer in layers
    }


def test_each_pair_alone_is_the_whole_table_s_rows_for_that_pair():
    """`paired_alignment` aligns each chosen pair of layers alone: each layer with the next
    within a model, and each layer with the same layer of another model, give the rows of
    the whole table for those pairs (values, intervals, nulls, calibration) in both sets
    of occurrences and no other pair; one set alone gets the draws it gets beside the
    other; a pairing is refused on the wrong number of models."""
    from contextuality.geometry.alignment import (
        AlignmentSettings,
        SampledLayers,
        SampleRows,
        alignment_between,
    )
    from contextuality.geometry.paired import paired_alignment

    n = 360
    sample = SampleRows(np.arange(n) % 6 != 0, np.arange(n) // 6, sampled=False)
    settings = AlignmentSettings(k=5, permutations=4, bootstrap=6)
    model = ("m", SampledLayers(_correlated_layers(5, (0, 2, 4, 8)), {}))
    other = ("o", SampledLayers(_correlated_layers(6, (0, 4, 8, 9)), {}))
    keys = ["occurrences", "layer_a", "layer_b"]

    def rows_of(table: pd.DataFrame) -> pd.DataFrame:
        return table.sort_values(keys).reset_index(drop=True)

    for right, pairing, pairs in (
        (None, "adjacent", {(0, 2), (2, 4), (4, 8)}),
        (other, "matching", {(0, 0), (4, 4), (8, 8)}),
    ):
        whole = alignment_between(model, right, sample, 7, 0.9, settings).table
        alone = paired_alignment(model, right, pairing, sample, 7, 0.9, settings)
        assert set(zip(alone["layer_a"], alone["layer_b"], strict=True)) == pairs
        assert sorted(alone["occurrences"].unique()) == ["all", "position>0"]
        chosen = [pair in pairs for pair in zip(whole["layer_a"], whole["layer_b"], strict=True)]
        pd.testing.assert_frame_equal(rows_of(alone), rows_of(whole[chosen]), rtol=1e-6, atol=1e-7)
        later = paired_alignment(
            model, right, pairing, sample, 7, 0.9, settings, "none", ("position>0",)
        )
        pd.testing.assert_frame_equal(
            rows_of(later), rows_of(alone[alone["occurrences"] == "position>0"])
        )
    single = ("m", SampledLayers({0: model[1].vectors[0]}, {}))
    assert paired_alignment(single, None, "adjacent", sample, 7, 0.9).empty
    with pytest.raises(ValueError, match="no occurrences called first"):
        paired_alignment(model, None, "adjacent", sample, 7, 0.9, settings, "none", ("first",))
    with pytest.raises(ValueError, match="'matching' pairs two models"):
        paired_alignment(model, None, "matching", sample, 7, 0.9)
    with pytest.raises(ValueError, match="'adjacent' pairs one model"):
        paired_alignment(model, other, "adjacent", sample, 7, 0.9)
