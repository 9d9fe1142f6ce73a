"""Position effects: a layer's profile by word position (`positions.position_profile`), the
``[position>0]`` measures, and corrections fitted without each sentence's first word."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from contextuality.corpus.index import IndexSettings, build_occurrence_index
from contextuality.corpus.words import split_words
from contextuality.files.provenance import provenance_record
from contextuality.files.tables import write_parquet
from contextuality.measures.analysis import MeasureSettings, measure_layer
from contextuality.measures.positions import POSITION_EDGES, bucket_labels, position_profile
from contextuality.storage.shards import ShardSetWriter
from contextuality.transforms.layers import TransformFit, load_layer


def brute_baseline(vectors, sentence_id):
    """Mean cosine over all ordered pairs of rows in different sentences."""
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    different = sentence_id[:, None] != sentence_id[None, :]
    return (unit @ unit.T)[different].mean()


@pytest.fixture
def sink_layer():
    """Forty sentences of 3 to 40 words, whose first word's vector has a norm 1,000 times
    the others' and points along one shared direction, as a decoder's first token."""
    rng = np.random.default_rng(11)
    words = [f"w{k}" for k in range(12)]
    sentences = [" ".join(rng.choice(words, size=rng.integers(3, 41))) for _ in range(40)]
    index = build_occurrence_index(
        [split_words(sentence) for sentence in sentences], IndexSettings(min_contexts=2)
    )
    positions = index.occurrences["position"].to_numpy()
    vectors = rng.normal(size=(len(positions), 8))
    first = positions == 0
    vectors[first] = 1000.0 * (np.eye(8)[0] + 0.01 * rng.normal(size=(first.sum(), 8)))
    return index, vectors


def test_bucket_labels_cover_every_position():
    assert bucket_labels() == ["0", "1", "2–3", "4–7", "8–15", "16–31", "32+"]
    assert len(bucket_labels()) == len(POSITION_EDGES)


def test_the_profile_matches_brute_force(sink_layer):
    index, vectors = sink_layer
    occurrences = index.occurrences
    positions = occurrences["position"].to_numpy()
    sentence_id = occurrences["sentence_id"].to_numpy()
    profile = position_profile(vectors, positions, sentence_id).set_index("bucket")
    assert profile["n"].sum() == len(vectors)
    for label, low in zip(bucket_labels(), POSITION_EDGES, strict=True):
        high = dict(zip(POSITION_EDGES, (*POSITION_EDGES[1:], np.inf), strict=True))[low]
        chosen = (positions >= low) & (positions < high)
        row = profile.loc[label]
        assert row["n"] == chosen.sum()
        norms = np.linalg.norm(vectors[chosen], axis=1)
        assert row["mean_norm"] == pytest.approx(norms.mean())
        assert row["median_norm"] == pytest.approx(np.median(norms))
        expected = brute_baseline(vectors[chosen], sentence_id[chosen])
        assert row["anisotropy"] == pytest.approx(expected, abs=1e-10)
    assert profile.loc["0", "mean_norm"] > 100 * profile.loc["1", "mean_norm"]
    assert profile.loc["0", "anisotropy"] > 0.99  # every first word points one way


@pytest.mark.parametrize("overwrite", [False, True])
def test_measures_past_the_first_word_are_those_of_the_later_words(sink_layer, overwrite):
    index, vectors = sink_layer
    occurrences = index.occurrences
    settings = MeasureSettings(seed=2, bootstrap_resamples=50, sample_replicates=3)
    every = measure_layer(vectors.copy(), occurrences, index.vocab, settings, positions=True)
    later = (occurrences["position"] > 0).to_numpy()
    alone = measure_layer(
        vectors[later], occurrences[later].reset_index(drop=True), index.vocab, settings
    )
    layer = measure_layer(
        vectors.copy(), occurrences, index.vocab, settings, overwrite=overwrite, positions=True
    )
    found, expected = layer.summary["measures"], alone.summary["measures"]
    assert found["anisotropy[position>0]"]["raw"] == pytest.approx(expected["anisotropy"]["raw"])
    assert found["anisotropy[position>0]"]["n"] == later.sum()
    for name in ("selfsim", "intrasim"):
        shifted = found[f"{name}[position>0]"]
        assert shifted["raw"] == pytest.approx(expected[name]["raw"])
        assert shifted["adjusted"] == pytest.approx(expected[name]["adjusted"])
        assert shifted["raw_low"] <= shifted["raw"] <= shifted["raw_high"]
    # Pairs of first words (cosine near 1) raise the baseline; without them the random
    # vectors are isotropic.
    assert abs(found["anisotropy[position>0]"]["raw"]) < 0.002
    assert found["anisotropy"]["raw"] > found["anisotropy[position>0]"]["raw"] + 0.001
    # The same values and draws, in place or copied (compared as JSON: NaN equals NaN).
    assert json.dumps(layer.summary, sort_keys=True) == json.dumps(every.summary, sort_keys=True)
    assert "anisotropy[position>0]" not in alone.summary["measures"]
    assert alone.positions is None and len(layer.positions) == len(POSITION_EDGES)


def test_a_correction_can_be_fitted_without_the_first_words(sink_layer, tmp_path):
    index, vectors = sink_layer
    occurrences = index.occurrences
    path = tmp_path / "layer_1.h5"
    with ShardSetWriter({1: path}, len(vectors), 8, "float32", {"index_checksum": "i"}) as w:
        w.write(0, vectors[None].astype(np.float32))
        w.commit({})
    n_sentences = int(occurrences["sentence_id"].max()) + 1
    fit = np.arange(n_sentences) % 4 == 0
    split = tmp_path / "split.parquet"
    record = provenance_record(
        fit_fraction=0.25, seed=0, n_fit_sentences=int(fit.sum()), corpus_checksum="c"
    )
    write_parquet(pd.DataFrame({"sentence_id": range(n_sentences), "fit": fit}), split, record)
    summary = {"index_checksum": "i", "corpus_checksum": "c"}
    in_fit = fit[occurrences["sentence_id"].to_numpy()]
    later = occurrences["position"].to_numpy() > 0
    measured = ~in_fit
    for without_first, fitted in ((False, in_fit), (True, in_fit & later)):
        settings = {"fit_fraction": 0.25, "seed": 0, "fit_without_first_words": without_first}
        layer = load_layer(path, summary, occurrences, "center", TransformFit.of(split, settings))
        expected = vectors[measured] - vectors[fitted].astype(np.float32).mean(axis=0)
        np.testing.assert_allclose(layer.vectors, expected, atol=1e-3)
        assert layer.transform_fit["fit_without_first_words"] is without_first
        assert layer.transform_fit["n_fit"] == fitted.sum()
