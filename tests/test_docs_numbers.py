"""Numbers the docs quote, read from the committed files they cite."""

from __future__ import annotations

import math
import re
import subprocess
from itertools import pairwise
from pathlib import Path

import numpy as np
import pandas as pd
from test_docs_quotes import PAGES_NOT_YET_LOOKED_UP

from conftest import shipped

ROOT = Path(__file__).resolve().parents[1]


def _page(name: str) -> str:
    """A docs page with its line breaks and runs of spaces made single spaces."""
    return " ".join((ROOT / "docs" / name).read_text().split())


# Alignment tables of the published runs, by the name the tests give them.
PUBLISHED = {
    "instruments": "docs/results/instruments/tables/alignment.tsv",
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


def _adjacent(grid: pd.Series) -> pd.Series:
    """Within one model: each layer's CKA with the previous layer measured, by layer."""
    layers = sorted(grid.index.get_level_values(0).unique())
    return pd.Series({layer: grid[(before, layer)] for before, layer in pairwise(layers)})


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


def test_the_cka_between_families_quoted_in_the_families_page_is_the_families_run():
    """docs/families.md: past the first words, the embedding layers and MiniLM's layer 1
    against the other models' embeddings (each pair of models' best) with their intervals,
    Gemma-3's blocks against MiniLM's layers, SmolLM2's last layer and the width of its sink
    blocks' intervals, on bench/results/geometry-families-between.tsv."""
    page = _page("families.md")
    models = {"minilm": "MiniLM", "smollm2": "SmolLM2", "gemma3": "Gemma-3"}
    between = "geometry-families-between"
    grids = {(a, b): _pair(between, a, b, "position>0") for a in models for b in models if a != b}

    def with_interval(row: pd.Series) -> str:
        return _with_interval(row, places=2)

    embeddings = [
        f"of {models[b]} and {models[a]} {with_interval(grids[(a, b)].loc[(0, 0)])}"
        for a, b in (("gemma3", "smollm2"), ("gemma3", "minilm"), ("smollm2", "minilm"))
    ]
    layer_1 = [
        with_interval(grids[("minilm", other)].loc[(1, 0)]) for other in ("gemma3", "smollm2")
    ]
    for pair, grid in grids.items():
        assert max(grid["cka"].idxmax()) <= 1, pair  # the embedding layers, or MiniLM's layer 1
    gemma = grids[("gemma3", "minilm")].drop(index=0, level="layer_a")
    gemma_width = (gemma["cka_high"] - gemma["cka_low"]).max()
    last = grids[("smollm2", "gemma3")].loc[(30, 18)]
    assert grids[("smollm2", "gemma3")].loc[30]["cka"].idxmax() == 18
    quoted = (
        f"(the embedding layers {', '.join(embeddings)}; MiniLM's layer 1 a little more, "
        f"{layer_1[0]} and {layer_1[1]}); deeper, Gemma-3's blocks are {gemma['cka'].min():.2f} "
        f"to {gemma['cka'].max():.2f} from MiniLM's layers, each interval at most "
        f"{gemma_width:.3f} wide, and after the final norms SmolLM2's layer 30 is "
        f"{with_interval(last)} from Gemma-3's last"
    )
    assert quoted in page
    smollm2 = pd.concat([grids[("smollm2", other)] for other in ("minilm", "gemma3")])
    blocks = smollm2.index.get_level_values("layer_a")
    sink = smollm2[(blocks >= 12) & (blocks <= 27)]
    others = pd.concat([smollm2[(blocks < 12) | (blocks > 27)], grids[("minilm", "gemma3")]])
    width = sink["cka_high"] - sink["cka_low"]
    assert f"intervals are {width.min():.3f} to {width.max():.3f} wide" in page
    widest = grids[("smollm2", "minilm")].loc[(18, 3)]
    assert f"(block 18 against MiniLM's layer 3: {with_interval(widest)})" in page
    assert f"at most {(others['cka_high'] - others['cka_low']).max():.3f}" in page
    knn = (sink["mutual_knn_high"] - sink["mutual_knn_low"]).max()
    assert f"mutual k-NN's on the same rows at most {knn:.3f}" in page
    census = _instruments("massive_activations").set_index(["model", "transform", "layer"])
    sink_row = census.loc[("smollm2", "none", 12)].set_index("dimension").loc[507]
    later = sink_row["n_occurrences"] * (1 - sink_row["share_first_word"])
    assert round(later) == 10 and "on ten occurrences past a first" in page
    assert f"({sink_row['n_occurrences']:,} at block 12, " in page


def test_the_word_baselines_of_the_families_quoted_in_the_families_page():
    """docs/families.md: the embedding layers against each other and against the word type
    on every occurrence, SmolLM2's sink blocks against word and position, and the earlier
    table's distance from this one, on bench/results/geometry-families-between.tsv."""
    page = _page("families.md")
    between = "geometry-families-between"

    def value(model_a: str, layer: int, model_b: str, layer_b: int, measure: str) -> str:
        return _with_interval(
            _pair(between, model_a, model_b, "all").loc[(layer, layer_b)], measure
        )

    words = [value(model, 0, "word_identity", 0, "mutual_knn") for model in ("smollm2", "gemma3")]
    quoted = (
        f"embedding layers share {value('smollm2', 0, 'gemma3', 0, 'mutual_knn')} of their ten "
        f"nearest neighbours, and each shares {words[0]} and {words[1]} with the one-hot word type"
    )
    assert quoted in page
    assert (
        f"the two agree {value('smollm2', 0, 'gemma3', 0, 'cka')}, each "
        f"{value('smollm2', 0, 'word_identity', 0, 'cka')} and "
        f"{value('gemma3', 0, 'word_identity', 0, 'cka')} with the word type"
    ) in page
    sink = list(range(12, 28, 3))
    position, word = (
        _pair(between, "smollm2", baseline, "all").loc[(sink, 0), "cka_debiased"]
        for baseline in ("word_position", "word_identity")
    )
    best = pd.read_csv(ROOT / "bench/results/geometry-families-best_layers.tsv", sep="\t")
    best = best[(best["occurrences"] == "all") & (best["measure"] == "cka_debiased")]
    best = best[(best["model"] == "smollm2") & best["layer"].isin(sink)]
    matches = best.groupby("other_model")["value"]
    assert (position.min() > matches.max()).all()
    assert f"reach a debiased CKA of {position.mean():.3f} (the word alone {word.mean():.3f};" in (
        page
    )
    assert position.max() - position.min() < 1e-3 and word.max() - word.min() < 1e-3

    def spanned(rows: pd.DataFrame, low: str, high: str) -> str:
        return f"{rows[low].min():.3f}–{rows[high].max():.3f}"

    position_rows, word_rows = (
        _pair(between, "smollm2", baseline, "all").droplevel("layer_b").loc[sink]
        for baseline in ("word_position", "word_identity")
    )
    low, high = "cka_debiased_low", "cka_debiased_high"
    in_gemma, in_minilm = (
        spanned(best[best["other_model"] == other], "low", "high") for other in ("gemma3", "minilm")
    )
    assert (
        f"their intervals lie within {spanned(position_rows, low, high)} and "
        f"{spanned(word_rows, low, high)}), above their best match in Gemma-3 "
        f"({matches.mean()['gemma3']:.3f}, within {in_gemma}) or MiniLM "
        f"({matches.mean()['minilm']:.3f}, within {in_minilm}) by whole intervals"
    ) in page
    assert position_rows[low].min() > best["high"].max()
    pairs = [("minilm", "smollm2"), ("minilm", "gemma3"), ("smollm2", "gemma3")]
    apart = {}
    for occurrences in ("all", "position>0"):
        now, before = (
            pd.concat([_pair(name, a, b, occurrences) for a, b in pairs])
            for name in (between, "geometry-families-alignment")
        )
        assert now.index.equals(before.index)
        measures = ["cka", "cka_debiased", "procrustes", "mutual_knn", "cknna"]
        difference = np.abs(now[measures].to_numpy() - before[measures].to_numpy())
        apart[occurrences] = pd.Series(difference.max(axis=0), index=measures)
    every = pd.concat(apart.values(), axis=1).max(axis=1)
    assert every[["cka", "cka_debiased", "procrustes"]].max() < 1.3e-5
    assert apart["position>0"][["mutual_knn", "cknna"]].max() < 1e-4
    assert every[["mutual_knn", "cknna"]].max() < 0.0026
    assert "within 1.3e-5 for CKA and Procrustes" in page
    assert "within 1e-4 past the first words and 0.0026 on every occurrence" in page


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


def test_the_geometry_under_the_corrections_quoted_in_instruments():
    """docs/instruments.md's CKA between consecutive layers past the first words and
    intrinsic dimensions under each correction, on bench/results/geometry-corrections-*.tsv."""
    page = _page("instruments.md")
    alignment = pd.read_csv(ROOT / "bench/results/geometry-corrections-alignment.tsv", sep="\t")
    later = alignment[alignment["occurrences"] == "position>0"]
    cka = later.set_index(["model_a", "model_b", "transform", "layer_a", "layer_b"])["cka"]
    for transform, quoted in (
        ("center", "0.041"),
        ("drop_rogue", "0.882"),
        ("standardize", "0.617"),
    ):
        assert f"{cka['smollm2', 'smollm2', transform, 9, 12]:.3f}" == quoted
        assert quoted in page
    assert f"{cka['smollm2', 'smollm2', 'drop_rogue', 0, 3]:.3f}" == "0.708" and "0.708" in page
    raw, centred = (
        _adjacent(
            later[(later["model_a"] == "smollm2") & (later["transform"] == name)].set_index(
                ["layer_a", "layer_b"]
            )["cka"]
        )
        for name in ("none", "center")
    )
    assert f"{(raw - centred).abs().max():.3f}" == "0.023"  # the smaller sample alone
    _check_the_adjacent_intervals(page, alignment)
    measures = pd.read_csv(ROOT / "bench/results/geometry-corrections-measures.tsv", sep="\t")
    twonn = measures[measures["measure"] == "intrinsic_dimension[twonn]"]
    dimension = twonn.set_index(["model", "transform", "layer"])["raw"]
    assert f"{dimension['smollm2', 'none', 24]:.2f}, {dimension['smollm2', 'center', 24]:.2f}" == (
        "11.45, 14.52"
    )
    assert "11.45 on the whole sample, 14.52 on four fifths of it" in page
    assert (
        f"{dimension['minilm', 'standardize', 4]:.2f}" == "10.73" and "10.73 against 9.46" in page
    )


def _check_the_adjacent_intervals(page: str, first_run: pd.DataFrame) -> None:
    """docs/instruments.md's consecutive layers under the corrections with their intervals,
    on bench/results/geometry-corrections-adjacent.tsv, within 2e-4 of the first run."""
    adjacent = pd.read_csv(ROOT / "bench/results/geometry-corrections-adjacent.tsv", sep="\t")
    keys = ["model_a", "layer_a", "model_b", "layer_b", "transform", "occurrences"]
    both = adjacent.merge(first_run, on=keys, suffixes=("", "_first"))
    assert len(both) == len(adjacent) == (6 + 10 + 6) * 4  # adjacent pairs × transforms
    for measure in ("cka", "cka_debiased", "procrustes", "mutual_knn", "cknna"):
        assert (both[measure] - both[f"{measure}_first"]).abs().max() < 2e-4, measure
    rows = adjacent.set_index(["model_a", "transform", "layer_b"]).sort_index()

    def quoted(model: str, transform: str, layer: int, measure: str = "cka") -> str:
        row = rows.loc[(model, transform, layer)]
        low, high = row[f"{measure}_low"], row[f"{measure}_high"]
        return f"{row[measure]:.3f} ({low:.3f}–{high:.3f})"

    sink = rows.loc[("smollm2", "center", 12)]
    assert f"0.041 with block 9 (`center`), an interval of {sink['cka_low']:.3f}–" in page
    assert f"{sink['cka_high']:.3f} that says how little" in page
    assert f"dimensions, {quoted('smollm2', 'drop_rogue', 12)}, and standardized" in page
    assert f"standardized {quoted('smollm2', 'standardize', 12)}, both clear" in page
    for transform in ("drop_rogue", "standardize"):
        assert rows.loc[("smollm2", transform, 12), "cka_low"] > sink["cka_high"]
    assert f"embeddings: {quoted('smollm2', 'center', 3)}, then" in page
    assert f"then {quoted('smollm2', 'drop_rogue', 3)}" in page
    assert f"block 9 under `center` and {quoted('smollm2', 'drop_rogue', 12, 'mutual_knn')}" in page
    assert f"keeps {quoted('smollm2', 'center', 12, 'mutual_knn')} of its neighbours" in page

    def widest(model: str, measure: str, transforms: tuple[str, ...], layers=None) -> float:
        chosen = rows.loc[model]
        chosen = chosen[chosen.index.get_level_values("transform").isin(transforms)]
        if layers is not None:
            chosen = chosen[chosen.index.get_level_values("layer_b").isin(layers)]
        return (chosen[f"{measure}_high"] - chosen[f"{measure}_low"]).max()

    gemma = widest("gemma3", "cka", ("none", "drop_rogue", "standardize"))
    assert f"0.62 to 0.80 standardized, each interval at most {gemma:.3f} wide" in page
    minilm = widest("minilm", "cka", ("none", "drop_rogue", "standardize"), range(1, 6))
    assert f"they fall to 0.75 to 0.91 (intervals at most {minilm:.3f} wide)" in page
    neighbours = max(
        widest("gemma3", "mutual_knn", ("center", "drop_rogue", "standardize")),
        widest("smollm2", "mutual_knn", ("center", "standardize"), range(6, 22)),
    )
    assert f"each of these intervals is at most {neighbours:.3f} wide" in page
    raw, centred = (rows.loc[("smollm2", name)] for name in ("none", "center"))
    assert ((centred["cka"] >= raw["cka_low"]) & (centred["cka"] <= raw["cka_high"])).all()
    assert "each `center` value inside the raw value's interval" in page


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


# Where a measured number the docs quote must be found: the committed results (the runs
# published under docs/results/ among them) and the tables, configs and data the package
# ships.
_SOURCES = (
    "bench/results/",
    "bench/gpu/expected/",
    "docs/results/",
    "src/contextuality/data/",
    "config/",
)
# Numbers in the docs that are not measurements, by page: what each is.
_NOT_MEASURED = {
    "instruments.md": {"640": "Gemma-3-270M's hidden width (the model's configuration)"},
    "families.md": {"640": "Gemma-3-270M's hidden width (the model's configuration)"},
}
_NUMBER = re.compile(r"(?<![\w.,/])(?<!arXiv:)(\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+\.\d+|\d+)(?![\w/])")


def _committed_numbers() -> set[str]:
    """Every number in the committed sources, as written and rounded the ways the docs
    round: to 0–4 decimals, as a percentage to 0–2, and to tens, hundreds and thousands."""
    tracked = subprocess.run(
        ["git", "ls-files", *_SOURCES], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    found: set[str] = set()
    for name in tracked:
        if name.endswith((".png", ".pdf", ".h5")):
            continue
        # A config as the repository ships it: a user's edits are their study.
        source = shipped(ROOT / name) if name.startswith("config/") else (ROOT / name).read_text()
        tokens = re.findall(r"-?\d[\d,]*\.?\d*(?:[eE]-?\d+)?", source)
        # "223,157,338": one number with thousands separators, or a list of three.
        parts = [part for token in tokens for part in [token, *token.split(",")] if part]
        for written in parts:
            text = written.replace(",", "").rstrip(".")
            try:
                value = abs(float(text))
            except ValueError:
                continue
            if not math.isfinite(value):
                continue
            found.add(text.lstrip("-"))
            found.update(f"{value:.{places}f}" for places in range(5))
            found.update(f"{100 * value:.{places}f}" for places in range(3))
            found.update(str(int(round(value, -power))) for power in (1, 2, 3))
    return found


def _unfound(text: str, marked: dict[str, str], committed: set[str]) -> list[str]:
    """The numbers of `text` neither in `committed` (as `_committed_numbers` writes them)
    nor `marked`, nor a year (1990–2030, a citation's)."""
    unfound = []
    for match in _NUMBER.finditer(text):
        written = match.group(1)
        plain = written.replace(",", "")
        if written in marked or plain in committed:
            continue
        if not re.fullmatch(r"(199\d|20[0-2]\d|2030)", plain):
            unfound.append(written)
    return unfound


def test_every_number_the_docs_quote_is_in_a_committed_file_or_marked():
    """A number in the pages that still type results (`PAGES_NOT_YET_LOOKED_UP`; the others
    look theirs up, test_docs_quotes.py) that no committed result, table or config holds
    (as written, or rounded as the docs round) fails, unless `_NOT_MEASURED` says what it
    is. The check itself finds a made-up number, and a rounded one only at the precision
    it is written."""
    committed = _committed_numbers()
    made_up = "a share of 0.98765, 12,345,679 rows (Author 2019, arXiv:1905.12345), 0.3 and 20,900"
    assert _unfound(made_up, {}, committed | {"0.3", "20900"}) == ["0.98765", "12,345,679"]
    unfound = []
    pending = [ROOT / "docs" / name for name in sorted(PAGES_NOT_YET_LOOKED_UP)]
    for page in pending:
        marked = _NOT_MEASURED.get(page.name, {})
        unfound += [f"{page.name}: {n}" for n in _unfound(page.read_text(), marked, committed)]
    assert not unfound, unfound


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


def test_the_alignment_within_smollm2_of_the_families_rerun_is_the_published_run_s():
    """SmolLM2's alignment with itself in bench/results/geometry-families-within.tsv (the
    families' rerun with intervals, which the instruments page still quotes for the twin)
    and in the published instruments run, which docs/geometry.md looks up, agree."""
    measures = ["cka", "cka_debiased", "procrustes", "mutual_knn", "cknna"]
    for occurrences in ("all", "position>0"):
        rerun, published = (
            _pair(name, "smollm2", "smollm2", occurrences)
            for name in ("geometry-families-within", "instruments")
        )
        assert rerun.index.equals(published.index)
        assert np.abs(rerun[measures].to_numpy() - published[measures].to_numpy()).max() < 1e-3


def test_the_untrained_twins_word_baseline_quoted_in_the_families_page():
    """docs/families.md: SmolLM2's untrained twin against the word type, on
    bench/results/geometry-families-within.tsv."""
    word = _pair("geometry-families-within", "smollm2-untrained", "word_identity", "all")
    word = word.droplevel("layer_b")
    embedding, blocks = word.loc[0], word.loc[3:]
    page = _page("families.md")
    assert f"output shares {_with_interval(embedding, 'mutual_knn')} of its neighbours" in page
    assert f"at a debiased CKA of {_with_interval(embedding, 'cka_debiased')}" in page
    assert (
        f"(mutual k-NN at most {blocks['mutual_knn'].max():.3f}, debiased CKA at most "
        f"{blocks['cka_debiased'].max():.3f}; their intervals' tops "
        f"{blocks['mutual_knn_high'].max():.3f} and {blocks['cka_debiased_high'].max():.3f})"
    ) in page


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
