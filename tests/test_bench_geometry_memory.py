"""bench/geometry_memory.py's records: merged with those already written, what each job
declares computed again."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from contextuality.geometry.search import SearchSettings
from contextuality.workflow.geometry_resources import (
    dimension_memory_needed,
    dimension_runtime_needed,
)

BENCH = Path(__file__).resolve().parents[1] / "bench"


def _bench():
    """bench/geometry_memory.py, its folder on the path for its own helpers."""
    sys.path.append(str(BENCH))
    spec = importlib.util.spec_from_file_location("bench_memory", BENCH / "geometry_memory.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_merged_geometry_records_replace_their_job_and_declare_again():
    """`bench/geometry_memory.py --merge`: a run's new record takes its job's place, a
    kept record's declared memory and minutes are the resource functions' now, whatever
    it held, a column added since it was measured None in its place, and a new job's
    record comes last."""
    module = _bench()

    def record(layer: str, seconds: float) -> dict:
        return {
            "run": "sts", "job": "dimension", "model": "m", "transform": "none",
            "layer": layer, "layers": 1, "rows": 500_000, "width": 384,
            "sampled_rows": 500_000, "stored_bytes": 384_000_000, "k": 10, "range_max": 64,
            "seconds": seconds, "peak_mib": 5_000.0, "declared_mb": 1, "resamples": 100,
            "baselines": 2, "declared_minutes": 1,
        }  # fmt: skip

    search = SearchSettings()
    kept = [record("0", 700.0), record("1", 1_300.0)]
    new = [
        module.declared(record("1", 900.0) | {"cores_busy": 1.9}, search),
        module.declared(record("6", 3_000.0) | {"cores_busy": 2.0}, search),
    ]
    new = [module._placed(one, {**record("6", 0), "cores_busy": None}) for one in new]
    merged = module.merged(kept, new, search)
    assert [(one["layer"], one["seconds"]) for one in merged] == [
        ("0", 700.0),
        ("1", 900.0),
        ("6", 3_000.0),
    ]
    assert merged[0]["declared_mb"] == dimension_memory_needed(384_000_000, 500_000, 500_000, 64)
    assert merged[0]["declared_minutes"] == dimension_runtime_needed(500_000, 384, search)
    assert list(merged[0]) == list(merged[2])  # the columns in one order
    assert merged[0]["cores_busy"] is None and merged[2]["cores_busy"] == 2.0  # added since
