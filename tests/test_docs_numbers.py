"""Numbers the docs quote, read from the committed files they cite."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]


def test_the_cka_nulls_quoted_in_the_geometry_page_are_the_acceptance_tables():
    """docs/geometry.md: on bench/gpu/expected/cka.tsv the biased null reaches 0.004 and the
    debiased null stays within 0.0002 of 0."""
    page = (ROOT / "docs/geometry.md").read_text()
    assert "the biased null reaches 0.004" in page
    assert "debiased null stays within 0.0002 of 0" in page
    table = pd.read_csv(ROOT / "bench/gpu/expected/cka.tsv", sep="\t")
    assert round(table["null_cka"].max(), 3) == 0.004
    assert table["null_cka_debiased"].abs().max() < 0.0002
    assert (table["cka"] > table["null_cka"]).all()


def test_the_intrinsic_dimensions_quoted_in_the_geometry_page_are_the_committed_curves():
    """docs/geometry.md quotes MiniLM's curves over scale from
    bench/results/dimension-scales-minilm.tsv: each number, rounded as quoted, is there."""
    page = " ".join((ROOT / "docs/geometry.md").read_text().split())
    curves = pd.read_csv(ROOT / "bench/results/dimension-scales-minilm.tsv", sep="\t")

    def at(estimator: str, layer: int, scale: int) -> str:
        row = curves[
            (curves["estimator"] == estimator)
            & (curves["layer"] == layer)
            & (curves["scale"] == scale)
        ]
        return f"{row['dimension'].item():.1f}"

    def plateau(estimator: str, layer: int) -> str:
        rows = curves[(curves["estimator"] == estimator) & (curves["layer"] == layer)]
        return f"{rows.loc[rows['on_plateau'], 'dimension'].mean():.1f}"

    quoted = [
        f"from {plateau('twonn', 1)} (GRIDE {plateau('gride', 1)}) after block 1 to "
        f"{plateau('twonn', 4)} ({plateau('gride', 4)}) after block 4",
        f"after block 5 ({plateau('twonn', 5)}; {plateau('gride', 5)})",
        f"The embedding output is {plateau('twonn', 0)} by TwoNN",
        f"TwoNN from {at('twonn', 6, 10000)} on all 10,000 points to {at('twonn', 6, 156)} on "
        f"subsets of 156, GRIDE from {at('gride', 6, 1)} at k = 1 to {at('gride', 6, 32)} at "
        "k = 32",
        f"such as {at('twonn', 6, 1250)} on subsets of 1,250",
        f"at layer 4, {at('gride', 4, 1)} against {at('twonn', 4, 10000)})",
    ]
    for phrase in quoted:
        assert phrase in page, phrase
    flat = curves[curves["on_plateau"]].groupby(["estimator", "layer"])["scale"]
    assert (flat.min()["twonn"][2:6] == 2500).all() and (flat.max()["gride"][1:6] == 4).all()
    assert {0, 6} == set(range(7)) - set(flat.min()["gride"].index)  # no GRIDE plateau
    assert 6 not in flat.min()["twonn"].index
