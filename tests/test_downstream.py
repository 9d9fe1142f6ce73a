"""Layers against a downstream task: the STS score of a layer's sentence vectors (Spearman's
ρ against gold, with a bootstrap interval over pairs), a measure's agreement with it
across layers (with its permutation p-value), the scored pairs read from STS archives,
and the mean-pooled sentence vectors themselves."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from scipy.stats import spearmanr

from contextuality.backends import load_model
from contextuality.backends.settings import ModelSettings
from contextuality.corpus.sentences import SentencePair, read_sts_archive, scored_pairs
from contextuality.errors import InputDataError
from contextuality.extraction.sentence_vectors import sentence_vectors
from contextuality.measures.downstream import (
    TaskScores,
    layer_agreement,
    pair_cosines,
    task_scores,
)


def _rng() -> np.random.Generator:
    return np.random.default_rng(0)


def test_pair_cosines_are_the_cosines_of_each_pair_and_nan_for_a_zero_vector():
    vectors = np.random.default_rng(1).normal(size=(6, 4))
    vectors[5] = 0
    left, right = np.array([0, 1, 2, 5]), np.array([3, 4, 0, 1])
    cosines = pair_cosines(vectors, left, right)
    for k, (a, b) in enumerate(zip(left[:3], right[:3], strict=True)):
        expected = vectors[a] @ vectors[b] / np.linalg.norm(vectors[a]) / np.linalg.norm(vectors[b])
        assert cosines[k] == pytest.approx(expected)
    assert math.isnan(cosines[3])


def test_task_scores_are_spearman_with_a_bootstrap_interval_on_the_same_pairs():
    rng = np.random.default_rng(2)
    gold = rng.uniform(0, 5, 300)
    cosines = {0: rng.normal(size=300), 3: gold + rng.normal(scale=2, size=300), 6: gold**3}
    cosines[0][10] = np.nan  # left out of every layer, not only layer 0
    gold[20] = np.nan
    scores = task_scores(cosines, gold, 200, _rng())
    table = scores.table.set_index("layer")
    kept = np.ones(300, bool)
    kept[[10, 20]] = False
    for layer, values in cosines.items():
        expected = spearmanr(values[kept], gold[kept]).statistic
        assert table.loc[layer, "spearman"] == pytest.approx(expected, abs=1e-12)
        assert table.loc[layer, "low"] <= table.loc[layer, "spearman"] <= table.loc[layer, "high"]
    assert (table["n_pairs"] == 298).all()
    assert table.loc[6, "low"] == table.loc[6, "high"] == pytest.approx(1.0)
    assert table.loc[3, "low"] > table.loc[0, "high"]  # a real score beats noise
    assert scores.draws.shape == (200, 3)


def test_task_scores_are_the_same_for_the_same_seed_and_refuse_bad_input():
    gold = np.arange(10.0)
    cosines = {1: np.sin(gold)}
    first = task_scores(cosines, gold, 50, _rng())
    np.testing.assert_array_equal(first.draws, task_scores(cosines, gold, 50, _rng()).draws)
    with pytest.raises(ValueError, match="bootstrap draw"):
        task_scores(cosines, gold, 0, _rng())
    with pytest.raises(ValueError, match="9 gold"):
        task_scores(cosines, gold[:9], 10, _rng())
    with pytest.raises(ValueError, match="only 2 scored pairs"):
        task_scores({1: np.array([1.0, 2.0, np.nan])}, np.arange(3.0), 10, _rng())


def _scores(values_by_layer: list[np.ndarray], gold: np.ndarray):
    return task_scores(dict(enumerate(values_by_layer)), gold, 100, _rng())


def test_a_measure_that_ranks_the_layers_as_the_score_does_agrees_fully():
    """Seven layers whose score rises with depth; a measure rising with depth has ρ = 1,
    and its exact p-value is 2 orderings of 7! (ρ = 1 and ρ = −1)."""
    rng = np.random.default_rng(3)
    gold = rng.uniform(0, 5, 400)
    layers = [gold + rng.normal(scale=s, size=400) for s in (6, 5, 4, 3, 2, 1, 0.5)]
    scores = _scores(layers, gold)
    assert np.all(np.diff(scores.table["spearman"]) > 0)
    found = layer_agreement(np.arange(7.0) ** 2, scores, _rng())
    assert found["rho"] == pytest.approx(1.0)
    assert found["p_value"] == pytest.approx(2 / math.factorial(7))
    assert found["low"] <= found["rho"] <= found["high"]
    reversed_found = layer_agreement(-np.arange(7.0), scores, _rng())
    assert reversed_found["rho"] == pytest.approx(-1.0)
    assert reversed_found["p_value"] == found["p_value"]


def test_agreement_leaves_out_unmeasured_layers_and_is_nan_without_three():
    rng = np.random.default_rng(4)
    gold = rng.uniform(0, 5, 200)
    scores = _scores([gold + rng.normal(scale=s, size=200) for s in (4, 2, 1, 0.5)], gold)
    partial = layer_agreement(np.array([np.nan, 1.0, 2.0, 3.0]), scores, _rng())
    assert partial["n_layers"] == 3 and partial["rho"] == pytest.approx(1.0)
    assert partial["p_value"] == pytest.approx(2 / 6)
    assert math.isnan(layer_agreement(np.array([np.nan, np.nan, 1.0, 2.0]), scores, _rng())["rho"])
    assert math.isnan(layer_agreement(np.ones(4), scores, _rng())["rho"])
    same = _scores([gold + rng.normal(scale=1, size=200)] * 4, gold)  # one score at every layer
    undefined = layer_agreement(np.arange(4.0), same, _rng())
    assert math.isnan(undefined["rho"]) and math.isnan(undefined["p_value"])
    with pytest.raises(ValueError, match="3 measure values for 4 layers"):
        layer_agreement(np.ones(3), scores, _rng())


def test_the_agreement_s_interval_is_of_the_draws_that_rank_the_layers_and_nan_without_one():
    """A draw whose scores are the same at every layer has no ρ: the interval is that of
    the other draws, and NaN, without numpy's all-NaN warning, where no draw ranks the
    layers."""
    import warnings

    table = pd.DataFrame({"spearman": np.arange(4.0)})
    tied = np.ones((6, 4))  # every draw the same score at every layer
    mixed = np.vstack([tied[:3], np.arange(4.0) * [[1], [1], [1]]])  # 3 tied, 3 rising
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        undefined = layer_agreement(np.arange(4.0), TaskScores(table, tied), _rng())
        half = layer_agreement(np.arange(4.0), TaskScores(table, mixed), _rng())
    assert undefined["rho"] == pytest.approx(1.0)
    assert math.isnan(undefined["low"]) and math.isnan(undefined["high"])
    assert half["low"] == pytest.approx(1.0) and half["high"] == pytest.approx(1.0)


def test_agreement_over_many_layers_samples_the_orderings():
    rng = np.random.default_rng(5)
    gold = rng.uniform(0, 5, 300)
    scales = np.linspace(6, 0.5, 12)
    scores = _scores([gold + rng.normal(scale=s, size=300) for s in scales], gold)
    unrelated = layer_agreement(rng.permutation(12).astype(float), scores, _rng())
    expected = spearmanr(np.arange(12), scores.table["spearman"]).statistic
    assert layer_agreement(-scales, scores, _rng())["rho"] == pytest.approx(expected)
    assert 0.0 < unrelated["p_value"] <= 1.0


def test_scored_pairs_keep_gold_scored_pairs_over_distinct_normalized_sentences():
    pairs = [
        SentencePair(2012, "MSRpar", 1, "A  cat sat.", "A dog sat.", 3.5),
        SentencePair(2012, "MSRpar", 2, "A dog sat.", "No score.", None),
        SentencePair(2013, "FNWN", 1, "A dog sat.", "A cat sat.", 1.0),
    ]
    found = scored_pairs(pairs)
    assert found.sentences == ["A cat sat.", "A dog sat."]
    np.testing.assert_array_equal(found.left, [0, 1])
    np.testing.assert_array_equal(found.right, [1, 0])
    np.testing.assert_array_equal(found.gold, [3.5, 1.0])
    assert found.dataset == ["STS2012/MSRpar", "STS2013/FNWN"]
    with pytest.raises(InputDataError, match="no STS pair has a gold score"):
        scored_pairs(pairs[1:2])


def test_scored_pairs_of_the_real_sts_2016_archive(shared_data: Path):
    pairs, _ = read_sts_archive(
        shared_data / "sts" / "STS2016-en-test.zip", 2016, verify_checksums=True
    )
    found = scored_pairs(pairs)
    assert len(found.gold) == sum(pair.gold is not None for pair in pairs) > 1000
    assert found.gold.min() >= 0 and found.gold.max() <= 5
    assert max(found.left.max(), found.right.max()) == len(found.sentences) - 1


SENTENCES = ["the bank raised its rates", "a river bank flooded after the storm", "rates rose"]


@pytest.fixture(scope="module")
def bert(tiny_bert_dir):
    return load_model(ModelSettings(name="tiny-bert", source=str(tiny_bert_dir)))


def test_sentence_vectors_are_the_mean_of_the_content_tokens_at_each_layer(bert):
    """Against the model run one sentence at a time, special tokens ([CLS], [SEP]) left
    out of the mean; batching with padding changes nothing."""
    pooled = sentence_vectors(bert, SENTENCES, (0, 1, 2), ("mean", "past_first"))
    for k, sentence in enumerate(SENTENCES):
        encoded = bert.tokenizer(sentence, return_tensors="pt", return_special_tokens_mask=True)
        content = encoded.pop("special_tokens_mask")[0] == 0
        past_first = content.clone()
        past_first[int(content.nonzero()[0, 0])] = False
        with torch.inference_mode():
            states = bert.model(**encoded, output_hidden_states=True).hidden_states
        for layer in (0, 1, 2):
            expected = states[layer][0][content].mean(dim=0).numpy()
            np.testing.assert_allclose(pooled["mean"][layer, k], expected, atol=1e-5)
            expected = states[layer][0][past_first].mean(dim=0).numpy()
            np.testing.assert_allclose(pooled["past_first"][layer, k], expected, atol=1e-5)
    alone = sentence_vectors(bert, SENTENCES[2:], (2,))["mean"]
    np.testing.assert_allclose(alone[0, 0], pooled["mean"][2, 2], atol=1e-5)
    with pytest.raises(ValueError, match="at least one sentence"):
        sentence_vectors(bert, [], (0,))
    with pytest.raises(ValueError, match="unknown sentence poolings"):
        sentence_vectors(bert, SENTENCES, (0,), ("max",))
