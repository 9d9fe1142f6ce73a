"""What docs/instruments.md's section on the three families (and models.md's decoder
profile) says of the numbers it looks up, checked in the tables of the published run of
config/instruments.yaml: each sentence that the lookups cannot keep true by themselves (a
direction, a "most", a "none")."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
RUN = ROOT / "docs/results/instruments/tables"
SINK = [12, 15, 18, 21, 24, 27]


@pytest.fixture(scope="module")
def alignment() -> pd.DataFrame:
    return pd.read_csv(RUN / "alignment.tsv", sep="\t")


@pytest.fixture(scope="module")
def measures() -> pd.DataFrame:
    table = pd.read_csv(RUN / "measures.tsv", sep="\t")
    return table.set_index(["model", "transform", "measure", "layer"]).sort_index()


@pytest.fixture(scope="module")
def best() -> pd.DataFrame:
    table = pd.read_csv(RUN / "best_layers.tsv", sep="\t")
    table = table[(table["transform"] == "none") & (table["occurrences"] == "all")]
    return table.set_index(["model", "other_model", "measure", "layer"]).sort_index()


def _pairs(table: pd.DataFrame, model_a: str, model_b: str, occurrences: str) -> pd.DataFrame:
    chosen = table[
        (table["model_a"] == model_a)
        & (table["model_b"] == model_b)
        & (table["transform"] == "none")
        & (table["occurrences"] == occurrences)
    ]
    return chosen.set_index(["layer_a", "layer_b"]).sort_index()


def _adjacent(table: pd.DataFrame, model: str, occurrences: str) -> pd.DataFrame:
    """Each of SmolLM2's sink blocks after the first against the block before."""
    rows = _pairs(table, model, model, occurrences)
    return rows.loc[[(after, before) for before, after in zip(SINK, SINK[1:], strict=False)]]


def test_cka_makes_the_sink_blocks_one_representation_but_not_their_neighbourhoods(alignment):
    """Debiased CKA between consecutive sink blocks reads 1.000 on every occurrence, less
    past the first words, while mutual k-NN stays far below it; the untrained twin's
    neighbourhoods change less from block to block than the trained ones, interval clear
    of interval."""
    every = _adjacent(alignment, "smollm2", "all")
    later = _adjacent(alignment, "smollm2", "position>0")
    assert (every["cka_debiased"].round(3) == 1).all()
    assert (later["cka_debiased"] < every["cka_debiased"] - 0.03).all()
    assert (every["mutual_knn"] < 0.8).all()
    twin = pd.read_csv(ROOT / "docs/results/families/tables/alignment.tsv", sep="\t")
    untrained = _adjacent(twin, "smollm2-untrained", "all")
    assert untrained["mutual_knn_low"].min() > every["mutual_knn_high"].max()


def test_the_map_between_families_is_what_the_page_draws(best):
    """By debiased CKA every SmolLM2 block but the last matches Gemma-3's embedding output;
    by mutual k-NN the match moves down Gemma-3 with depth, and holds in every draw far
    above the null of choosing; where the sink decides the map (CKA, Procrustes) it holds
    in fewer draws; blocks 0 to 9 and 30 keep their CKA and Procrustes matches."""
    cka = best.loc[("smollm2", "gemma3", "cka_debiased")]
    assert (cka.loc[:27, "best_layer"] == 0).all() and cka.loc[30, "best_layer"] != 0
    knn = best.loc[("smollm2", "gemma3", "mutual_knn")]
    assert knn["best_layer"].is_monotonic_increasing
    assert knn["best_layer"].iloc[-1] > knn["best_layer"].iloc[1]
    assert (knn["stays_best"] == 1).all()
    assert (knn["value"] > 10 * knn["best_threshold"]).all()
    assert (cka.loc[SINK, "stays_best"] < 1).all()
    procrustes = best.loc[("smollm2", "gemma3", "procrustes")]
    assert (procrustes.loc[[12, 15, 18, 21, 24, 27], "stays_best"] < 1).all()
    for table in (cka, procrustes):
        assert (table.loc[[0, 3, 6, 9, 30], "stays_best"] == 1).all()


def _maps() -> pd.DataFrame:
    """Each setting's best Gemma-3 layer per SmolLM2 block (rows: sample size, seed, k)."""
    matches = pd.read_csv(RUN / "alignment_sensitivity_matches.tsv", sep="\t")
    return matches.pivot_table(
        index=["sample_size", "seed", "k"], columns="layer_a", values="best_layer"
    )


def test_the_seed_moves_no_match_and_the_map_follows_k_over_the_sample():
    """At the stage's own sample size every seed gives the map the stage's own seed gives,
    for every k; the stage's k on its sample and twice that k on twice the sample give one
    map, as do its k on half its sample and twice that k on its own."""
    maps = _maps()
    at_size = maps.xs(10_000, level="sample_size")
    assert (at_size.groupby(level="k").nunique() == 1).all().all()
    assert maps.loc[(10_000, 0, 10)].equals(maps.loc[(20_000, 0, 20)])
    assert maps.loc[(5_000, 0, 10)].equals(maps.loc[(10_000, 0, 20)])
    assert not maps.loc[(10_000, 0, 10)].equals(maps.loc[(2_500, 0, 50)])


def test_block_12_s_match_is_a_tie_of_layers_6_and_9_within_a_seed_s_spread(best):
    """At the stage's own setting block 12's best two layers are Gemma-3's 6 and 9, its
    margin the size of one seed's standard deviation (within a factor of two), while the
    draws over sentences never overturn it."""
    rows = pd.read_csv(RUN / "alignment_sensitivity.tsv", sep="\t")
    own = rows[rows["reference"] & (rows["layer_a"] == 12)]
    assert set(own.nlargest(2, "mutual_knn")["layer_b"]) == {6, 9}
    matches = pd.read_csv(RUN / "alignment_sensitivity_matches.tsv", sep="\t")
    reference = matches[
        (matches["sample_size"] == 10_000) & (matches["seed"] == 0) & (matches["k"] == 10)
    ].set_index("layer_a")
    seeds = pd.read_csv(RUN / "alignment_sensitivity_seeds.tsv", sep="\t")
    spread = seeds.loc[seeds["layer_a"] == 12, "std"].max()
    assert 0.5 < reference.loc[12, "margin"] / spread < 2
    assert reference.drop([0, 12])["margin"].min() > 3 * spread
    assert best.loc[("smollm2", "gemma3", "mutual_knn", 12), "stays_best"] == 1


def test_the_census_finds_one_sink_one_rogue_dimension_and_nothing_in_minilm():
    census = pd.read_csv(RUN / "massive_activations.tsv", sep="\t")
    census = census[census["transform"] == "none"].set_index(["model", "layer", "dimension"])
    assert sorted(census.loc["smollm2"].xs(507, level="dimension").index) == SINK
    assert census.loc[("smollm2", 12, 507), "share_first_word"] > 0.99
    assert "minilm" not in census.index.get_level_values("model")
    assert list(census.loc["gemma3"].index) == [(3, 400)]
    assert census.loc[("gemma3", 3, 400), "share_first_word"] < 0.05
    zeroed = census.loc["smollm2-zeroed"].index
    assert 507 not in zeroed.get_level_values("dimension")


def test_three_dimensions_make_most_of_the_decoders_anisotropy(measures):
    """Without its three rogue dimensions each decoder block keeps under half its
    anisotropy and gains adjusted SelfSim; standardized, MiniLM, Gemma-3 and SmolLM2 before
    its sink keep almost none, SmolLM2 from block 12 more, falling with depth."""
    blocks = {"smollm2": range(3, 28, 3), "gemma3": range(3, 16, 3), "minilm": range(1, 6)}
    for model, layers in blocks.items():
        raw = measures.loc[(model, "none", "anisotropy", list(layers)), "raw"].to_numpy()
        dropped = measures.loc[(model, "drop_rogue", "anisotropy", list(layers)), "raw"]
        assert (dropped.to_numpy() < raw).all(), model
        if model != "minilm":
            assert (dropped.to_numpy() < raw / 2).all(), model
        selfsim = [
            measures.loc[(model, transform, "selfsim", list(layers)), "adjusted"].to_numpy()
            for transform in ("none", "drop_rogue")
        ]
        assert (selfsim[1] > selfsim[0]).all(), model
    standardized = measures.xs(("standardize", "anisotropy"), level=("transform", "measure"))
    quiet = [
        standardized.loc[(model, list(blocks[model])), "raw"] for model in ("minilm", "gemma3")
    ]
    assert pd.concat(quiet).max() < 0.02
    early = standardized.loc[("smollm2", [3, 6, 9]), "raw"]
    sink = standardized.loc[("smollm2", SINK), "raw"]
    assert sink.min() > 2 * early.max() and sink.is_monotonic_decreasing


def test_the_spectrum_and_curvature_move_as_the_page_says(measures):
    """SmolLM2's dataset entropy falls at block 12 and recovers after; Gemma-3's dips at
    block 3; curvature is lowest at the embedding output of both decoders and peaks
    mid-depth in MiniLM."""
    entropy = measures.loc[("smollm2", "none", "dataset_entropy"), "raw"]
    assert entropy[12] < entropy[9] / 2 and entropy[12] < entropy[27] < entropy[30]
    gemma = measures.loc[("gemma3", "none", "dataset_entropy"), "raw"]
    assert gemma[3] < min(gemma[0], gemma[6])
    for model in ("smollm2", "gemma3"):
        curvature = measures.loc[(model, "none", "curvature"), "raw"].dropna()
        assert curvature.idxmin() == 0 and curvature.idxmax() >= 12, model
    minilm = measures.loc[("minilm", "none", "curvature"), "raw"]
    assert minilm.idxmax() not in (minilm.index.min(), minilm.index.max())


def test_the_zeroed_sink_changes_every_later_block_and_its_mean_does_not(alignment, measures):
    """Zeroed at block 12, SmolLM2 keeps fewer of its neighbours block by block while CKA on
    every occurrence stays near 1 up to block 21 and is far lower past the first words,
    where block 12 keeps every neighbour; the massive activation does not come back; after
    the final norm adjusted SelfSim falls and anisotropy rises. Set to its mean, every
    layer stays itself."""
    zeroed = _pairs(alignment, "smollm2", "smollm2-zeroed", "all")
    same = [(layer, layer) for layer in (12, 15, 21, 30)]
    knn = zeroed.loc[same, "mutual_knn"]
    assert knn.is_monotonic_decreasing
    assert (zeroed.loc[same[:3], "cka_debiased"] > 0.98).all()
    later = _pairs(alignment, "smollm2", "smollm2-zeroed", "position>0")
    assert (later.loc[same[:3], "cka_debiased"] < 0.5).all()
    assert later.loc[(12, 12), "mutual_knn"] > 0.9995
    share = measures.loc[("smollm2-zeroed", "none", "massive_activations"), "raw"]
    assert (share.loc[15:] == 0).all()
    last = {
        m: measures.loc[(m, "none", "selfsim", 30), "adjusted"]
        for m in ("smollm2", "smollm2-zeroed")
    }
    assert last["smollm2-zeroed"] < last["smollm2"]
    rise = {
        m: measures.loc[(m, "none", "anisotropy", 30), "raw"] for m in ("smollm2", "smollm2-zeroed")
    }
    assert rise["smollm2-zeroed"] > rise["smollm2"]
    mean = _pairs(alignment, "smollm2", "smollm2-mean", "all").loc[same]
    assert (mean["mutual_knn"] > 0.95).all() and (mean["cka_debiased"] > 0.99).all()


def test_smollm2_s_profile_is_a_decoder_s_as_the_models_page_says(measures):
    """docs/models.md: SmolLM2's anisotropy baseline rises from the embeddings into every
    block from 3 to 27, each above MiniLM's largest, and falls after the final
    normalization; its adjusted SelfSim at block 27 is below the embeddings'."""
    anisotropy = measures.loc[("smollm2", "none", "anisotropy"), "raw"]
    blocks = anisotropy.loc[3:27]
    minilm = measures.loc[("minilm", "none", "anisotropy"), "raw"]
    assert (blocks > anisotropy.loc[0]).all() and (blocks > minilm.max()).all()
    assert anisotropy.loc[30] < anisotropy.loc[27]
    selfsim = measures.loc[("smollm2", "none", "selfsim"), "adjusted"]
    assert selfsim.loc[27] < selfsim.loc[0]
    page = " ".join((ROOT / "docs" / "models.md").read_text().split())
    assert "adjusted SelfSim falls from" in page and "while MiniLM's reaches at most" in page
