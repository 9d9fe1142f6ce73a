"""What docs/evidence.md says of the numbers it quotes, checked in the committed tables of
the published runs it cites (config/instruments.yaml's, config/training.yaml's and
config/early_steps.yaml's)."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pandas as pd
from test_docs_training import with_checkpoints

from contextuality.catalogue import quotes
from contextuality.measures.downstream import TaskScores, layer_agreement, task_scores

ROOT = Path(__file__).resolve().parents[1]


def _page() -> str:
    """docs/evidence.md with its line breaks and runs of spaces made single spaces."""
    return " ".join((ROOT / "docs" / "evidence.md").read_text().split())


# The published run of config/instruments.yaml, whose tables the page quotes.
INSTRUMENTS = ROOT / "docs/results/instruments/tables"


def _published(name: str) -> pd.DataFrame:
    return pd.read_csv(INSTRUMENTS / f"{name}.tsv", sep="\t")


def _signed(value: float) -> str:
    """A value as the page writes it: three decimals, a minus sign for a negative one."""
    return f"{value:.3f}".replace("-", "−")


def test_the_embedding_matrices_section_s_claims_hold_in_its_tables():
    """docs/evidence.md looks its numbers up; what it says of them must hold: SmolLM2's
    rows the narrowest cone, mostly the shared mean, norm falling with frequency in both
    corpora and the cone deepening bin by bin to the unseen tokens; Gemma-3's cone
    deepening too while its bins' mean norms agree to three decimals; MiniLM near
    isotropic, norm rising with frequency, its unseen rows the shortest."""
    matrices = _published("embedding_matrices").set_index(["model", "frequency_corpus"])
    norms = _published("embedding_matrix_norms")
    norms = norms[norms["frequency_corpus"] == "sts-2012-2016"].set_index(["model", "bin"])
    bins = ["1–100", "101–1,000", "1,001–10,000", "10,001+", "unseen"]
    smollm2, gemma3, minilm = (matrices.loc[(m, "lee-background")] for m in MODELS)
    for model in ("smollm2", "gemma3"):
        assert norms.loc[model].loc[bins, "cone_cosine"].is_monotonic_increasing, model
    assert smollm2["anisotropy"] > gemma3["anisotropy"] > minilm["anisotropy"]
    assert smollm2["top_singular_share_centered"] < smollm2["top_singular_share"] / 2
    assert minilm["top_singular_share"] < 0.05 and minilm["isoscore"] > 0.5
    for corpus in ("lee-background", "sts-2012-2016"):
        assert matrices.loc[("smollm2", corpus), "norm_frequency_spearman"] < -0.2
        assert abs(matrices.loc[("gemma3", corpus), "norm_frequency_spearman"]) < 0.05
        assert matrices.loc[("minilm", corpus), "norm_frequency_spearman"] > 0.2
    gemma_norms = norms.loc["gemma3", "mean_norm"]
    assert f"{gemma_norms.min():.3f}" == f"{gemma_norms.max():.3f}"
    minilm_norms = norms.loc["minilm", "mean_norm"]
    assert minilm_norms.idxmin() == "unseen"
    # Layer 0 over the corpus's occurrences against the rows of the tokens it uses.
    assert _layer_zero("smollm2") < smollm2["anisotropy_seen"]
    assert set(matrices["matrix"]) == {"input"} and set(matrices["layer"]) == {"embedding matrix"}
    page = _page()
    assert "opposite of SmolLM2's" in page and "nearly the same norm" in page


MODELS = ("smollm2", "gemma3", "minilm")


def _layer_zero(model: str) -> float:
    """The raw anisotropy of `model`'s layer 0 over the Lee corpus's occurrences
    (the published instruments run's `measures.tsv`)."""
    rows = _published("measures")
    chosen = rows[
        (rows["model"] == model)
        & (rows["transform"] == "none")
        & (rows["layer"] == 0)
        & (rows["measure"] == "anisotropy")
    ]
    return float(chosen["raw"].iloc[0])


CONDITIONS = (
    "none",
    "zero at block",
    "mean at block",
    "zero at every block",
    "mean at every block",
)


def _perplexity(model: str, condition: str) -> pd.Series:
    rows = _published("ablation_effects_perplexity")
    return rows[(rows["model"] == model) & (rows["condition"] == condition)].iloc[0]


def _first_token_share(model: str, condition: str) -> pd.Series:
    """The first-token share by block, mean over heads."""
    rows = _published("ablation_effects_attention")
    rows = rows[(rows["model"] == model) & (rows["condition"] == condition)]
    return rows.groupby("block")["first_token_share"].mean()


def test_what_the_page_says_of_perplexity_under_the_ablation_holds():
    """The section's numbers are looked up (`catalogue.quotes`); what its sentences claim
    of them holds (the published instruments run's
    `ablation_effects_perplexity.tsv`)."""
    smollm2 = {c: _perplexity("smollm2", c) for c in CONDITIONS}
    gemma3 = {c: _perplexity("gemma3", c) for c in CONDITIONS}
    # the blocks the prose names: SmolLM2's first massive block 12, Gemma-3's block 1
    assert int(smollm2["none"]["detection_block"]) == 12
    assert int(gemma3["none"]["detection_block"]) == 1
    # SmolLM2: zeroed, the perplexity explodes; set to the mean, it does not move; the mean
    # at every block "costs a little"
    assert smollm2["zero at block"]["ratio_low"] > 1000
    assert smollm2["mean at block"]["ratio_low"] < 1 < smollm2["mean at block"]["ratio_high"]
    assert smollm2["mean at every block"]["ratio_low"] > 1
    assert smollm2["mean at every block"]["ratio_high"] < 1.05
    # Gemma-3 departs: zeroed it costs about a tenth, an interval above 1 but far below
    # SmolLM2's; the mean is a close substitute at the first block, not at every block,
    # where more than one token a sentence is replaced
    zeroed = gemma3["zero at block"]
    assert 1.05 < zeroed["ratio_to_none"] < 1.15 and zeroed["ratio_low"] > 1
    assert zeroed["ratio_high"] * 100 < smollm2["zero at block"]["ratio_low"]
    assert gemma3["mean at block"]["ratio_high"] < 1.02
    assert gemma3["mean at every block"]["ratio_low"] > 1.1
    assert gemma3["mean at every block"]["replaced"] > gemma3["none"]["n_sentences"]
    page = _page()
    assert "**Gemma-3 departs from Sun et al.**" in page
    assert "arXiv:2603.05498" in page


def test_what_the_page_says_of_attention_under_the_ablation_holds():
    """The attention paragraph's claims (the published instruments run's
    `ablation_effects_attention.tsv`, each block's share the mean over its heads)."""
    none = _first_token_share("smollm2", "none")
    zero = _first_token_share("smollm2", "zero at block")
    detection = int(_perplexity("smollm2", "none")["detection_block"])
    # about half from block 4 to block 10, before the massive activation (block 12)
    assert none.loc[4:10].between(0.45, 0.6).all() and detection > 10
    # blocks 11 and 12 look elsewhere; zeroing moves most later blocks, not every one
    assert none.loc[11:12].max() < 0.25
    moved = (zero - none).loc[detection + 1 :].abs() > 0.05
    assert moved.mean() > 0.5 and not moved.all()
    # Gemma-3: the first token, not the massive tokens after it, draws the attention
    gemma = _first_token_share("gemma3", "none")
    rows = _published("ablation_effects_attention")
    after_first = rows[(rows["model"] == "gemma3") & (rows["condition"] == "none")]
    after_first = after_first.groupby("block")["massive_after_first_share"].mean()
    assert gemma.min() > 5 * after_first.max()
    assert (rows["attention_weights"] == "returned").all()
    page = _page()
    assert 'Two things qualify "before the massive activation exists"' in page
    assert "a counted massive activation, not any large one" in page


def _scores(pooling: str) -> pd.Series:
    rows = _published("downstream")
    rows = rows[rows["pooling"] == pooling]
    return rows.set_index(["model", "layer"])["spearman"]


def test_the_sts_scores_by_layer_say_what_the_committed_run_shows():
    """The section's numbers are looked up (`catalogue.quotes`); what its sentences claim
    of them holds: MiniLM best at its last layer, Gemma-3 at an intermediate block above
    its last, SmolLM2 at block 1 and below block 11 from block 12 until its last, and
    MiniLM's and Gemma-3's best layers the same past the first token."""
    mean, past_first = _scores("mean"), _scores("past_first")
    last = _published("downstream").groupby("model")["n_layers"].first()
    assert mean["minilm"].idxmax() == last["minilm"]
    assert 0 < mean["gemma3"].idxmax() < last["gemma3"]
    assert mean["smollm2"].idxmax() == 1
    sink = mean["smollm2"].loc[12 : last["smollm2"] - 1]
    assert sink.max() < mean[("smollm2", 11)] and sink.max() < mean[("smollm2", last["smollm2"])]
    assert past_first["smollm2"].loc[12:29].min() > sink.max()
    for model in ("minilm", "gemma3"):
        assert mean[model].idxmax() == past_first[model].idxmax()


def test_the_agreement_of_the_geometry_with_the_sts_score_says_what_the_run_shows():
    """The directions and significance the section states: for MiniLM and Gemma-3 only the
    four agreements it names reach p < 0.05 (MiniLM's prompt entropy with every token
    pooled not), each with an interval that straddles the smallest significant ρ over
    seven layers; for SmolLM2 the listed measures at p < 0.05 in the stated directions,
    anisotropy falling short of it."""
    rows = (
        _published("downstream_agreement").set_index(["model", "pooling", "measure"]).sort_index()
    )
    critical = float(quotes.smallest_significant_rho(7))
    named = [
        ("minilm", "mean", "prompt entropy"),
        ("minilm", "past_first", "prompt entropy"),
        ("gemma3", "mean", "α-ReQ"),
        ("gemma3", "past_first", "curvature"),
    ]
    seven_layers = rows.loc[["minilm", "gemma3"]]
    significant = set(seven_layers.index[seven_layers["p_value"] < 0.05])
    assert significant == set(named[1:])
    for key in named:
        ends = sorted(abs(rows.loc[key, end]) for end in ("low", "high"))
        assert round(ends[0], 3) < critical <= round(ends[1], 3), key
    rising = ("matrix entropy", "prompt entropy", "effective rank", "adjusted SelfSim")
    stated = {
        "mean": {**dict.fromkeys(rising, 1), "curvature": -1},
        "past_first": dict.fromkeys(rising, -1),
    }
    for pooling, directions in stated.items():
        for measure, sign in directions.items():
            row = rows.loc[("smollm2", pooling, measure)]
            assert np.sign(row["rho"]) == sign and row["p_value"] < 0.05, (pooling, measure)
    anisotropy = rows.loc[("smollm2", "mean", "anisotropy")]
    assert anisotropy["rho"] < 0 and anisotropy["p_value"] >= 0.05


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


# The published run of config/early_steps.yaml, whose tables the page quotes.
EARLY_STEPS = ROOT / "docs/results/early_steps/tables"


def _early(name: str) -> pd.DataFrame:
    return pd.read_csv(EARLY_STEPS / f"{name}.tsv", sep="\t")


def _events(kind: str) -> pd.DataFrame:
    rows = _early("training_probe_events")
    rows = rows[rows["architecture"] == kind]
    return rows.set_index(["seed", "warmup", "layer"]).sort_index()


def test_what_the_page_says_of_the_early_steps_holds():
    """docs/evidence.md looks its numbers up; what it says of them must hold: every
    layer past the embeddings peaks before its unigram crossing, after a 10-step warm-up
    ends and before a 200-step one does; GPT-2's crossing moves with the warm-up as its
    peak does; GPT-2's layer 4 mean lies along the unigram direction at the peak, layers 1
    and 2 short of it, BERT's means do not but its layer 4's first principal direction
    does."""
    for kind in ("gpt2", "bert"):
        events = _events(kind)
        assert (events["peak_step"] < events["unigram_crossing"]).loc[:, :, [1, 2, 3, 4]].all()
        after_end = events["peak_step"] > events["warmup_end"]
        blocks = after_end.loc[:, :, [1, 2, 3, 4]]
        assert blocks.xs(10, level="warmup").all() and not blocks.xs(200, level="warmup").any()
    gpt2 = _events("gpt2")
    peaks = gpt2["peak_step"].xs(4, level="layer").unstack("warmup")
    crossings = gpt2["unigram_crossing"].xs(4, level="layer").unstack("warmup")
    assert (crossings[200] / crossings[10] > 1.5).all() and (peaks[200] / peaks[10] > 1.5).all()
    cosines = gpt2["cos_mean_unigram_at_peak"]
    assert cosines.xs(4, level="layer").min() > 0.9
    assert cosines.xs(2, level="layer").max() < cosines.xs(4, level="layer").min()
    assert cosines.xs(1, level="layer").max() < 0.8
    bert = _events("bert")
    assert bert["cos_mean_unigram_at_peak"].loc[:, :, [1, 2, 3, 4]].abs().max() < 0.2
    assert bert["cos_pc1_unigram_at_peak"].xs(4, level="layer").min() > 0.9
    crossing = bert["unigram_crossing"].xs(4, level="layer").unstack("warmup")
    in_order = [crossing.loc[seed].is_monotonic_increasing for seed in crossing.index]
    assert crossing.min().min() > 100 and not all(in_order)  # no order every seed holds


def _checkpoints(table: pd.DataFrame) -> pd.DataFrame:
    """The rows of a training run's table counted in STS 2012-2016, indexed by
    architecture, step and seed (read from each checkpoint's model name)."""
    table = with_checkpoints(table[table["frequency_corpus"] == "sts-2012-2016"])
    return table.set_index(["architecture", "step", "seed"]).sort_index()


def test_what_the_page_says_of_the_training_run_s_embedding_matrices_holds():
    """In every seed, both tied matrices start isotropic, degenerate by step 200 (more
    anisotropic than at step 50, norm falling with training frequency, unseen tokens deep
    in the cone and the most frequent outside it) and partly recover by the last step,
    unseen tokens still in the cone."""
    run = ROOT / "docs/results/training/tables"
    rows = _checkpoints(pd.read_csv(run / "embedding_matrices.tsv", sep="\t"))
    norms = _checkpoints(pd.read_csv(run / "embedding_matrix_norms.tsv", sep="\t"))
    last = rows.index.get_level_values("step").max()
    for kind in ("gpt2", "bert"):
        matrix = rows.loc[kind]
        anisotropy, rho = matrix["anisotropy"], matrix["norm_frequency_spearman"]
        assert (anisotropy.loc[0].abs() < 5e-4).all() and (matrix.loc[0, "isoscore"] > 0.95).all()
        assert (anisotropy.loc[0] < anisotropy.loc[50]).all()
        assert (anisotropy.loc[50] < anisotropy.loc[200]).all()
        assert (anisotropy.loc[last] < anisotropy.loc[200]).all()
        assert (rho.loc[200] < -0.5).all() and (rho.loc[200] < rho.loc[last]).all()
        assert (rho.loc[last] < 0).all()
        bins = norms.loc[kind].set_index("bin", append=True)["cone_cosine"]
        for step in (200, last):
            assert (bins.xs((step, "unseen"), level=("step", "bin")) > 0.8).all()
        assert (bins.xs((200, "1–100"), level=("step", "bin")) < -0.5).all()
    assert rows["tied"].all()
    assert "every number is the mean over seeds 0, 1 and 2" in _page()


def test_the_rogue_dimensions_share_of_smollm2_s_entropy_fall_is_what_the_page_says():
    """docs/instruments.md: of SmolLM2's fall in dataset entropy from block 9 to block 12,
    the three rogue dimensions' own share (the raw fall less the fall without them) is
    about half, neither most nor little of it."""
    rows = _published("measures")
    entropy = rows[(rows["model"] == "smollm2") & (rows["measure"] == "dataset_entropy")]
    by = entropy.set_index(["transform", "layer"])["raw"]
    raw_fall = by[("none", 9)] - by[("none", 12)]
    remaining_fall = by[("drop_rogue", 9)] - by[("drop_rogue", 12)]
    rogue_share = 1 - remaining_fall / raw_fall
    assert 0.4 <= rogue_share <= 0.6
    page = " ".join((ROOT / "docs" / "instruments.md").read_text().split())
    assert "About half of that fall is the rogue dimensions' own" in page


def test_bert_s_longest_warm_up_peaks_at_the_grid_s_end_so_its_ratios_are_bounds():
    """docs/evidence.md: with a warm-up of 200 steps BERT's layer 4 peaks at step 100, the
    every-step grid's last, still rising there and lower at the next checkpoint (120), so
    its delay ratios against the 10-step warm-up lie between 100/p and 120/p."""
    events = _early("training_probe_events")
    bert = events[(events["architecture"] == "bert") & (events["layer"] == 4)].set_index(
        ["seed", "warmup"]
    )["peak_step"]
    assert (bert.xs(200, level="warmup") == 100).all()
    steps = _early("training_probes")
    curve = steps[
        (steps["architecture"] == "bert") & (steps["layer"] == 4) & (steps["warmup"] == 200)
    ].pivot_table(index="step", columns="seed", values="anisotropy")
    assert (curve.loc[100] > curve.loc[99]).all() and (curve.loc[120] < curve.loc[100]).all()
    assert not set(range(101, 120)) & set(curve.index)  # nothing between the two
    assert "are lower bounds" in _page()


def test_the_early_steps_warm_up_50_runs_retrace_the_sweep_s():
    """docs/evidence.md: the early steps' runs with a warm-up of 50 steps are the training
    sweep's: their held-out losses agree within 1e-4 nats at every step both evaluate up
    to 300 (within 1e-2 at 500), so
    BERT's first step below the line is the sweep's in every seed; BERT's loss is within
    0.05 nats of the line at steps 150 and 200 in every run; GPT-2's crossings, probed at
    every step, fall between the sweep's evaluated steps 50 and 70."""
    sweep = pd.read_csv(ROOT / "docs/results/training/tables/training_losses.tsv", sep="\t")
    early = _early("training_losses")
    early = early[early["warmup"] == 50]
    shared = early.merge(sweep, on=["architecture", "seed", "step"], suffixes=("", "_sweep"))
    reached = sweep[sweep["step"] <= early["step"].max()]
    assert len(shared) == len(reached) > 0  # every step the sweep evaluated up to 500
    apart = (shared["held_out_loss"] - shared["held_out_loss_sweep"]).abs()
    assert apart[shared["step"] <= 300].max() < 1e-4 and apart.max() < 1e-2
    below = sweep[sweep["held_out_loss"] < sweep["unigram_loss"]]
    first = below.groupby(["architecture", "seed"])["step"].min()
    events = _early("training_probe_events")
    at_50 = events[(events["warmup"] == 50) & (events["layer"] == 4)]
    crossings = at_50.set_index(["architecture", "seed"])["unigram_crossing"]
    assert (crossings.loc["bert"] == first.loc["bert"]).all()
    assert crossings.loc["gpt2"].between(51, 70).all() and (first.loc["gpt2"] == 70).all()
    assert {50, 70} <= set(sweep["step"]) and not set(range(51, 70)) & set(sweep["step"])
    probes = _early("training_probes")
    bert = probes[(probes["architecture"] == "bert") & (probes["layer"] == 0)]
    hovering = bert[bert["step"].isin([150, 200])]
    assert (hovering["held_out_loss"] - hovering["unigram_loss"]).abs().max() < 0.05
    assert "The two runs agree where they meet" in _page()
