"""Provenance records, config hashes, atomic writes and tables that carry their provenance."""

from __future__ import annotations

import pandas as pd
import pytest

from contextuality import __version__
from contextuality.files.provenance import (
    atomic_path,
    config_hash,
    provenance_record,
    read_json,
    sha256_file,
    write_json,
)
from contextuality.files.tables import (
    read_parquet,
    read_provenance,
    read_tsv_provenance,
    write_parquet,
    write_tsv,
)


def test_config_hash_ignores_key_order_and_sees_values():
    assert config_hash({"a": 1, "b": [1, 2]}) == config_hash({"b": [1, 2], "a": 1})
    assert config_hash({"a": 1}) != config_hash({"a": 2})
    assert len(config_hash({})) == 16


def test_atomic_path_renames_on_success_only(tmp_path):
    target = tmp_path / "sub" / "out.txt"
    with atomic_path(target) as temporary:
        temporary.write_text("done")
        assert not target.exists()
    assert target.read_text() == "done"

    with pytest.raises(RuntimeError), atomic_path(target) as temporary:
        temporary.write_text("half")
        raise RuntimeError("crash")
    assert target.read_text() == "done"
    assert [path.name for path in target.parent.iterdir()] == ["out.txt"]


def test_parquet_round_trip_keeps_provenance(tmp_path):
    frame = pd.DataFrame({"word": ["a", "b"], "count": [3, 1]})
    record = provenance_record(step="test", config_hash=config_hash({"x": 1}))
    path = tmp_path / "t.parquet"
    write_parquet(frame, path, record)
    pd.testing.assert_frame_equal(read_parquet(path), frame)
    stored = read_provenance(path)
    assert stored == record
    assert stored["package_version"] == __version__


def test_json_and_tsv_writers(tmp_path):
    write_json(tmp_path / "a.json", {"b": 1, "a": [1.5]})
    assert read_json(tmp_path / "a.json") == {"a": [1.5], "b": 1}
    record = provenance_record(step="test", settings={"k": 1})
    write_tsv(pd.DataFrame({"x": [0.123456789012]}), tmp_path / "t.tsv", record)
    assert float((tmp_path / "t.tsv").read_text().split()[1]) == pytest.approx(0.123456789012)
    assert len(sha256_file(tmp_path / "t.tsv")) == 64
    assert read_tsv_provenance(tmp_path / "t.tsv") == {
        **record,
        "table_sha256": sha256_file(tmp_path / "t.tsv"),
    }
    assert sorted(path.name for path in tmp_path.iterdir()) == [
        "a.json",
        "t.provenance.json",
        "t.tsv",
    ]


def test_a_tsv_never_stands_without_its_provenance(tmp_path, monkeypatch):
    """The sidecar is written first: a crash while writing the table leaves no table."""
    import contextuality.files.tables as tables

    def failing_to_csv(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(pd.DataFrame, "to_csv", failing_to_csv)
    with pytest.raises(OSError, match="disk full"):
        tables.write_tsv(pd.DataFrame({"x": [1]}), tmp_path / "t.tsv", {"step": "test"})
    assert not (tmp_path / "t.tsv").exists()
