"""Numbers the docs quote, read from the committed files they cite."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]


def _page(name: str) -> str:
    """A docs page with its line breaks and runs of spaces made single spaces."""
    return " ".join((ROOT / "docs" / name).read_text().split())


# Alignment tables of the published runs, by the name the tests give them.
PUBLISHED = {
    "instruments": "docs/results/instruments/tables/alignment.tsv",
    "families": "docs/results/families/tables/alignment.tsv",
}


def _pair(table_name: str, model_a: str, model_b: str, occurrences: str) -> pd.DataFrame:
    """The rows of a committed alignment table (`bench/results/<table_name>.tsv`, or a
    published run's, `PUBLISHED`) between
    `model_a` and `model_b` by (layer of `model_a`, layer of `model_b`), whichever side the
    table puts each model on."""
    table = pd.read_csv(
        ROOT / PUBLISHED.get(table_name, f"bench/results/{table_name}.tsv"), sep="\t"
    )
    table = table[table["occurrences"] == occurrences]
    forward = table[(table["model_a"] == model_a) & (table["model_b"] == model_b)]
    backward = table[(table["model_a"] == model_b) & (table["model_b"] == model_a)]
    backward = backward.rename(columns={"layer_a": "layer_b", "layer_b": "layer_a"})
    both = pd.concat([forward, backward]).drop_duplicates(["layer_a", "layer_b"])
    assert not both.empty, (table_name, model_a, model_b, occurrences)
    return both.set_index(["layer_a", "layer_b"]).sort_index()


def _with_interval(row: pd.Series, measure: str = "cka", places: int = 3) -> str:
    """A row's value of `measure` with its interval, as the docs write it: 0.123 (0.120–0.126)."""
    low, high = row[f"{measure}_low"], row[f"{measure}_high"]
    return f"{row[measure]:.{places}f} ({low:.{places}f}–{high:.{places}f})"


def test_what_the_geometry_page_says_of_the_intrinsic_dimension_over_scale_holds():
    """docs/geometry.md looks MiniLM's curves up in the published run of config/full.yaml;
    what it says of them must hold: plateaus at layers 1 to 5 (and TwoNN's at the
    embedding output), none at the last layer, the dimension rising to block 4 and block 5
    below it beyond both intervals by GRIDE at k = 2 and TwoNN on 5,000 points, the last
    layer level with layer 2 and below layers 3 to 5 at k = 1 and above every layer at
    k = 32."""
    run = ROOT / "docs/results/full/tables"
    curves = pd.read_csv(run / "dimension_scales.tsv", sep="\t")
    curves = curves[curves["model"] == "minilm"].set_index(["estimator", "layer", "scale"])
    measures = pd.read_csv(run / "measures.tsv", sep="\t")
    plateaus = measures[
        (measures["model"] == "minilm")
        & (measures["transform"] == "none")
        & measures["measure"].str.startswith("intrinsic_dimension[")
    ].pivot(index="layer", columns="measure", values="raw")
    scales = measures[(measures["model"] == "minilm") & (measures["transform"] == "none")]
    scales = scales.pivot(index="layer", columns="measure", values="scale")
    assert scales.loc[2:5, "intrinsic_dimension[twonn]"].nunique() == 1  # "layers 1 to 5 …
    assert scales.loc[1:5, "intrinsic_dimension[gride]"].nunique() == 1  # … layer 1 at …"
    found = plateaus.notna()
    assert found.loc[1:5].all().all() and not found.loc[6].any()
    assert (
        found.loc[0, "intrinsic_dimension[twonn]"]
        and not found.loc[0, "intrinsic_dimension[gride]"]
    )
    for column in plateaus:
        assert plateaus.loc[1:4, column].is_monotonic_increasing
        assert plateaus.loc[5, column] < plateaus.loc[4, column]
    for estimator, scale in (("gride", 2), ("twonn", 5000)):
        assert (
            curves.loc[(estimator, 5, scale), "dimension_high"]
            < (curves.loc[(estimator, 4, scale), "dimension_low"])
        )
    last = curves.loc[("gride", 6, 1)]
    assert last["dimension_high"] > curves.loc[("gride", 2, 1), "dimension_low"]
    assert all(
        last["dimension_high"] < curves.loc[("gride", layer, 1), "dimension_low"]
        for layer in (3, 4, 5)
    )
    largest = curves.xs(32, level="scale").loc["gride"]
    assert largest["dimension"].idxmax() == 6
    assert largest.loc[6, "dimension_low"] > largest.drop(6)["dimension_high"].max()
    twonn_last = curves.loc[("twonn", 6, 156)]
    assert twonn_last["dimension_low"] <= curves.loc[("twonn", 5, 156), "dimension_high"]


def test_what_the_families_page_says_between_the_models_holds():
    """docs/families.md looks the alignment between the three models up in the published
    run of config/instruments.yaml; what it says of it must hold: each two models most
    alike at their embedding layers (or MiniLM's layer 1), SmolLM2's sink blocks' intervals
    wider than any other between the models, its massive activation on some occurrences
    past a first word, the two decoders' embeddings sharing more neighbours than either
    shares with the word type (most of it), and in the sink blocks word and position above
    every best match in the other models by whole intervals."""
    models = ["minilm", "smollm2", "gemma3"]
    table = _instruments("alignment")
    later = table[(table["occurrences"] == "position>0") & (table["transform"] == "none")]
    between = later[
        later["model_a"].isin(models)
        & later["model_b"].isin(models)
        & (later["model_a"] != later["model_b"])
    ]
    for _, pair in between.groupby(["model_a", "model_b"]):
        best = pair.loc[pair["cka"].idxmax()]
        assert max(best["layer_a"], best["layer_b"]) <= 1
    sink = ((between["model_a"] == "smollm2") & between["layer_a"].between(12, 27)) | (
        (between["model_b"] == "smollm2") & between["layer_b"].between(12, 27)
    )
    width = between["cka_high"] - between["cka_low"]
    assert width[sink].min() > width[~sink].max()
    census = _instruments("massive_activations").set_index(["model", "layer", "dimension"])
    assert 0.99 < census.loc[("smollm2", 12, 507), "share_first_word"] < 1
    every = table[(table["occurrences"] == "all") & (table["transform"] == "none")]
    embeddings = every[(every["layer_a"] == 0) & (every["layer_b"] == 0)].set_index(
        ["model_a", "model_b"]
    )["mutual_knn"]
    for model in ("smollm2", "gemma3"):
        assert 0.5 < embeddings[model, "word_identity"] < embeddings["smollm2", "gemma3"]
    words = every[(every["model_a"] == "smollm2") & every["layer_a"].between(12, 27)]
    words = words.set_index(["model_b", "layer_a"])
    best = _instruments("best_layers")
    best = best[
        (best["model"] == "smollm2")
        & best["layer"].between(12, 27)
        & best["other_model"].isin(["gemma3", "minilm"])
        & (best["transform"] == "none")
        & (best["occurrences"] == "all")
        & (best["measure"] == "cka_debiased")
    ]
    position = words.loc["word_position"]
    assert position["cka_debiased_low"].min() > best["high"].max()
    word = words.loc["word_identity"]
    assert position["cka_debiased_low"].min() > word["cka_debiased_high"].max()


def _instruments(table: str) -> pd.DataFrame:
    """A table of the published instruments run (`docs/results/instruments/tables/`)."""
    return pd.read_csv(ROOT / f"docs/results/instruments/tables/{table}.tsv", sep="\t")


def _instrument(model: str, measure: str, layer: int, transform="none", column="raw"):
    table = _instruments("measures")
    chosen = (
        (table["model"] == model)
        & (table["measure"] == measure)
        & (table["layer"] == layer)
        & (table["transform"] == transform)
    )
    return table.loc[chosen, column].item()


# The alignment and measures tables docs/instruments.md reads the corrections from: the
# published run of config/geometry_corrections.yaml.
CORRECTIONS = (
    "docs/results/geometry_corrections/tables/alignment.tsv",
    "docs/results/geometry_corrections/tables/measures.tsv",
)


def test_what_the_instruments_page_says_of_the_geometry_under_the_corrections_holds():
    """docs/instruments.md looks the geometry under the corrections up in `CORRECTIONS`;
    what it says of them must hold: each `center`
    value of consecutive layers inside the raw value's interval, the intrinsic dimension's
    largest move under `center` at SmolLM2's block 24, SmolLM2's block 12 clear of its
    `center` interval under both corrections, mutual k-NN moving less there than CKA,
    Gemma-3's neighbours and MiniLM's dimension raised by the corrections, SmolLM2's
    neighbours lowered by standardizing, and the decoders' standardized layers mostly
    without a plateau."""
    alignment = pd.read_csv(ROOT / CORRECTIONS[0], sep="\t")
    step = np.where(alignment["model_a"] == "minilm", 1, 3)
    adjacent = alignment[
        (alignment["model_a"] == alignment["model_b"])
        & (alignment["layer_b"] - alignment["layer_a"] == step)
        & (alignment["occurrences"] == "position>0")
    ].set_index(["model_a", "transform", "layer_b"])
    raw, centred = (adjacent.xs(name, level="transform") for name in ("none", "center"))
    assert centred["cka"].between(raw["cka_low"], raw["cka_high"]).all()
    sink = adjacent.loc[("smollm2", "center", 12)]
    for transform in ("drop_rogue", "standardize"):
        assert adjacent.loc[("smollm2", transform, 12), "cka_low"] > sink["cka_high"]
    moved = {
        measure: adjacent.loc[("smollm2", "drop_rogue", 12), measure] - sink[measure]
        for measure in ("cka", "mutual_knn")
    }
    assert 0 < moved["mutual_knn"] < moved["cka"]
    gemma = adjacent.loc["gemma3"]["mutual_knn"]
    for transform in ("drop_rogue", "standardize"):
        assert gemma[transform].min() > gemma["center"].min()
        assert gemma[transform].max() > gemma["center"].max()
    blocks = adjacent.loc["smollm2"]["mutual_knn"].unstack("transform").loc[6:21]
    assert (blocks["standardize"] < blocks["center"]).all()
    measures = pd.read_csv(ROOT / CORRECTIONS[1], sep="\t")
    twonn = measures[measures["measure"] == "intrinsic_dimension[twonn]"]
    dimension = twonn.set_index(["model", "layer", "transform"])["raw"].unstack()
    assert (dimension["center"] - dimension["none"]).abs().idxmax() == ("smollm2", 24)
    minilm = dimension.loc["minilm"].loc[2:5]
    assert (minilm["standardize"] > minilm["center"]).all()
    decoders = dimension.loc[["smollm2", "gemma3"]]
    assert decoders["standardize"].isna().mean() > 0.5


def test_what_the_degeneration_page_says_of_the_corrections_holds():
    """docs/degeneration.md looks its numbers up in the published run of
    config/corrections.yaml; what it says of them must hold: the baseline falls under every
    correction but drop_rogue, adjusted SelfSim rises under center at every layer and
    under whiten leaves both intervals at every layer but 3, IsoScore* and its interval
    below IsoScore (closest at layer 1), the same three rogue dimensions in blocks 2-4
    carrying about half the expected cosine, the occurrence-norm ρ on both sides of 0 and
    the mean-vector ρ negative, neighbour distance rising bin by bin at every layer."""
    run = ROOT / "docs/results/corrections/tables"
    measures = pd.read_csv(run / "measures.tsv", sep="\t")
    measures = measures[measures["model"] == "minilm"]

    def wide(measure: str, column: str = "raw") -> pd.DataFrame:
        rows = measures[measures["measure"] == measure]
        return rows.pivot(index="layer", columns="transform", values=column)

    baseline = wide("anisotropy")
    removing = baseline[["center", "standardize", "abtt", "whiten"]]
    assert (removing.max(axis=1) < baseline["none"]).all()
    assert (baseline["drop_rogue"] > removing.max(axis=1)).all()
    adjusted, low, high = (
        wide("selfsim", c) for c in ("adjusted", "adjusted_low", "adjusted_high")
    )
    assert (adjusted["center"] > adjusted["none"]).all()
    overlapping = [
        layer
        for layer in adjusted.index
        if low.loc[layer, "whiten"] <= high.loc[layer, "none"]
        and low.loc[layer, "none"] <= high.loc[layer, "whiten"]
    ]
    assert overlapping == [3]
    isoscore, sampled_high = wide("isoscore")["none"], wide("isoscore*", "raw_high")["none"]
    assert (sampled_high < isoscore).all() and (isoscore - sampled_high).idxmin() == 1
    rogue = measures[(measures["measure"] == "rogue_share[3]") & (measures["transform"] == "none")]
    rogue = rogue.set_index("layer")
    assert rogue.loc[[2, 3, 4], "dimensions"].nunique() == 1
    assert rogue.loc[[2, 3, 4], "raw"].between(0.4, 0.6).all()
    occurrence_rho = wide("occurrence_norm~frequency")["none"]
    assert occurrence_rho.min() < 0 < occurrence_rho.max()
    assert (wide("norm~frequency")["none"] < 0).all()
    bins = pd.read_csv(run / "degeneration.tsv", sep="\t")
    bins = bins[
        (bins["transform"] == "none") & (bins["vectors"] == "occurrences") & (bins["n"] > 0)
    ]
    for _, layer in bins.groupby("layer"):
        assert layer.sort_values("rank_low")["knn_distance"].is_monotonic_increasing
        assert (
            layer.sort_values("rank_low")["n"].iloc[-1] < layer.sort_values("rank_low")["n"].iloc[0]
        )
    assert "configfile config/corrections.yaml` adds all five" in _page("degeneration.md")


def test_what_the_instruments_page_says_of_minilm_and_its_untrained_copy_holds():
    """docs/instruments.md looks these numbers up in the published run of config/full.yaml;
    what it says of them must hold: every calibrated score above 0 (every value above its
    null), the bootstrap's bias of linear CKA larger than the interval's half width at
    its largest, word identity nearer the embedding output than the last layer, the
    untrained copy's layers nearer each other than MiniLM's own, and its best matches
    decided by margins far inside the intervals."""
    run = ROOT / "docs/results/full/tables"
    table = pd.read_csv(run / "alignment.tsv", sep="\t")
    best = pd.read_csv(run / "best_layers.tsv", sep="\t")
    calibrated = table[[column for column in table if column.startswith("calibrated_")]]
    assert (calibrated > 0).all().all()
    every = table[table["occurrences"] == "all"]
    within = every[(every["model_a"] == "minilm") & (every["model_b"] == "minilm")]
    between = within[within["layer_a"] != within["layer_b"]]
    width = between["cka_debiased_high"] - between["cka_debiased_low"]
    assert within["bias_cka"].max() > width.median() / 2  # "would sit beside the value"
    word = every[(every["model_a"] == "minilm") & (every["model_b"] == "word_identity")]
    word = word.set_index("layer_a")
    for measure in ("cka_debiased", "mutual_knn"):
        assert word.loc[0, f"{measure}_low"] > word.loc[6, f"{measure}_high"]
    untrained = every[
        (every["model_a"] == "minilm-random")
        & (every["model_b"] == "minilm-random")
        & (every["layer_a"] != every["layer_b"])
    ]
    assert untrained["cka_debiased"].min() > between["cka_debiased"].median()
    chosen = best[
        (best["occurrences"] == "all")
        & (best["model"] == "minilm")
        & (best["other_model"] == "minilm-random")
        & (best["measure"] == "cka_debiased")
    ]
    assert (chosen["margin"] < (chosen["high"] - chosen["low"])).all()
    assert chosen["stays_best"].min() < 1 and (chosen["value"] > chosen["best_threshold"]).all()


def test_the_alignment_within_smollm2_is_the_same_in_the_two_runs_that_hold_it():
    """SmolLM2's alignment with itself in the published runs of config/families.yaml and
    config/instruments.yaml (the same rows, settings and seed) agree, so the two pages
    that read one or the other read one table."""
    measures = ["cka", "cka_debiased", "procrustes", "mutual_knn", "cknna"]
    for occurrences in ("all", "position>0"):
        families, instruments = (
            _pair(name, "smollm2", "smollm2", occurrences) for name in ("families", "instruments")
        )
        assert families.index.equals(instruments.index)
        assert np.abs(families[measures].to_numpy() - instruments[measures].to_numpy()).max() < 1e-3


def test_what_the_families_page_says_of_the_untrained_twin_holds():
    """docs/families.md looks the untrained twin up in the published families run; what it
    says must hold: its embedding output shares about as many neighbours with the word type
    as the trained one's, and from block 3 on its layers keep almost nothing of the word."""
    word = _pair("families", "smollm2-untrained", "word_identity", "all").droplevel("layer_b")
    trained = _pair("families", "smollm2", "word_identity", "all").droplevel("layer_b")
    assert abs(word.loc[0, "mutual_knn"] - trained.loc[0, "mutual_knn"]) < 0.02
    blocks = word.loc[3:]
    assert blocks["mutual_knn_high"].max() < 0.05 and blocks["cka_debiased_high"].max() < 0.05


def test_what_the_outputs_page_says_of_the_parity_check_holds():
    """outputs.md looks the parity check's differences, tolerances and cost up in the
    committed run (bench/results/parity-cpu.json); what it says of them must hold: each
    tolerance at least 8 times the largest difference seen in its precision, and at most a
    third of the smallest planted error; the check a small share of the extraction."""
    import json

    from contextuality.extraction.parity import PARITY_TOLERANCE

    run = json.loads((ROOT / "bench/results/parity-cpu.json").read_text())
    page = _page("outputs.md")
    correct = {
        row["dtype"]: row["max_relative_difference"]
        for row in run["differences"]
        if row["planted"] == "none"
    }
    planted = [
        (row["dtype"], float(row["refused"].split(" (a row by ")[1].split(" of its")[0]))
        for row in run["differences"]
        if row["planted"] != "none"
    ]
    assert set(correct) == set(PARITY_TOLERANCE) == {dtype for dtype, _ in planted}
    assert "each tolerance is 8 times the largest difference seen or more" in page
    assert min(PARITY_TOLERANCE[dtype] / value for dtype, value in correct.items()) >= 8
    assert "and a third of the smallest planted error or less" in page
    assert all(PARITY_TOLERANCE[dtype] <= value / 3 for dtype, value in planted)
    checked = [row for row in run["cost"] if row["parity_sentences"]]
    assert max(row["parity_seconds"] / row["extraction_seconds"] for row in checked) < 0.05


def test_the_readme_s_corpus_is_the_published_default_run_s():
    """README.md's sentences, occurrences and indexed words of the embedded default are
    the counts of its published run (docs/results/default/): the occurrences the
    anisotropy baseline is over, the sentences IntraSim averages, the words SelfSim does."""
    table = pd.read_csv(ROOT / "docs/results/default/tables/measures.tsv", sep="\t")
    counts = table[table["layer"] == 0].set_index("measure")["n"]
    written = (
        f"{counts['intrasim']:,} unique sentences, {counts['anisotropy']:,} word\n"
        f"occurrences, {counts['selfsim']:,} indexed words"
    )
    assert written in (ROOT / "README.md").read_text()
