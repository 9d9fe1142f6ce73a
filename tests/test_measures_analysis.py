"""measure_layer: the per-layer tables and summary, against brute force on constructed data."""

from __future__ import annotations

import numpy as np
import pytest

from contextuality.corpus.index import IndexSettings, build_occurrence_index
from contextuality.corpus.words import split_words
from contextuality.measures import equations
from contextuality.measures.analysis import (
    MeasureSettings,
    context_specific_words,
    measure_layer,
)
from contextuality.measures.components import explained_variance_first_component
from contextuality.measures.occurrences import word_class
from contextuality.rows import unit_rows

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


def _pair_cosines(vectors):
    """Cosine of every ordered pair of rows, as a matrix."""
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    return unit @ unit.T


def _brute_selfsim(vectors, occurrences, word):
    """Mean cosine over ordered pairs of the word's occurrences in different sentences."""
    rows = occurrences.index[occurrences["word"] == word].to_numpy()
    sentence = occurrences["sentence_id"].to_numpy()[rows]
    different = sentence[:, None] != sentence[None, :]
    return _pair_cosines(vectors[rows])[different].mean()


def _brute_baseline(vectors, occurrences):
    """Mean cosine over all ordered pairs of occurrences in different sentences."""
    sentence = occurrences["sentence_id"].to_numpy()
    different = sentence[:, None] != sentence[None, :]
    return _pair_cosines(vectors)[different].mean()


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


def test_occurrences_apart_by_less_than_the_shard_resolves_have_no_centered_variance():
    """A static word's occurrences stored as float16 and read back as float32, one of them a
    float16 unit off in one element (a GPU's pooling sums in a varying order): with the
    shard's dtype given, no word has a centered share (0/0, as on a deterministic device);
    without it, a ratio of that rounding is reported as the word's variance."""
    index = _index(2)
    rng = np.random.default_rng(0)
    word_vectors = rng.normal(size=(len(index.vocab), 5)).astype(np.float16)
    stored = word_vectors[index.occurrences["word_id"].to_numpy()]
    stored[0, 0] = np.nextafter(stored[0, 0], np.float16(np.inf))
    widened = stored.astype(np.float32)
    args = (index.occurrences, index.vocab, MeasureSettings())
    as_stored = measure_layer(widened.copy(), *args, stored_dtype="float16").words
    assert as_stored["mev_centered"].isna().all() and as_stored["mev_truncated_svd"].isna().all()
    np.testing.assert_allclose(as_stored["mev"], 1.0, atol=1e-6)
    blind = measure_layer(widened.copy(), *args).words
    assert blind["mev_centered"].notna().sum() == 1


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
                low, high = values[f"{part}_low"], values[f"{part}_high"]
                assert low <= values[part] <= high, (name, part)


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


def _synthetic_layer(n_sentences=400, seed=5):
    """A corpus of random sentences over stopwords, content words and punctuation, with
    vectors that share a direction per word plus noise."""
    rng = np.random.default_rng(seed)
    vocabulary = ["the", "of", "and", "it", "bank", "river", "money", "dog", "cat", "run", ","]
    sentences = [
        " ".join(rng.choice(vocabulary, size=rng.integers(2, 9))) for _ in range(n_sentences)
    ]
    units = [split_words(sentence) for sentence in sentences]
    index = build_occurrence_index(units, IndexSettings(min_contexts=5))
    word_direction = rng.normal(size=(len(index.vocab), 12))
    vectors = word_direction[index.occurrences["word_id"].to_numpy()] * rng.uniform(0.2, 1.0)
    vectors = vectors + rng.normal(size=vectors.shape) + 0.7
    return index, vectors


def test_word_classes_frequency_and_intervals_match_independent_computations():
    from scipy.stats import spearmanr
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    index, vectors = _synthetic_layer()
    settings = MeasureSettings(bootstrap_resamples=400, seed=4)
    result = measure_layer(vectors, index.occurrences, index.vocab, settings)
    measures = result.summary["measures"]
    occurrences = index.occurrences
    selfsim = {
        word: _brute_selfsim(vectors, occurrences, word)
        for word in index.vocab.loc[index.vocab["indexed"], "word"]
    }
    baseline = _brute_baseline(vectors, occurrences)
    stopwords = [value for word, value in selfsim.items() if word in ENGLISH_STOP_WORDS]
    content = [
        value
        for word, value in selfsim.items()
        if word not in ENGLISH_STOP_WORDS and any(c.isalpha() for c in word)
    ]
    assert len(stopwords) == 4 and len(content) == 6  # "," is neither
    for name, values in (("selfsim[stopword]", stopwords), ("selfsim[content]", content)):
        assert measures[name]["raw"] == pytest.approx(np.mean(values), abs=1e-6)
        assert measures[name]["baseline"] == pytest.approx(baseline, abs=1e-6)
        assert measures[name]["n"] == len(values)
    counts = index.vocab.set_index("word")["count"]
    words = list(selfsim)
    rho = spearmanr([selfsim[w] for w in words], [counts[w] for w in words]).statistic
    assert measures["selfsim~frequency"]["raw"] == pytest.approx(rho, abs=1e-9)

    # A bootstrap interval of a mean is close to the normal one, mean ± 1.96 s/√n.
    intrasim = result.sentences["intrasim"].to_numpy()
    half = 1.96 * intrasim.std(ddof=1) / np.sqrt(len(intrasim))
    interval = measures["intrasim"]
    assert interval["raw_low"] == pytest.approx(intrasim.mean() - half, abs=0.25 * half)
    assert interval["raw_high"] == pytest.approx(intrasim.mean() + half, abs=0.25 * half)
    # An exact baseline has no spread: the adjusted interval is the raw one shifted.
    assert interval["baseline_low"] == interval["baseline_high"] == interval["baseline"]
    assert interval["adjusted_low"] == pytest.approx(interval["raw_low"] - baseline, abs=1e-6)
    assert interval["adjusted_high"] == pytest.approx(interval["raw_high"] - baseline, abs=1e-6)
    for name, values in measures.items():
        for part in ("raw", "baseline", "adjusted"):
            if f"{part}_low" in values:
                assert np.isfinite([values[f"{part}_low"], values[f"{part}_high"]]).all(), name


def test_sampled_intervals_narrow_as_the_sample_grows():
    """The spread of the paper's sampled estimates falls about as 1/√(sample size)."""
    index, vectors = _synthetic_layer(n_sentences=3000)
    widths = {}
    for size in (200, 800):
        settings = MeasureSettings(baseline_sample_size=size, bootstrap_resamples=200)
        measures = measure_layer(vectors, index.occurrences, index.vocab, settings).summary[
            "measures"
        ]
        widths[size] = {
            name: measures[name]["raw_high"] - measures[name]["raw_low"]
            for name in ("anisotropy[paper]", "intrasim[paper]")
        }
        widths[size]["mev[truncated_svd]"] = (
            measures["mev[truncated_svd]"]["baseline_high"]
            - measures["mev[truncated_svd]"]["baseline_low"]
        )
    for name, width in widths[800].items():
        assert 0.3 < width / widths[200][name] < 0.75, name  # 1/√4 = 0.5


def test_layer_isotropy_agrees_with_the_reference_scores():
    """The layer's isotropy scores (one centered scatter matrix, float32 chunks) equal the
    direct float64 definitions of `contextuality.measures.isotropy` on anisotropic data."""
    import pandas as pd

    from contextuality.configuration.random_streams import generator
    from contextuality.measures import isotropy
    from contextuality.measures.instruments import isotropy_scores
    from contextuality.measures.occurrences import LayerRows
    from contextuality.measures.record import LayerInputs

    rng = np.random.default_rng(11)
    n, d = 3000, 24
    scales = np.linspace(0.2, 3.0, d)
    vectors = (rng.normal(size=(n, d)) * scales + 4.0 * rng.normal(size=d)).astype(np.float32)
    starts = np.arange(0, n, 6)
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    settings = MeasureSettings(baseline_sample_size=500, isotropy_samples=8)
    sums = equations.sentence_statistics(vectors, starts)[1]
    sentence_id = np.repeat(np.arange(len(starts)), 6)[:n]
    zeros = np.zeros(n, np.int64)
    rows = LayerRows(vectors, sentence_id, zeros, zeros + 1, zeros)
    layer = LayerInputs(settings, pd.DataFrame(), pd.DataFrame(), {}, sums, n, rows=rows)
    scores = {
        **isotropy_scores.exact_scores(layer),
        **isotropy_scores.isoscore_star(layer),
        **isotropy_scores.rogue_shares(layer),
    }
    assert scores["isoscore"]["raw"] == pytest.approx(isotropy.isoscore(vectors), abs=1e-6)
    assert scores["effective_rank"]["raw"] == pytest.approx(
        isotropy.effective_rank(vectors), rel=1e-6
    )
    assert scores["partition_ratio"]["raw"] == pytest.approx(
        isotropy.partition_ratio(vectors), rel=1e-4
    )
    rogue = isotropy.rogue_dimensions(unit, starts, top=3)
    for k in (1, 2, 3):
        assert scores[f"rogue_share[{k}]"]["raw"] == pytest.approx(rogue.share(k), rel=1e-9)
        assert scores[f"rogue_share[{k}]"]["dimensions"].split(",") == [
            str(dimension) for dimension in rogue.dimensions[:k]
        ]
    star = scores["isoscore*"]
    assert star["raw_low"] < star["raw"] < star["raw_high"] and star["n"] == 500
    # The value is the mean IsoScore* of the samples, each shrunk toward all rows' covariance.
    replay = generator(settings.seed, "isotropy_samples")
    covariance = np.cov(vectors.astype(np.float64), rowvar=False, bias=True)
    samples = [np.sort(replay.choice(n, size=500, replace=False)) for _ in range(8)]
    expected = [
        isotropy.isoscore_star(vectors[rows], settings.isoscore_shrinkage, covariance)
        for rows in samples
    ]
    assert star["raw"] == pytest.approx(np.mean(expected), abs=1e-6)
    assert (star["raw_low"], star["raw_high"]) == pytest.approx(
        tuple(np.quantile(expected, [0.025, 0.975])), abs=1e-6
    )


def test_stop_words_are_scikit_learns_list():
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    from contextuality.measures.occurrences import english_stop_words

    assert english_stop_words() == ENGLISH_STOP_WORDS


def test_estimates_on_too_little_are_said_out_loud():
    """Seven sentences: every mean rests on fewer than 20 words or sentences, and every
    sample of 1,000 is drawn from fewer; the lines name each row with its n. A layer of
    enough words and sentences, sampled within its size, has nothing to say."""
    from contextuality.measures.analysis import MIN_MEAN_ITEMS, thin_estimates

    index = _index(2)
    vectors = np.random.default_rng(1).normal(size=(len(index.occurrences), 6)) + 0.5
    summary = measure_layer(vectors, index.occurrences, index.vocab, MeasureSettings()).summary
    few, short = thin_estimates(summary)
    n_words = summary["measures"]["selfsim"]["n"]
    assert f"means over fewer than {MIN_MEAN_ITEMS} words or sentences:" in few
    assert f"selfsim ({n_words})" in few and "intrasim (" in few
    assert "samples of baseline_sample_size = 1000 drawn from fewer:" in short
    assert f"anisotropy[paper] ({len(SENTENCES)})" in short
    assert f"the MEV baselines ({len(vectors)})" in short

    rng = np.random.default_rng(3)
    words = [f"w{k}" for k in range(40)]
    sentences = [" ".join(rng.choice(words, size=8)) for _ in range(300)]
    enough = build_occurrence_index(
        [split_words(sentence) for sentence in sentences], IndexSettings(min_contexts=5)
    )
    vectors = rng.normal(size=(len(enough.occurrences), 6)) + 0.5
    settings = MeasureSettings(baseline_sample_size=100, bootstrap_resamples=20)
    summary = measure_layer(vectors, enough.occurrences, enough.vocab, settings).summary
    assert thin_estimates(summary) == []
