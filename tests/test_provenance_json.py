"""JSON outputs are strict JSON: a NaN or ±inf is written as null (a bare NaN is not JSON),
and the readers that compute with a layer summary's values get NaN back."""

from __future__ import annotations

import json

import numpy as np
import pytest

from contextuality.files.provenance import read_json, write_json
from contextuality.files.tables import read_provenance, write_parquet
from contextuality.measures import summary


def _strict(text: str) -> object:
    """`text` parsed by a parser that refuses NaN, Infinity and -Infinity."""

    def refuse(constant: str) -> None:
        raise ValueError(f"not JSON: {constant}")

    return json.loads(text, parse_constant=refuse)


def layer_summary(measures: dict) -> dict:
    """A layer summary of model m's layer 1 of 2 holding `measures`."""
    return {
        "model": "m",
        "transform": "none",
        "layer": 1,
        "n_layers": 2,
        "layer_output": "block",
        "measures": measures,
    }


def _layer_summary(raw_low: float) -> dict:
    return layer_summary(
        {
            "selfsim": {"raw": 0.5, "raw_low": raw_low, "raw_high": float("inf"), "n": 3},
            "mev": {"raw": np.float32("nan"), "n": 3},
        }
    )


def test_written_json_is_strict_with_nulls_for_non_finite_values(tmp_path):
    path = tmp_path / "layer_1.json"
    write_json(path, {**_layer_summary(np.nan), "draws": (1.0, -np.inf)})
    parsed = _strict(path.read_text())
    assert parsed["measures"]["selfsim"] == {"raw": 0.5, "raw_low": None, "raw_high": None, "n": 3}
    assert parsed["measures"]["mev"]["raw"] is None
    assert parsed["draws"] == [1.0, None]


def test_parquet_provenance_is_strict_json(tmp_path):
    import pandas as pd
    import pyarrow.parquet as pq

    path = tmp_path / "table.parquet"
    write_parquet(pd.DataFrame({"a": [1]}), path, {"baseline": float("nan"), "seed": 0})
    raw = pq.read_schema(path).metadata[b"contextuality.files.provenance"].decode()
    assert _strict(raw) == {"baseline": None, "seed": 0}
    assert read_provenance(path) == {"baseline": None, "seed": 0}


def test_the_measures_table_reads_null_as_nan(tmp_path):
    """A null read back from a summary file is NaN in the table's float columns, also where
    every summary has one (no column of None)."""
    paths = []
    for layer, raw_low in ((1, np.nan), (2, 0.25)):
        paths.append(tmp_path / f"layer_{layer}.json")
        write_json(paths[-1], {**_layer_summary(raw_low), "layer": layer})
    table = summary.measures_table([read_json(path) for path in paths])
    selfsim = table[table["measure"] == "selfsim"].set_index("layer")
    assert np.isnan(selfsim.loc[1, "raw_low"]) and selfsim.loc[2, "raw_low"] == 0.25
    assert selfsim["raw_high"].isna().all()
    for column in ("raw", "raw_low", "raw_high", "baseline", "adjusted_high"):
        assert table[column].dtype == np.float64
    assert table["raw"].mean() == pytest.approx(0.5)  # computes: NaN skipped, not None
