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
from contextuality.index import IndexSettings, build_occurrence_index
from contextuality.measures import explained_variance_first_component, unit_rows
from contextuality.words import split_words

SENTENCES = [
    "a b c a",
    "b c d",
    "a c e f",
    "a b",
    "c d e",
    "a",
    "b e f c",
]


def _index(min_contexts, copies=None):
    units = [split_words(sentence) for sentence in SENTENCES]
    return build_occurrence_index(units, IndexSettings(min_contexts=min_contexts), copies)


def _cosine(x, y):
    return float(x @ y / np.linalg.norm(x) / np.linalg.norm(y))


@pytest.fixture()
def layer_data():
    index = _index(3)
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
    index = _index(2)
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


COPIES = np.array([1, 3, 1, 2, 1, 1, 2])  # times the corpus repeats each sentence


def _listed_rows(occurrences, word):
    """The paper's occurrence list of `word`: each row once per copy of its sentence."""
    rows = occurrences.index[occurrences["word"] == word].to_numpy()
    return np.repeat(rows, COPIES[occurrences.loc[rows, "sentence_id"]])


def test_paper_estimators_per_word_match_brute_force():
    from sklearn.decomposition import TruncatedSVD

    index = _index(3, COPIES)
    rng = np.random.default_rng(9)
    vectors = rng.normal(size=(len(index.occurrences), 6)) + 0.5
    result = measure_layer(vectors, index.occurrences, index.vocab, MeasureSettings(seed=1), COPIES)
    assert len(result.words) == index.vocab["indexed"].sum()
    for row in result.words.itertuples():
        listed = _listed_rows(index.occurrences, row.word)
        pairs = [
            _cosine(vectors[j], vectors[k])
            for a, j in enumerate(listed)
            for b, k in enumerate(listed)
            if a != b
        ]
        assert row.selfsim_paper == pytest.approx(np.mean(pairs), abs=1e-6)
        assert row.n_with_repeats == len(listed)
        components = min(5, len(listed) - 1)
        svd = TruncatedSVD(components, algorithm="arpack").fit(vectors[listed])
        assert row.mev_truncated_svd == pytest.approx(svd.explained_variance_ratio_[0], abs=1e-6)
        rows = index.occurrences.index[index.occurrences["word"] == row.word]
        assert row.mev_centered == pytest.approx(
            explained_variance_first_component(vectors[rows], centered=True), abs=1e-9
        )
    measures = result.summary["measures"]
    for name, family in (("selfsim[paper]", "anisotropy[paper]"),):
        assert measures[name]["baseline"] == pytest.approx(measures[family]["raw"])
        assert measures[name]["raw"] == pytest.approx(result.words["selfsim_paper"].mean())
    assert measures["intrasim[paper]"]["baseline"] == measures["anisotropy[paper]"]["raw"]
    for name, values in measures.items():
        if "adjusted" in values:
            assert values["adjusted"] == pytest.approx(values["raw"] - values["baseline"])
        for part in ("raw", "baseline", "adjusted"):
            if f"{part}_low" in values:
                assert values[f"{part}_low"] <= values[f"{part}_high"], (name, part)


def test_paper_sampled_statistics_on_sentences_of_one_vector_each():
    """When every word of a sentence has the sentence's vector, the paper's random words do
    not depend on which word is drawn, and a sample as large as the corpus's sentence list
    takes every copy: the estimates are then fixed, and their draws all equal them."""
    from sklearn.decomposition import TruncatedSVD

    index = _index(3, COPIES)
    sentence_vectors = np.random.default_rng(10).normal(size=(len(SENTENCES), 5)) + 1.0
    vectors = sentence_vectors[index.occurrences["sentence_id"].to_numpy()]
    settings = MeasureSettings(baseline_sample_size=int(COPIES.sum()), bootstrap_resamples=20)
    measures = measure_layer(vectors, index.occurrences, index.vocab, settings, COPIES).summary[
        "measures"
    ]
    listed = np.repeat(sentence_vectors, COPIES, axis=0)
    unit = unit_rows(listed).astype(np.float64)
    expected_cosine = np.mean(unit @ unit.T)  # all pairs, a word with itself included
    assert measures["anisotropy[paper]"]["raw"] == pytest.approx(expected_cosine, abs=1e-6)
    assert measures["anisotropy[paper]"]["raw_low"] == pytest.approx(expected_cosine, abs=1e-6)
    assert measures["anisotropy[paper]"]["n"] == COPIES.sum()
    assert measures["intrasim[paper]"]["raw"] == pytest.approx(1.0, abs=1e-6)
    svd = TruncatedSVD(4, algorithm="arpack").fit(listed)
    assert measures["mev[truncated_svd]"]["baseline"] == pytest.approx(
        svd.explained_variance_ratio_[0], abs=1e-6
    )


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
