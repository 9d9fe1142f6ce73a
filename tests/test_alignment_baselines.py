"""The word baselines: one-hot word (and position) rows, multiplied as sparse matrices to the
same values as dense ones, and a layer that knows only the word agreeing with them fully."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

from contextuality.geometry.alignment import (
    AlignmentSettings,
    SampledLayers,
    SampleRows,
    alignment_between,
)
from contextuality.geometry.baselines import word_baselines
from contextuality.geometry.linear_cka import CrossProducts
from contextuality.geometry.neighbours import cosine_neighbours


def test_sparse_rows_give_the_values_of_the_same_rows_dense():
    rng = np.random.default_rng(0)
    words, positions = rng.integers(0, 12, 80), rng.integers(0, 6, 80)
    layer = rng.normal(size=(80, 5)) + np.eye(12)[words] @ rng.normal(size=(12, 5))
    weights = rng.integers(0, 3, 80)
    for name, baseline in word_baselines(words, positions).items():
        rows = baseline.vectors[0]
        assert rows.shape == (80, 12 if name == "word_identity" else 18)
        found = []
        for right in (rows, rows.toarray()):
            shift = (layer.mean(axis=0), np.zeros(rows.shape[1]))
            products = CrossProducts([5], [rows.shape[1]], shift)
            products.add([layer], [right], weights)
            found.append([products.cka(), products.debiased_cka(), products.procrustes()])
        np.testing.assert_allclose(np.array(found[0]), np.array(found[1]), atol=1e-12)
    with pytest.raises(ValueError, match="no baseline called word_frequency"):
        word_baselines(words, positions, ("word_frequency",))


def test_chunks_that_touch_few_words_add_up_to_the_dense_products():
    """Rows sorted by word, added 16 at a time: each chunk touches a few of the words'
    columns, the others untouched (only the touched ones are added to); the values are
    those of the same chunks dense, with the sparse set on either side."""
    rng = np.random.default_rng(1)
    words = np.sort(rng.integers(0, 30, 120))
    positions = rng.integers(0, 8, 120)
    layer = rng.normal(size=(120, 6)) + np.eye(30)[words] @ rng.normal(size=(30, 6))
    weights = rng.integers(0, 3, 120)
    for baseline in word_baselines(words, positions).values():
        rows = baseline.vectors[0]
        found = []
        for right in (rows, rows.toarray()):
            for sides in ((layer, right), (right, layer)):
                widths = [side.shape[1] for side in sides]
                shift = tuple(
                    np.zeros(side.shape[1]) if side is right else side.mean(axis=0)
                    for side in sides
                )
                products = CrossProducts([widths[0]], [widths[1]], shift)
                for start in range(0, 120, 16):
                    chunk = slice(start, start + 16)
                    products.add([sides[0][chunk]], [sides[1][chunk]], weights[chunk])
                found.append([products.cka(), products.debiased_cka(), products.procrustes()])
        np.testing.assert_allclose(np.array(found[:2]), np.array(found[2:]), atol=1e-12)


def test_two_sparse_sets_give_the_values_of_the_same_rows_dense():
    """The two baselines against each other, both sparse, added a few rows at a time: the
    values of the same rows dense (the products' cells each chunk touches on both sides)."""
    rng = np.random.default_rng(4)
    words, positions = rng.integers(0, 25, 90), rng.integers(0, 7, 90)
    weights = rng.integers(0, 3, 90)
    sets = [baseline.vectors[0] for baseline in word_baselines(words, positions).values()]
    found = []
    for left, right in (sets, [rows.toarray() for rows in sets]):
        shift = tuple(np.zeros(rows.shape[1]) for rows in (left, right))
        products = CrossProducts([left.shape[1]], [right.shape[1]], shift)
        for start in range(0, 90, 16):
            chunk = slice(start, start + 16)
            products.add([left[chunk]], [right[chunk]], weights[chunk])
        found.append([products.cka(), products.debiased_cka(), products.procrustes()])
    np.testing.assert_allclose(np.array(found[0]), np.array(found[1]), atol=1e-12)


def test_a_vocabulary_of_thousands_of_words_is_never_multiplied_out():
    """A baseline's products with itself stay sparse (diagonal for word identity) and are
    never centered as a matrix: 12,000 rows of 6,000 words, weighted as a draw, give their
    CKA, debiased CKA and Procrustes distance in a few MB, where one dense 6,000 × 6,000
    block alone is 288 MB (and its centering two more)."""
    rng = np.random.default_rng(3)
    words, positions = rng.permutation(np.arange(12_000) % 6_000), rng.integers(0, 40, 12_000)
    layer = rng.normal(size=(12_000, 4)) + rng.normal(size=(6_000, 4))[words]
    weights = rng.integers(0, 3, 12_000)
    for baseline in word_baselines(words, positions).values():
        rows = baseline.vectors[0]
        tracemalloc.start()
        shift = (layer.mean(axis=0), np.zeros(rows.shape[1]))
        products = CrossProducts([4], [rows.shape[1]], shift)
        for start in range(0, 12_000, 1024):
            chunk = slice(start, start + 1024)
            products.add([layer[chunk]], [rows[chunk]], weights[chunk])
        found = [products.cka(), products.debiased_cka(), products.procrustes()]
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        assert peak < 20e6
        assert 0 < found[0][0, 0] < 1 and 0 < found[2][0, 0] < np.pi / 2
        assert np.isfinite(found[1][0, 0])


def test_a_layer_that_knows_only_the_word_agrees_with_word_identity():
    """Each word's occurrences share one vector: their nearest neighbours are the other
    occurrences of their word in that layer and in the one-hot baseline alike (mutual
    k-NN 1); a layer of noise shares about k/(n − 1) of them."""
    rng = np.random.default_rng(1)
    words = np.repeat(np.arange(20), 15)
    positions = np.tile(np.arange(15), 20)
    static = rng.normal(size=(20, 8))[words]
    noise = rng.normal(size=(300, 8))
    model = SampledLayers({0: static.astype(np.float32), 1: noise.astype(np.float32)}, {})
    sample = SampleRows(np.ones(300, bool), np.arange(300), False, words, positions)
    settings = AlignmentSettings(k=10, permutations=3, bootstrap=0)
    baselines = word_baselines(words, positions, ("word_identity",))
    table = alignment_between(
        ("m", model), ("word_identity", baselines["word_identity"]), sample, 0, 0.95, settings
    ).table
    found = table[table["occurrences"] == "all"].set_index("layer_a")
    assert found.loc[0, "mutual_knn"] == pytest.approx(1.0)
    assert found.loc[1, "mutual_knn"] < 0.15
    assert found.loc[0, "cka_debiased"] > 0.5 > found.loc[1, "cka_debiased"]
    assert (found["null_mutual_knn"] < 0.15).all()


def test_the_neighbours_of_sparse_rows_are_those_of_the_same_rows_dense():
    """Ties everywhere (cosines 1, ½ and 0): the sparse search breaks them by the lower row,
    as the dense one does."""
    rng = np.random.default_rng(2)
    words, positions = rng.integers(0, 9, 120), rng.integers(0, 5, 120)
    for baseline in word_baselines(words, positions).values():
        rows = baseline.vectors[0]
        sparse_found, dense_found = (cosine_neighbours(x, 6) for x in (rows, rows.toarray()))
        np.testing.assert_array_equal(sparse_found.indices, dense_found.indices)
        np.testing.assert_allclose(sparse_found.cosines, dense_found.cosines, atol=1e-7)
