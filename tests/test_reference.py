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
    rows = []
    for item in statistics.itertuples():
        if item.statistic in reference.LAYER_STATISTICS:
            measure, column, *_ = reference.LAYER_STATISTICS[item.statistic]
            rows.append({"measure": measure, "layer": item.layer, column: item.published * scale})
    summary = pd.DataFrame(rows).groupby(["measure", "layer"], as_index=False).first()
    selfsim = reference.read_word_table(published_dir / "self_similarity.csv")
    variance = reference.read_word_table(published_dir / "variance_explained.csv")
    words = {}
    for layer, group in selfsim.groupby("layer"):
        table = group[["word"]].assign(selfsim_paper=group["published"].to_numpy() * scale)
        share = variance[variance["layer"] == layer][["word", "published"]]
        share = share.rename(columns={"published": "mev_truncated_svd"})
        words[layer] = table.merge(share, "left")
    return summary, words


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
        shuffled = table["selfsim_paper"].sample(frac=1.0, random_state=layer).to_numpy()
        words[layer] = table.assign(selfsim_paper=shuffled)
    comparison = reference.compare(published / "elmo", summary, words)
    layer_rows = comparison[comparison["statistic"].isin(reference.LAYER_STATISTICS)]
    np.testing.assert_allclose(layer_rows["ours"], 0.5 * layer_rows["published"])
    selfsim = comparison[comparison["statistic"] == "self_similarity"].dropna(subset=["spearman"])
    assert len(selfsim) == 2  # layer 0 of ELMo is constant (SelfSim 1): no correlation
    assert (selfsim["spearman"].abs() < 0.1).all()
    assert isinstance(comparison, pd.DataFrame)


def test_each_published_statistic_maps_to_the_same_estimator_of_this_run():
    """The variance-explained files are the TruncatedSVD ratio (per word and for random
    words), the cosine and IntraSim files the paper's sentence-sampled estimates."""
    assert reference.WORD_TABLES["variance_explained.csv"][0] == "mev_truncated_svd"
    assert reference.WORD_TABLES["self_similarity.csv"][0] == "selfsim_paper"
    assert reference.LAYER_STATISTICS["variance explained for random words"][:2] == (
        "mev[truncated_svd]",
        "baseline",
    )
    assert reference.LAYER_STATISTICS["mean cosine similarity across words"][0] == (
        "anisotropy[paper]"
    )


def test_every_comparison_row_names_the_estimator_on_each_side(published):
    summary, words = _ours_from_published(published / "gpt2")
    comparison = reference.compare(published / "gpt2", summary, words)
    assert comparison["published_estimator"].str.len().gt(0).all()
    assert comparison["our_estimator"].str.len().gt(0).all()
    for statistic, (measure, column, *_) in reference.LAYER_STATISTICS.items():
        rows = comparison[comparison["statistic"] == statistic]
        assert rows["our_estimator"].str.startswith(f"{measure} {column}").all()
    for file, (column, *_) in reference.WORD_TABLES.items():
        rows = comparison[comparison["statistic"] == file.removesuffix(".csv")]
        assert rows["our_estimator"].str.startswith(column).all()


def test_published_variance_explained_has_the_scale_of_the_truncated_svd_ratio(published):
    """The published per-word BERT "variance explained" averages under 5% at every layer,
    the scale of the TruncatedSVD ratio, not of a centered PCA share (at least 1/(n − 1)
    for n occurrences, so at least 5% for any word seen at most 21 times)."""
    variance = reference.read_word_table(published / "bert" / "variance_explained.csv")
    means = variance.groupby("layer")["published"].mean()
    assert (means < 0.05).all() and len(means) == 12
