"""What docs/geometry.md's "Does anisotropy emerge with training?" says of the numbers it
looks up, checked in the tables of the published run of config/training.yaml: each
sentence that the lookups cannot keep true by themselves (an ordering, an "every seed")."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
RUN = ROOT / "docs/results/training/tables"
BLOCKS = [1, 2, 3, 4]
# A checkpoint of the training runs as a model: tiny-<architecture>-<seed>.step<step>.
CHECKPOINT = r"^tiny-(?P<architecture>\w+)-(?P<seed>\d)\.step(?P<step>\d+)$"


def with_checkpoints(table: pd.DataFrame) -> pd.DataFrame:
    """`table` with the architecture, seed and step that each row's model name gives."""
    named = table["model"].str.extract(CHECKPOINT)
    return table.join(named.astype({"seed": int, "step": int}))


@pytest.fixture(scope="module")
def measures() -> pd.DataFrame:
    """Anisotropy (raw) and adjusted SelfSim of every checkpoint: rows architecture,
    measure, step, seed; a column per layer."""
    table = pd.read_csv(RUN / "measures.tsv", sep="\t")
    table = table[(table["transform"] == "none") & table["measure"].isin(["anisotropy", "selfsim"])]
    table = with_checkpoints(table)
    table["value"] = table["raw"].where(table["measure"] == "anisotropy", table["adjusted"])
    return table.pivot_table(
        index=["architecture", "measure", "step", "seed"], columns="layer", values="value"
    )


@pytest.fixture(scope="module")
def losses() -> pd.DataFrame:
    return pd.read_csv(RUN / "training_losses.tsv", sep="\t")


def _page() -> str:
    return " ".join((ROOT / "docs" / "geometry.md").read_text().split())


def _inverted(grid: pd.DataFrame, rising: int) -> dict[tuple[int, int], list[int]]:
    """The seeds that invert each adjacent pair of layers (`rising`: 1 where the measure
    should rise with depth, -1 where it should fall)."""
    pairs = {
        (layer, layer + 1): sorted(grid.index[(grid[layer + 1] - grid[layer]) * rising < 0])
        for layer in range(grid.columns.max())
    }
    return {pair: seeds for pair, seeds in pairs.items() if seeds}


def test_the_collapse_comes_in_every_seed_before_the_unigram_line(measures, losses):
    """At initialization GPT-2 is nearly isotropic and BERT equally anisotropic in every
    layer; every seed's upper layers point nearly one way at step 20 (GPT-2) and 50 (BERT),
    before its loss first falls below the unigram line, and spread out again by the last
    step; the seeds differ most, in every block's output, between steps 5 and 100."""
    anisotropy = measures.xs("anisotropy", level="measure")
    assert (anisotropy.loc[("gpt2", 0)] < 0.15).all().all()
    bert = anisotropy.loc[("bert", 0)]
    assert (bert.max(axis=1) - bert.min(axis=1) < 0.01).all() and (bert > 0.4).all().all()
    last = losses["step"].max()
    below = losses[losses["held_out_loss"] < losses["unigram_loss"]]
    first_below = below.groupby(["architecture", "seed"])["step"].min()
    for architecture, collapse in (("gpt2", 20), ("bert", 50)):
        upper = anisotropy.loc[(architecture, collapse), [2, 3, 4]]
        assert (upper > 0.85).all().all(), architecture
        assert (first_below.loc[architecture] > collapse).all(), architecture
        assert (anisotropy.loc[(architecture, last), 4] < upper[4]).all(), architecture
        for measure in ("anisotropy", "selfsim"):
            curves = measures.loc[(architecture, measure)]
            spread = curves.groupby(level="step").agg(lambda seeds: seeds.max() - seeds.min())
            assert spread[BLOCKS].idxmax().between(5, 100).all(), (architecture, measure)
    assert "between steps 5 and 100" in _page()


def test_the_depth_ordering_at_the_last_step_and_the_seeds_that_invert_it(measures, losses):
    """At the last step the mean over seeds rises with depth by anisotropy and falls by
    adjusted SelfSim in both models; in BERT seed 1 inverts layers 0 to 1 by both, seed 0
    layers 2 to 3 by both and 0 to 1 by adjusted SelfSim, seed 2 none; every seed orders
    the first layer against the last. GPT-2's every seed has the ordering at step 0 and
    at the last step, BERT's none at step 0."""
    last = losses["step"].max()
    for architecture in ("gpt2", "bert"):
        for measure, rising in (("anisotropy", 1), ("selfsim", -1)):
            grid = measures.loc[(architecture, measure, last)]
            assert (grid.mean().diff().dropna() * rising > 0).all(), (architecture, measure)
            assert ((grid[4] - grid[0]) * rising > 0).all(), (architecture, measure)
    expected = {"anisotropy": {(0, 1): [1], (2, 3): [0]}, "selfsim": {(0, 1): [0, 1], (2, 3): [0]}}
    for measure, rising in (("anisotropy", 1), ("selfsim", -1)):
        assert _inverted(measures.loc[("bert", measure, last)], rising) == expected[measure]
        assert _inverted(measures.loc[("gpt2", measure, last)], rising) == {}
        assert _inverted(measures.loc[("gpt2", measure, 0)], rising) == {}
        assert _inverted(measures.loc[("bert", measure, 0)], rising)
    page = _page()
    assert "in BERT's seed 1 anisotropy falls from layer 0 to layer 1" in page
    assert "in seed 0 both turn between layers 2 and 3" in page
    assert "seed 2 orders every pair" in page
