"""The paper authors' published results: reading, verified fetching, and the comparison."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from contextuality import reference
from contextuality.errors import InputDataError


@pytest.fixture()
def published(shared_data):
    return shared_data / "reference" / "ethayarajh2019"


@pytest.mark.parametrize(
    ("model", "words", "layers"), [("bert", 8159, 13), ("gpt2", 6875, 13), ("elmo", 6875, 3)]
)
def test_published_tables_read_in_full(published, model, words, layers):
    statistics = reference.read_layer_statistics(published / model / "embedding_space_stats.json")
    assert len(statistics) == 5 * layers
    assert sorted(statistics["layer"].unique()) == list(range(layers))
    selfsim = reference.read_word_table(published / model / "self_similarity.csv")
    assert selfsim["word"].nunique() == words
    assert sorted(selfsim["layer"].unique()) == list(range(layers))
    variance = reference.read_word_table(published / model / "variance_explained.csv")
    assert sorted(variance["layer"].unique()) == list(range(1, layers))  # no layer 0


def test_fetch_verifies_the_published_checksum(published, tmp_path):
    target = tmp_path / "bert" / "embedding_space_stats.json"
    reference.fetch_published("bert/embedding_space_stats.json", target, published)
    assert target.read_bytes() == (published / "bert" / "embedding_space_stats.json").read_bytes()

    tampered = tmp_path / "mirror" / "bert"
    tampered.mkdir(parents=True)
    (tampered / "self_similarity.csv").write_text("word,layer_0\nthe,0.5\n")
    with pytest.raises(InputDataError, match="checksum"):
        reference.fetch_published(
            "bert/self_similarity.csv", tmp_path / "out.csv", tmp_path / "mirror"
        )
    assert not (tmp_path / "out.csv").exists()
    with pytest.raises(InputDataError, match="not found"):
        reference.fetch_published(
            "gpt2/self_similarity.csv", tmp_path / "x.csv", tmp_path / "mirror"
        )


def _ours_from_published(published_dir, scale=1.0):
    """A run whose values are exactly the published ones (times `scale`)."""
    statistics = reference.read_layer_statistics(published_dir / "embedding_space_stats.json")
    measures = {name: measure for name, (measure, _) in reference.LAYER_STATISTICS.items()}
    summary = statistics[statistics["statistic"].isin(measures)].assign(
        measure=lambda frame: frame["statistic"].map(measures),
        raw=lambda frame: frame["published"] * scale,
    )
    selfsim = reference.read_word_table(published_dir / "self_similarity.csv")
    variance = reference.read_word_table(published_dir / "variance_explained.csv")
    words = {}
    for layer, group in selfsim.groupby("layer"):
        table = group[["word"]].assign(selfsim=group["published"].to_numpy() * scale)
        share = variance[variance["layer"] == layer][["word", "published"]]
        words[layer] = table.merge(share.rename(columns={"published": "mev_centered"}), "left")
    return summary[["measure", "layer", "raw"]], words


def test_a_run_equal_to_the_published_values_agrees_exactly(published):
    summary, words = _ours_from_published(published / "elmo")
    comparison = reference.compare(published / "elmo", summary, words)
    assert set(comparison["statistic"]) == {
        *reference.LAYER_STATISTICS,
        "self_similarity",
        "variance_explained",
    }
    np.testing.assert_allclose(comparison["difference"], 0.0, atol=1e-12)
    per_word = comparison.dropna(subset=["spearman"])
    assert (per_word["spearman"] > 0.999).all()
    assert (per_word["n_words"] > 6000).all()


def test_differences_and_correlations_respond_to_the_run(published):
    summary, words = _ours_from_published(published / "elmo", scale=0.5)
    for layer, table in words.items():
        shuffled = table["selfsim"].sample(frac=1.0, random_state=layer).to_numpy()
        words[layer] = table.assign(selfsim=shuffled)
    comparison = reference.compare(published / "elmo", summary, words)
    layer_rows = comparison[comparison["statistic"].isin(reference.LAYER_STATISTICS)]
    np.testing.assert_allclose(layer_rows["ours"], 0.5 * layer_rows["published"])
    selfsim = comparison[comparison["statistic"] == "self_similarity"].dropna(subset=["spearman"])
    assert len(selfsim) == 2  # layer 0 of ELMo is constant (SelfSim 1): no correlation
    assert (selfsim["spearman"].abs() < 0.1).all()
    assert isinstance(comparison, pd.DataFrame)
