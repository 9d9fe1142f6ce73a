"""The geometry bench's report (bench/geometry.py): what its tables read from a run's."""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

sys.path[:0] = [str(Path(__file__).resolve().parents[1] / "bench")]

import geometry  # noqa: E402


def test_the_report_gives_each_layer_one_row_of_norms_its_special_tokens_left_out():
    """A special token (Gemma-3's <bos>) has a row of its own at first position 0 in the
    position table: the report's first-word norm is the first words' alone, one row per
    layer, and the later words' norm the median of the other word buckets."""
    rows = [
        ("0", 0, 10.0, "word position"),
        ("1", 1, 20.0, "word position"),
        ("2–3", 2, 40.0, "word position"),
        ("4–7", 4, 30.0, "word position"),
        ("<bos>", 0, 6252.0, "special token"),
    ]
    positions = pd.DataFrame(
        [
            (bucket, first, norm, kind, model, layer, transform)
            for model in ("gemma3", "minilm")
            for layer in (0, 3)
            for transform in ("none", "center")
            for bucket, first, norm, kind in rows
        ],
        columns=["bucket", "first_position", "mean_norm", "kind", "model", "layer", "transform"],
    )
    norms = geometry._norms(positions)
    assert len(norms) == 4 and norms.index.is_unique
    assert (norms["first word norm"] == 10.0).all()
    assert (norms["later words norm"] == 30.0).all()
