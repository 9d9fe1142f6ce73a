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
