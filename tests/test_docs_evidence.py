"""Numbers docs/evidence.md quotes, read from the committed tables of the runs it cites
(`bench/results/{embedding-matrices,ablation-effects,downstream,early-steps}*.tsv`)."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from contextuality.catalogue import quotes
from contextuality.measures.downstream import TaskScores, layer_agreement, task_scores

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"


def _page() -> str:
    """docs/evidence.md with its line breaks and runs of spaces made single spaces."""
    return " ".join((ROOT / "docs" / "evidence.md").read_text().split())


def _table(name: str) -> pd.DataFrame:
    return pd.read_csv(RESULTS / f"{name}.tsv", sep="\t")


def _signed(value: float) -> str:
    """A value as the page writes it: three decimals, a minus sign for a negative one."""
    return f"{value:.3f}".replace("-", "−")


def test_the_embedding_matrices_quoted_are_the_committed_run():
    page = _page()
    matrices = _table("embedding-matrices").set_index(["model", "frequency_corpus"])
    norms = _table("embedding-matrices-norms")
    norms = norms[norms["frequency_corpus"] == "sts-2012-2016"].set_index(["model", "bin"])
    smollm2, gemma3, minilm = (matrices.loc[(m, "lee-background")] for m in MODELS)
    sts = {m: matrices.loc[(m, "sts-2012-2016")] for m in MODELS}
    for expected in (
        f"Its {int(smollm2['n_rows']):,} rows have an anisotropy of {smollm2['anisotropy']:.3f}",
        f"holds {smollm2['top_singular_share']:.3f} of the squared total "
        f"({smollm2['top_singular_share_centered']:.3f} once the mean row is removed",
        f"IsoScore {smollm2['isoscore']:.3f}",
        f"(ρ = {_signed(smollm2['norm_frequency_spearman'])} over the Lee corpus's tokens, "
        f"{_signed(sts['smollm2']['norm_frequency_spearman'])} over the STS sentences')",
        f"rises from {_signed(norms.loc[('smollm2', '1–100'), 'cone_cosine'])} for the 100 most "
        f"frequent STS tokens to {norms.loc[('smollm2', '10,001+'), 'cone_cosine']:.3f} past "
        f"rank 10,000 and {norms.loc[('smollm2', 'unseen'), 'cone_cosine']:.3f} for the "
        f"{int(norms.loc[('smollm2', 'unseen'), 'n_tokens']):,} tokens",
        f"is anisotropic too ({gemma3['anisotropy']:.3f})",
        f"({norms.loc[('gemma3', '1–100'), 'cone_cosine']:.3f} to "
        f"{norms.loc[('gemma3', 'unseen'), 'cone_cosine']:.3f} over the STS bins)",
        f"({gemma3['mean_norm']:.3f} in every bin)",
        f"(ρ = {_signed(gemma3['norm_frequency_spearman'])} and "
        f"{_signed(sts['gemma3']['norm_frequency_spearman'])})",
        f"anisotropy {minilm['anisotropy']:.3f}, IsoScore {minilm['isoscore']:.3f}, no singular "
        f"direction above {minilm['top_singular_share']:.3f}",
        f"Its norms rise with frequency (ρ = {minilm['norm_frequency_spearman']:.3f} and "
        f"{sts['minilm']['norm_frequency_spearman']:.3f})",
        f"rows ({norms.loc[('minilm', 'unseen'), 'mean_norm']:.3f} against "
        f"{norms.loc[('minilm', '1–100'), 'mean_norm']:.3f} to "
        f"{norms.loc[('minilm', '101–1,000'), 'mean_norm']:.3f} for the seen bins)",
        f"against {smollm2['anisotropy_seen']:.3f} for the rows of the tokens that corpus uses",
        f"Gemma-3's reads {_layer_zero('gemma3'):.3f} against {gemma3['anisotropy_seen']:.3f}",
        f"SmolLM2's has an anisotropy of {_layer_zero('smollm2'):.3f} over",
        f"a normalization: {_layer_zero('minilm'):.3f} against {minilm['anisotropy_seen']:.3f}",
    ):
        assert expected in page, expected
    seen_bins = norms.loc["gemma3", "mean_norm"]
    assert f"{seen_bins.min():.3f}" == f"{seen_bins.max():.3f}" == f"{gemma3['mean_norm']:.3f}"
    assert set(matrices["matrix"]) == {"input"} and set(matrices["layer"]) == {"embedding matrix"}


MODELS = ("smollm2", "gemma3", "minilm")


def _layer_zero(model: str) -> float:
    """The raw anisotropy of `model`'s layer 0 over the Lee corpus's occurrences
    (`bench/results/instruments-measures.tsv`)."""
    rows = _table("instruments-measures")
    chosen = rows[
        (rows["model"] == model)
        & (rows["transform"] == "none")
        & (rows["layer"] == 0)
        & (rows["measure"] == "anisotropy")
    ]
    return float(chosen["raw"].iloc[0])


def _perplexity(model: str, condition: str) -> pd.Series:
    rows = _table("ablation-effects-perplexity")
    return rows[(rows["model"] == model) & (rows["condition"] == condition)].iloc[0]


def _first_token_share(model: str, condition: str) -> pd.Series:
    """The first-token share by block, mean over heads."""
    rows = _table("ablation-effects-attention")
    rows = rows[(rows["model"] == model) & (rows["condition"] == condition)]
    return rows.groupby("block")["first_token_share"].mean()


def test_the_perplexity_under_the_ablation_quoted_is_the_committed_run():
    page = _page()
    none, zero, mean, mean_all = (
        _perplexity("smollm2", c)
        for c in ("none", "zero at block", "mean at block", "mean at every block")
    )
    assert int(zero["detection_block"]) == 12
    for expected in (
        f"{none['perplexity']:.2f} without intervention ({none['low']:.2f}–{none['high']:.2f})",
        f"its {int(zero['replaced'])} massive activations take the perplexity to "
        f"{zero['perplexity'] / 1e6:.2f} million, {zero['ratio_to_none']:,.0f} times as high",
        f"to {mean['perplexity']:.2f}, a ratio of {mean['ratio_to_none']:.4f} "
        f"({mean['ratio_low']:.4f}–{mean['ratio_high']:.4f})",
        f"the ratio is {mean_all['ratio_to_none']:.3f} ({mean_all['ratio_low']:.3f}–"
        f"{mean_all['ratio_high']:.3f})",
        f"({int(mean_all['replaced']):,} in all)",
    ):
        assert expected in page, expected
    none, zero, mean, zero_all, mean_all = (
        _perplexity("gemma3", c)
        for c in (
            "none",
            "zero at block",
            "mean at block",
            "zero at every block",
            "mean at every block",
        )
    )
    assert int(zero["detection_block"]) == 1
    for expected in (
        f"perplexity {none['perplexity']:.2f} ({none['low']:.2f}–{none['high']:.2f}) without",
        f"Zeroed there, {zero['perplexity']:.2f}, a ratio of {zero['ratio_to_none']:.3f} "
        f"({zero['ratio_low']:.3f}–{zero['ratio_high']:.3f}); set to the mean, "
        f"{mean['ratio_to_none']:.3f} ({mean['ratio_low']:.3f}–{mean['ratio_high']:.3f})",
        f"Zeroed at every block, {zero_all['perplexity']:.2f} (×{zero_all['ratio_to_none']:.3f})",
        f"mean at every block {mean_all['perplexity']:.2f} (×{mean_all['ratio_to_none']:.3f}, "
        f"{mean_all['ratio_low']:.3f}–{mean_all['ratio_high']:.3f})",
        f"({int(mean_all['replaced']):,} replaced;",
    ):
        assert expected in page, expected


def test_the_attention_under_the_ablation_quoted_is_the_committed_run():
    page = _page()
    none = _first_token_share("smollm2", "none")
    zero = _first_token_share("smollm2", "zero at block")
    mean = _first_token_share("smollm2", "mean at block")
    assert none.loc[4:10].between(0.49, 0.57).all()
    for expected in (
        f"from block 4 ({none[4]:.3f}) to block 10 ({none[10]:.3f})",
        f"and {none.loc[13:].min():.2f} to {none.loc[13:].max():.2f} of it from block 13 on",
        f"look elsewhere ({none[11]:.3f} and {none[12]:.3f})",
        f"(block 13: {zero[13]:.3f} instead of {none[13]:.3f}; block 29: {zero[29]:.3f} "
        f"instead of {none[29]:.3f})",
    ):
        assert expected in page, expected
    assert (mean - none).abs().max() <= 0.01
    gemma = _first_token_share("gemma3", "none")
    rows = _table("ablation-effects-attention")
    after_first = rows[(rows["model"] == "gemma3") & (rows["condition"] == "none")]
    after_first = after_first.groupby("block")["massive_after_first_share"].mean()
    assert (
        f"draws {gemma.min():.2f} to {gemma.max():.2f} of the attention from block 1 on, and "
        f"the massive tokens after it at most {after_first.max():.3f}"
    ) in page
    assert (rows["attention_weights"] == "returned").all()


def _scores(pooling: str) -> pd.Series:
    rows = _table("downstream")
    rows = rows[rows["pooling"] == pooling]
    return rows.set_index(["model", "layer"])["spearman"]


def test_the_sts_scores_by_layer_say_what_the_committed_run_shows():
    """The section's numbers are looked up (`catalogue.quotes`); what its sentences claim
    of them holds: MiniLM best at its last layer, Gemma-3 at an intermediate block above
    its last, SmolLM2 at block 1 and below block 11 from block 12 until its last, and
    MiniLM's and Gemma-3's best layers the same past the first token."""
    mean, past_first = _scores("mean"), _scores("past_first")
    last = _table("downstream").groupby("model")["n_layers"].first()
    assert mean["minilm"].idxmax() == last["minilm"]
    assert 0 < mean["gemma3"].idxmax() < last["gemma3"]
    assert mean["smollm2"].idxmax() == 1
    sink = mean["smollm2"].loc[12 : last["smollm2"] - 1]
    assert sink.max() < mean[("smollm2", 11)] and sink.max() < mean[("smollm2", last["smollm2"])]
    assert past_first["smollm2"].loc[12:29].min() > sink.max()
    for model in ("minilm", "gemma3"):
        assert mean[model].idxmax() == past_first[model].idxmax()


def test_the_agreement_of_the_geometry_with_the_sts_score_says_what_the_run_shows():
    """The directions and significance the section states: for MiniLM prompt entropy alone
    at p < 0.05, inversely; for Gemma-3 none with every token pooled and curvature past
    the first token; for SmolLM2 the listed measures at p < 0.05 in the stated directions,
    prompt entropy and effective rank alike."""
    rows = _table("downstream-agreement").set_index(["model", "pooling", "measure"]).sort_index()
    minilm = rows.loc[("minilm", "mean")]
    assert (
        minilm.loc["prompt entropy", "rho"] < 0 and minilm.loc["prompt entropy", "p_value"] < 0.05
    )
    assert (minilm.drop("prompt entropy")["p_value"] >= 0.05).all()
    assert (rows.loc[("gemma3", "mean")]["p_value"].dropna() >= 0.05).all()
    assert rows.loc[("gemma3", "past_first", "curvature"), "p_value"] < 0.05
    rising = ("matrix entropy", "prompt entropy", "effective rank", "adjusted SelfSim")
    stated = {
        "mean": {**dict.fromkeys(rising, 1), "anisotropy": -1, "curvature": -1},
        "past_first": dict.fromkeys(rising[:3], -1),
    }
    for pooling, directions in stated.items():
        for measure, sign in directions.items():
            row = rows.loc[("smollm2", pooling, measure)]
            assert np.sign(row["rho"]) == sign and row["p_value"] < 0.05, (pooling, measure)
        assert rows.loc[("smollm2", pooling, "prompt entropy"), "rho"] == pytest.approx(
            rows.loc[("smollm2", pooling, "effective rank"), "rho"]
        )


def test_the_critical_rank_correlation_over_seven_layers_quoted_is_exact():
    """With 7 layers, |ρ| = 0.786 is the smallest that reaches p < 0.05 over every
    ordering: an ordering of that ρ has p < 0.05, one of the next smaller (0.750) not."""
    gold = np.arange(40.0)
    scores = task_scores({layer: gold + layer for layer in range(7)}, gold, 1, _rng())
    scores = TaskScores(scores.table.assign(spearman=np.arange(7.0)), scores.draws)
    orders = np.array(list(itertools.permutations(range(7))), dtype=float)
    rhos = 1 - 6 * ((orders - np.arange(7)) ** 2).sum(axis=1) / (7 * 48)
    p_values = {}
    for rho in (0.75, 0.7857142857142857):
        order = orders[np.isclose(rhos, rho)][0]
        p_values[round(rho, 3)] = layer_agreement(order, scores, _rng())["p_value"]
    assert p_values[0.786] < 0.05 <= p_values[0.75]
    assert quotes.smallest_significant_rho(7) == "0.786"


def _rng() -> np.random.Generator:
    return np.random.default_rng(0)


def _events(kind: str) -> pd.DataFrame:
    rows = _table("early-steps-events")
    return rows[(rows["kind"] == kind)].set_index(["seed", "warmup", "layer"]).sort_index()


def _cells(values: list[float], places: str) -> str:
    """Three values as the page's table writes them: ' / '-joined, no leading zero."""
    return " / ".join(_short(value, places) for value in values)


def _short(value: float, places: str) -> str:
    if places == "int":
        return f"{int(value)}"
    return f"{value:.{places}f}".replace("0.", ".", 1).replace("-", "−")


def test_the_early_steps_quoted_are_the_committed_run():
    page = _page()
    for kind, label in (("gpt2", "GPT-2"), ("bert", "BERT")):
        events = _events(kind)
        for seed in (0, 1, 2):
            rows = events.xs((seed, 4), level=("seed", "layer"))
            cells = [
                _cells(rows["unigram_crossing"].tolist(), "int"),
                _cells(rows["peak_anisotropy"].tolist(), "3"),
                _cells(rows["peak_step"].tolist(), "int"),
                _cells(rows["cos_mean_unigram_at_peak"].tolist(), "2"),
            ]
            row = f"| {label} | {seed} | " + " | ".join(cells) + " |"
            assert row in page, row
        assert (events["peak_step"] < events["unigram_crossing"]).loc[:, :, [1, 2, 3, 4]].all()
        after_end = events["peak_step"] > events["warmup_end"]
        blocks = after_end.loc[:, :, [1, 2, 3, 4]]
        assert blocks.xs(10, level="warmup").all() and not blocks.xs(200, level="warmup").any()
    gpt2 = _events("gpt2").xs(4, level="layer")
    cosines = gpt2["cos_mean_unigram_at_peak"]
    assert f"{cosines.min():.2f}".lstrip("0") == ".95" and f"{cosines.max():.2f}" == "0.98"
    peaks = gpt2["peak_step"].unstack("warmup")
    first, second, third = peaks[200] / peaks[10]
    assert f"the peak's ×{first:.1f}, ×{second:.1f} and ×{third:.1f})" in page


def test_the_sweep_s_embedding_matrices_quoted_are_the_committed_run():
    page = _page()
    rows = _table("sweep-embedding-matrices").set_index(["kind", "step"])
    norms = _table("sweep-embedding-matrices-norms").set_index(["kind", "step", "bin"])
    gpt2, bert = rows.loc["gpt2"], rows.loc["bert"]
    assert f"{gpt2.loc[0, 'anisotropy']:.3f}" == f"{bert.loc[0, 'anisotropy']:.3f}" == "0.000"

    def cone(kind: str, step: int, bin_: str) -> str:
        return _signed(norms.loc[(kind, step, bin_), "cone_cosine"])

    for expected in (
        f"IsoScore {gpt2.loc[0, 'isoscore']:.3f})",
        f"GPT-2's anisotropy is {gpt2.loc[50, 'anisotropy']:.3f} at step 50 and "
        f"{gpt2.loc[200, 'anisotropy']:.3f} at step 200, BERT's "
        f"{bert.loc[50, 'anisotropy']:.3f} and {bert.loc[200, 'anisotropy']:.3f}",
        f"(ρ = {_signed(gpt2.loc[200, 'norm_frequency_spearman'])} and "
        f"{_signed(bert.loc[200, 'norm_frequency_spearman'])} at step 200)",
        f"(cone cosine {cone('gpt2', 200, 'unseen')} and {cone('bert', 200, 'unseen')}, "
        f"against {cone('gpt2', 200, '1–100')} and {cone('bert', 200, '1–100')} for the 100",
        f"(anisotropy {gpt2.loc[2000, 'anisotropy']:.3f} and {bert.loc[2000, 'anisotropy']:.3f}, "
        f"ρ = {_signed(gpt2.loc[2000, 'norm_frequency_spearman'])} and "
        f"{_signed(bert.loc[2000, 'norm_frequency_spearman'])})",
        f"still in the cone ({cone('gpt2', 2000, 'unseen')} and {cone('bert', 2000, 'unseen')})",
    ):
        assert expected in page, expected
    assert abs(gpt2.loc[0, "isoscore"] - bert.loc[0, "isoscore"]) < 5e-4
    assert rows["tied"].all()


def test_the_rogue_dimensions_share_of_smollm2_s_entropy_fall_is_what_the_page_says():
    """docs/instruments.md: of SmolLM2's fall in dataset entropy from block 9 to block 12,
    the three rogue dimensions' own share (the raw fall less the fall without them) is
    about half, neither most nor little of it."""
    rows = _table("instruments-measures")
    entropy = rows[(rows["model"] == "smollm2") & (rows["measure"] == "dataset_entropy")]
    by = entropy.set_index(["transform", "layer"])["raw"]
    raw_fall = by[("none", 9)] - by[("none", 12)]
    remaining_fall = by[("drop_rogue", 9)] - by[("drop_rogue", 12)]
    rogue_share = 1 - remaining_fall / raw_fall
    assert 0.4 <= rogue_share <= 0.6
    page = " ".join((ROOT / "docs" / "instruments.md").read_text().split())
    assert "About half of that fall is the rogue dimensions' own" in page
    assert f"fall {remaining_fall:.2f} nats to block 12" in page
    shown_fall = round(by[("none", 9)], 2) - round(by[("none", 12)], 2)  # of the values shown
    assert f"raw fall of {shown_fall:.2f}" in page

