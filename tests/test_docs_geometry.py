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
    every value; the debiased null is within a tenth of the biased one's largest of zero; a
    layer with itself has no null."""
    table = _alignment("bench/gpu/expected/alignment.tsv")
    table = table[~table["model_b"].isin(["word_identity", "word_position"])]
    itself = (table["model_a"] == table["model_b"]) & (table["layer_a"] == table["layer_b"])
    assert table.loc[itself, "null_cka"].isna().all()
    table = table[~itself]
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


DECODER = ROOT / "docs/results/decoder/tables"
LATER_WORDS = ROOT / "docs/results/decoder_later_words/tables"


def _baselines(directory: Path, model: str, transform: str) -> pd.DataFrame:
    """`model`'s cosine baseline over every occurrence and past the first words, by layer."""
    table = pd.read_csv(directory / "measures.tsv", sep="\t")
    table = table[(table["model"] == model) & (table["transform"] == transform)]
    chosen = table[table["measure"].isin(["anisotropy", "anisotropy[position>0]"])]
    return chosen.pivot_table(index="layer", columns="measure", values="raw")


def test_smollm2_parks_its_sink_on_the_first_word_and_the_centering_follows_it():
    """From block 3 to block 27 the first words' mean norm is over three times every later
    bucket's, and they point one way; at the last layer the norms are alike. Centering
    fitted on every held-out word raises the baseline in blocks 12 to 27, above the raw
    one; fitted without the first words it takes it under a hundredth."""
    positions = pd.read_csv(DECODER / "positions.tsv", sep="\t")
    words = positions[
        (positions["model"] == "smollm2")
        & (positions["kind"] == "word position")
        & (positions["transform"] == "none")
    ]
    first = words[words["first_position"] == 0].set_index("layer")
    later = words[words["first_position"] > 0].groupby("layer")["mean_norm"].max()
    sink = [3, *range(6, 30, 3)]
    assert (first.loc[sink, "mean_norm"] > 3 * later[sink]).all()
    assert (first.loc[SINK, "anisotropy"] > 0.9).all()
    assert first.loc[30, "mean_norm"] < 2 * later[30]
    runs = ((DECODER, "none"), (DECODER, "center"), (LATER_WORDS, "center"))
    raw, every, later_only = (
        _baselines(directory, "smollm2", transform) for directory, transform in runs
    )
    blocks = [12, *SINK]
    assert (every.loc[blocks, "anisotropy"] > raw.loc[blocks, "anisotropy"]).all()
    assert (later_only.loc[blocks, "anisotropy"].abs() < 0.01).all()
    moved = (raw["anisotropy[position>0]"] - raw["anisotropy"]).abs()
    assert moved[15] < 0.05  # "barely moves without them"


def test_minilm_has_no_sink_and_its_centering_is_the_same_either_way():
    """MiniLM's first words' norms are within a fifth of the second words' at every layer,
    and its centered baseline moves by less than its own interval's worth, a hundredth, when
    the fit leaves the first words out."""
    positions = pd.read_csv(DECODER / "positions.tsv", sep="\t")
    words = positions[
        (positions["model"] == "minilm")
        & (positions["kind"] == "word position")
        & (positions["transform"] == "none")
    ]
    norms = words.pivot_table(index="layer", columns="bucket", values="mean_norm")
    assert ((norms["0"] / norms["1"] - 1).abs() < 0.2).all()
    every, later_only = (
        _baselines(directory, "minilm", "center") for directory in (DECODER, LATER_WORDS)
    )
    assert ((every["anisotropy"] - later_only["anisotropy"]).abs() < 0.01).all()
