"""Static embeddings from contextual layers: PC1 with its sign rule, mean vectors, and the
word2vec text files they are written to."""

from __future__ import annotations

import json

import numpy as np
import pytest
from gensim.models import KeyedVectors

from contextuality.corpus.index import IndexSettings, build_occurrence_index
from contextuality.corpus.words import split_words
from contextuality.measures.static import (
    first_principal_direction,
    principal_directions_per_group,
    static_vectors,
)
from contextuality.storage.word_vectors import write_word2vec_text

SENTENCES = ["a b c a", "b c d", "a c e", "a b", "c d e", "b e c"]


def test_pc1_points_along_the_mean_whatever_the_svd_sign():
    rng = np.random.default_rng(0)
    matrix = rng.standard_normal((30, 6)) + np.array([3.0, -2.0, 0, 0, 1.0, 0])
    direction = first_principal_direction(matrix)
    assert direction @ matrix.mean(axis=0) > 0
    assert np.linalg.norm(direction) == pytest.approx(1.0)
    np.testing.assert_allclose(first_principal_direction(-matrix), -direction, atol=1e-12)
    top = np.linalg.svd(matrix)[2][0]
    assert abs(direction @ top) == pytest.approx(1.0)


def test_batched_directions_equal_one_group_at_a_time():
    rng = np.random.default_rng(1)
    sizes = np.array([3, 3, 5, 3, 12, 1, 5])
    vectors = rng.standard_normal((sizes.sum(), 8)) + 0.5
    starts = np.r_[0, np.cumsum(sizes)[:-1]]
    expected = [
        first_principal_direction(vectors[start : start + size])
        for start, size in zip(starts, sizes, strict=True)
    ]
    np.testing.assert_allclose(principal_directions_per_group(vectors, starts), expected, atol=1e-9)


def test_static_vectors_of_constant_words_are_those_words():
    index = build_occurrence_index(
        [split_words(sentence) for sentence in SENTENCES], IndexSettings(min_contexts=3)
    )
    rng = np.random.default_rng(2)
    base = rng.standard_normal((len(index.vocab), 5))
    vectors = base[index.occurrences["word_id"].to_numpy()]
    indexed = index.vocab.loc[index.vocab["indexed"]]
    for method, expected in (
        ("mean", base[indexed["word_id"]]),
        (
            "pc1",
            base[indexed["word_id"]] / np.linalg.norm(base[indexed["word_id"]], axis=1)[:, None],
        ),
    ):
        words, matrix = static_vectors(vectors, index.occurrences, index.vocab, method)
        assert words == indexed["word"].tolist()
        np.testing.assert_allclose(matrix, expected, atol=1e-5)


def test_missing_occurrences_are_skipped():
    index = build_occurrence_index(
        [split_words(sentence) for sentence in SENTENCES], IndexSettings(min_contexts=3)
    )
    vectors = np.random.default_rng(3).standard_normal((len(index.occurrences), 4))
    first_a = index.occurrences.index[index.occurrences["word"] == "a"][0]
    vectors[first_a] = np.nan
    words, matrix = static_vectors(vectors, index.occurrences, index.vocab, "mean")
    rows = index.occurrences.index[index.occurrences["word"] == "a"][1:]
    np.testing.assert_allclose(matrix[words.index("a")], vectors[rows].mean(axis=0), atol=1e-6)
    assert np.isfinite(matrix).all()
    with pytest.raises(ValueError, match="method"):
        static_vectors(vectors, index.occurrences, index.vocab, "median")


def test_word2vec_text_round_trip_through_gensim(tmp_path):
    words = ["the", "bank", "don't", "1,650"]
    matrix = np.random.default_rng(4).standard_normal((4, 3)).astype(np.float32)
    path = tmp_path / "layer_1.txt"
    write_word2vec_text(path, words, matrix, {"model": "m", "layer": 1, "method": "pc1"})
    loaded = KeyedVectors.load_word2vec_format(path, binary=False)
    assert loaded.index_to_key == words
    np.testing.assert_allclose(loaded.vectors, matrix, rtol=1e-5)
    sidecar = json.loads((tmp_path / "layer_1.txt.json").read_text())
    assert sidecar["n_words"] == 4 and sidecar["method"] == "pc1"
