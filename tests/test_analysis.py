"""measure_layer: the per-layer tables and summary, against brute force on constructed data."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from contextuality.analysis import (
    MeasureSettings,
    context_specific_words,
    measure_layer,
    word_class,
)
from contextuality.index import build_occurrence_index

SENTENCES = [
    "a b c a",
    "b c d",
    "a c e f",
    "a b",
    "c d e",
    "a",
    "b e f c",
]


def _cosine(x, y):
    return float(x @ y / np.linalg.norm(x) / np.linalg.norm(y))


@pytest.fixture()
def layer_data():
    index = build_occurrence_index(SENTENCES, min_contexts=3)
    rng = np.random.default_rng(7)
    vectors = rng.normal(size=(len(index.occurrences), 6)) + 0.5
    return index, vectors


def _brute_selfsim(vectors, occurrences, word):
    rows = occurrences.index[occurrences["word"] == word]
    sentence = occurrences["sentence_id"].to_numpy()
    pairs = [
        _cosine(vectors[j], vectors[k])
        for j, k in itertools.permutations(rows, 2)
        if sentence[j] != sentence[k]
    ]
    return np.mean(pairs)


def _brute_baseline(vectors, occurrences):
    sentence = occurrences["sentence_id"].to_numpy()
    pairs = [
        _cosine(vectors[j], vectors[k])
        for j, k in itertools.permutations(range(len(vectors)), 2)
        if sentence[j] != sentence[k]
    ]
    return np.mean(pairs)


def test_words_and_summary_match_brute_force(layer_data):
    index, vectors = layer_data
    result = measure_layer(vectors, index.occurrences, index.vocab, MeasureSettings(seed=3))
    indexed = set(index.vocab.loc[index.vocab["indexed"], "word"])
    assert set(result.words["word"]) == indexed
    for row in result.words.itertuples():
        assert row.selfsim == pytest.approx(
            _brute_selfsim(vectors, index.occurrences, row.word), abs=1e-6
        )
        rows = index.occurrences.index[index.occurrences["word"] == row.word]
        singular = np.linalg.svd(vectors[rows], compute_uv=False)
        assert row.mev == pytest.approx(singular[0] ** 2 / np.sum(singular**2), abs=1e-6)
        assert row.n == len(rows)
    baseline = _brute_baseline(vectors, index.occurrences)
    summary = result.summary
    assert summary["measures"]["selfsim"]["baseline"] == pytest.approx(baseline, abs=1e-6)
    assert summary["measures"]["selfsim"]["raw"] == pytest.approx(result.words["selfsim"].mean())
    assert summary["measures"]["selfsim"]["adjusted"] == pytest.approx(
        summary["measures"]["selfsim"]["raw"] - baseline
    )
    assert summary["measures"]["mev"]["adjusted"] == pytest.approx(
        summary["measures"]["mev"]["raw"] - summary["measures"]["mev"]["baseline"]
    )
    # IntraSim over sentences of at least two words: the one-word sentence is left out.
    assert len(result.sentences) == len(SENTENCES) - 1
    first = index.occurrences.index[index.occurrences["sentence_id"] == 0]
    mean = vectors[first].mean(axis=0)
    expected = np.mean([_cosine(vectors[i], mean) for i in first])
    assert result.sentences.loc[0, "intrasim"] == pytest.approx(expected, abs=1e-6)


def test_missing_rows_are_left_out(layer_data):
    index, vectors = layer_data
    vectors = vectors.copy()
    occurrences = index.occurrences
    dropped = occurrences.index[(occurrences["word"] == "a") & (occurrences["sentence_id"] == 0)]
    vectors[dropped] = np.nan
    result = measure_layer(vectors, occurrences, index.vocab, MeasureSettings())
    kept = np.setdiff1d(np.arange(len(vectors)), dropped)
    assert result.summary["n_missing"] == len(dropped)
    row = result.words.set_index("word").loc["a"]
    assert row["n"] == (occurrences.loc[kept, "word"] == "a").sum()
    reduced = occurrences.loc[kept].reset_index(drop=True)
    assert row["selfsim"] == pytest.approx(_brute_selfsim(vectors[kept], reduced, "a"), abs=1e-6)
    assert result.summary["measures"]["selfsim"]["baseline"] == pytest.approx(
        _brute_baseline(vectors[kept], reduced), abs=1e-6
    )


def test_mev_baseline_is_seeded(layer_data):
    index, vectors = layer_data
    settings = MeasureSettings(baseline_sample_size=10, seed=11)
    first = measure_layer(vectors, index.occurrences, index.vocab, settings)
    again = measure_layer(vectors, index.occurrences, index.vocab, settings)
    other = measure_layer(
        vectors, index.occurrences, index.vocab, MeasureSettings(baseline_sample_size=10, seed=12)
    )
    assert (
        first.summary["measures"]["mev"]["baseline"] == again.summary["measures"]["mev"]["baseline"]
    )
    assert (
        first.summary["measures"]["mev"]["baseline"] != other.summary["measures"]["mev"]["baseline"]
    )
    assert first.summary["seed"] == 11


def test_identical_occurrences_are_fully_static():
    """Every occurrence of a word gets the same vector: SelfSim = MEV = 1 for every word."""
    index = build_occurrence_index(SENTENCES, min_contexts=2)
    rng = np.random.default_rng(0)
    word_vectors = rng.normal(size=(len(index.vocab), 5))
    vectors = word_vectors[index.occurrences["word_id"].to_numpy()]
    result = measure_layer(vectors, index.occurrences, index.vocab, MeasureSettings())
    np.testing.assert_allclose(result.words["selfsim"], 1.0, atol=1e-6)
    np.testing.assert_allclose(result.words["mev"], 1.0, atol=1e-6)


def test_context_specific_words_lists_both_ends_of_each_layer(layer_data):
    index, vectors = layer_data
    layers = {
        layer: measure_layer(
            vectors * (layer + 1), index.occurrences, index.vocab, MeasureSettings()
        ).words
        for layer in (0, 3)
    }
    table = context_specific_words(layers, top=2)
    assert sorted(table["layer"].unique()) == [0, 3]
    for layer, words in layers.items():
        ranked = words.sort_values("selfsim_adjusted")["word"].tolist()
        rows = table[table["layer"] == layer]
        assert rows[rows["end"] == "most"].sort_values("rank")["word"].tolist() == ranked[:2]
        assert rows[rows["end"] == "least"].sort_values("rank")["word"].tolist() == ranked[::-1][:2]
    assert set(table["word_class"]) <= {"stopword", "content", "other"}


@pytest.mark.parametrize(
    ("word", "expected"),
    [
        ("the", "stopword"),
        ("The", "stopword"),
        ("bank", "content"),
        (",", "other"),
        ("1,650", "other"),
    ],
)
def test_word_class(word, expected):
    assert word_class(word) == expected
