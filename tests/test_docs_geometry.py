"""What docs/geometry.md says of the numbers it looks up on the similarity between layers
and between models and on MiniLM's positions, checked in the tables it looks them up in
(the published runs of config/full.yaml and config/instruments.yaml, the GPU acceptance's
expected tables)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from test_docs_instruments import _pairs

ROOT = Path(__file__).resolve().parents[1]
SINK = [15, 18, 21, 24, 27]


def _alignment(path: str) -> pd.DataFrame:
    table = pd.read_csv(ROOT / path, sep="\t")
    return table[table["transform"] == "none"]


@pytest.fixture(scope="module")
def full() -> pd.DataFrame:
    return _alignment("docs/results/full/tables/alignment.tsv")


@pytest.fixture(scope="module")
def families() -> pd.DataFrame:
    return _alignment("docs/results/instruments/tables/alignment.tsv")


def test_each_null_is_what_the_page_says_of_it_on_the_acceptance_tables():
    """Between two tiny random-init models' layers the biased null is above zero and below
    every value; the debiased null is within a tenth of the biased one's largest of zero."""
    table = _alignment("bench/gpu/expected/alignment.tsv")
    table = table[~table["model_b"].isin(["word_identity", "word_position"])]
    assert (table["null_cka"] > 0).all() and (table["cka"] > table["null_cka"]).all()
    assert table["null_cka_debiased"].abs().max() < table["null_cka"].max() / 10


def test_minilm_s_adjacent_layers_are_alike_but_its_last_two_and_first_to_last(full):
    """MiniLM's adjacent layers up to layer 4 are each more alike than layer 5 to 4, which
    is more alike than 6 to 5, and the last layer is further from the embedding output,
    on every occurrence and past the first words alike."""
    for occurrences in ("all", "position>0"):
        cka = _pairs(full, "minilm", "minilm", occurrences)["cka"]
        adjacent = pd.Series({layer: cka[(layer, layer - 1)] for layer in range(1, 7)})
        assert adjacent.loc[:4].min() > adjacent[5] > adjacent[6] > cka[(6, 0)]


def test_smollm2_s_sink_blocks_are_one_on_every_occurrence_and_not_past_the_first(families):
    """On every occurrence SmolLM2's blocks 15 to 27 are each 1.000 from the block stored
    before and far from every MiniLM layer, the null below; past the first words they are
    not, and only blocks 24 and 27 match a MiniLM layer with an interval above every
    interval of those blocks on every occurrence."""
    within = _pairs(families, "smollm2", "smollm2", "all")
    assert (within.loc[[(block, block - 3) for block in SINK], "cka_low"].round(3) == 1).all()
    later = _pairs(families, "smollm2", "smollm2", "position>0")
    assert (later.loc[[(block, block - 3) for block in SINK], "cka"] < 0.99).all()
    every = _pairs(families, "minilm", "smollm2", "all")
    blocks = every[every.index.get_level_values("layer_b").isin(SINK)]
    assert blocks["cka"].max() < 0.1 and (blocks["null_cka"] < blocks["cka_low"]).all()
    past = _pairs(families, "minilm", "smollm2", "position>0")
    past = past[past.index.get_level_values("layer_b").isin(SINK)].reset_index()
    best = past.loc[past.groupby("layer_b")["cka"].idxmax()].set_index("layer_b")
    assert list(best.index[best["cka_low"] > blocks["cka_high"].max()]) == [24, 27]
    page = " ".join((ROOT / "docs" / "geometry.md").read_text().split())
    assert "only blocks 24 and 27 (best" in page


def test_minilm_s_special_tokens_are_no_larger_than_its_words_and_cls_is_one_vector():
    """docs/geometry.md on MiniLM's position profile (the published run of
    config/full.yaml): each special token's mean norm is below its layer's largest word
    bucket; [CLS] is one vector (anisotropy 1.000) to layer 4, less at 5 and far less at
    the last; the first words are more alike than any later bucket at every layer to 5,
    the closest at layer 5 the bucket past position 32; a sentence holds some 25 words."""
    table = pd.read_csv(ROOT / "docs/results/full/tables/positions.tsv", sep="\t")
    table = table[(table["model"] == "minilm") & (table["transform"] == "none")]
    words = table[table["kind"] == "word position"]
    special = table[table["kind"] == "special token"].set_index(["bucket", "layer"])
    largest = special["mean_norm"].groupby(level="layer").max()
    assert (largest < words.groupby("layer")["mean_norm"].max()).all()
    cls = special.loc["[CLS]", "anisotropy"]
    assert (cls.loc[:4].round(3) == 1).all() and cls[5].round(3) < 1 and cls[6] < 0.7
    first = words[words["bucket"] == "0"].set_index("layer")["anisotropy"]
    later = words[words["bucket"] != "0"]
    assert (first.loc[:5] > later.groupby("layer")["anisotropy"].max().loc[:5]).all()
    at_five = later[later["layer"] == 5]
    assert at_five.loc[at_five["anisotropy"].idxmax(), "bucket"] == "32+"
    at_embeddings = words[words["layer"] == 0]
    sentences = at_embeddings.loc[at_embeddings["bucket"] == "0", "n"].iloc[0]
    assert round(at_embeddings["n"].sum() / sentences) == 25
    page = " ".join((ROOT / "docs" / "geometry.md").read_text().split())
    assert "in a sentence of some 25 words" in page
