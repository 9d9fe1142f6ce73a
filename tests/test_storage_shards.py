"""Tests of the HDF5 embedding shards (contextuality.storage.shards)."""

from __future__ import annotations

from pathlib import Path

import h5py
import numpy as np
import pytest

from contextuality.errors import ShardMismatchError
from contextuality.storage.shards import ShardSetWriter, load_shard, shard_attributes

ATTRIBUTES = {
    "model": "m",
    "model_id": "org/m",
    "model_revision": None,
    "pooling": "mean",
    "index_checksum": "abc",
    "settings": {"layers": [0, 1], "pooling": "mean"},
    "layers": (0, 1),
}


def _block(n_layers: int, n_rows: int, dim: int, offset: float = 0.0) -> np.ndarray:
    values = np.arange(n_layers * n_rows * dim, dtype=np.float32) + offset
    return values.reshape(n_layers, n_rows, dim) / 8


def _files(directory: Path) -> list[str]:
    return sorted(path.name for path in directory.iterdir())


def test_write_commit_and_load(tmp_path):
    paths = {0: tmp_path / "l0.h5", 3: tmp_path / "sub" / "l3.h5"}
    block = _block(2, 5, 4)
    with ShardSetWriter(paths, 5, 4, "float16", ATTRIBUTES) as writer:
        writer.write(0, block[:, :2])
        writer.write(2, block[:, 2:])
        assert not paths[0].exists() and not paths[3].exists()  # not before commit
        writer.commit({"n_missing": 0})
    for position, (layer, path) in enumerate(paths.items()):
        vectors, attributes = load_shard(path, "abc", n_rows=5)
        assert vectors.dtype == np.float32
        np.testing.assert_array_equal(vectors, block[position])  # exact in float16
        with h5py.File(path, "r") as handle:
            assert handle["vectors"].dtype == np.float16
        assert attributes["complete"] is True
        assert attributes["layer"] == layer
        assert attributes["model_revision"] == ""  # None is stored as ""
        assert attributes["settings"] == ATTRIBUTES["settings"]  # stored as JSON, read back
        assert attributes["layers"] == [0, 1]
        assert attributes["n_missing"] == 0
        assert shard_attributes(path) == attributes
    assert _files(tmp_path) == ["l0.h5", "sub"]
    assert _files(tmp_path / "sub") == ["l3.h5"]


def test_reading_chosen_rows_through_a_function_equals_doing_it_in_memory(tmp_path, monkeypatch):
    """`rows` and `convert` read a subset, mapped, slice by slice (slices of 3 rows here):
    the same as indexing and mapping the whole layer, without holding it."""
    import contextuality.rows as rows_module

    monkeypatch.setattr(rows_module, "_CHUNK_BYTES", 3 * 8 * 4)
    path = tmp_path / "l0.h5"
    block = np.random.default_rng(3).standard_normal((1, 11, 4)).astype(np.float16)
    with ShardSetWriter({0: path}, 11, 4, "float16", ATTRIBUTES) as writer:
        writer.write(0, block)
        writer.commit({})
    rows = np.array([0, 2, 3, 4, 9, 10])
    as_stored, _ = load_shard(path, "abc", 11, dtype=None, rows=rows)
    assert as_stored.dtype == np.float16
    np.testing.assert_array_equal(as_stored, block[0][rows])

    def doubled_sums(chunk: np.ndarray) -> np.ndarray:
        chunk = chunk.astype(np.float64)
        return np.stack([chunk.sum(axis=1), 2 * chunk.sum(axis=1)], axis=1)

    mapped, _ = load_shard(path, "abc", 11, rows=rows, convert=(doubled_sums, 2))
    assert mapped.shape == (6, 2) and mapped.dtype == np.float32
    np.testing.assert_allclose(mapped, doubled_sums(block[0][rows].astype(np.float32)), rtol=1e-6)


def test_float32_shard_keeps_large_values(tmp_path):
    path = tmp_path / "l0.h5"
    block = np.full((1, 2, 3), 1e6, dtype=np.float32)
    with ShardSetWriter({0: path}, 2, 3, "float32", ATTRIBUTES) as writer:
        writer.write(0, block)
        writer.commit({})
    vectors, _ = load_shard(path, "abc", 2)
    np.testing.assert_array_equal(vectors, block[0])


def test_abort_midway_leaves_nothing(tmp_path):
    paths = {0: tmp_path / "l0.h5", 1: tmp_path / "l1.h5"}
    writer = ShardSetWriter(paths, 4, 2, "float16", ATTRIBUTES)
    writer.write(0, _block(2, 2, 2))
    assert len(_files(tmp_path)) == 2  # two temporary files
    writer.abort()
    assert _files(tmp_path) == []
    writer.abort()  # idempotent


def test_exception_inside_with_block_leaves_nothing(tmp_path):
    paths = {0: tmp_path / "l0.h5", 1: tmp_path / "l1.h5"}
    with (
        pytest.raises(RuntimeError, match="boom"),
        ShardSetWriter(paths, 4, 2, "float16", ATTRIBUTES) as writer,
    ):
        writer.write(0, _block(2, 2, 2))
        raise RuntimeError("boom")
    assert _files(tmp_path) == []


def test_existing_shard_survives_a_failed_rewrite(tmp_path):
    path = tmp_path / "l0.h5"
    with ShardSetWriter({0: path}, 2, 2, "float16", ATTRIBUTES) as writer:
        writer.write(0, _block(1, 2, 2))
        writer.commit({})
    with pytest.raises(RuntimeError), ShardSetWriter({0: path}, 2, 2, "float16", ATTRIBUTES):
        raise RuntimeError("interrupted")
    vectors, _ = load_shard(path, "abc", 2)
    np.testing.assert_array_equal(vectors, _block(1, 2, 2)[0])
    assert _files(tmp_path) == ["l0.h5"]


def test_uncommitted_shard_is_refused(tmp_path):
    """The temporary file of a running (or killed) extraction is marked incomplete."""
    with ShardSetWriter({0: tmp_path / "l0.h5"}, 2, 2, "float16", ATTRIBUTES) as writer:
        writer.write(0, _block(1, 2, 2))
        (partial,) = tmp_path.iterdir()
        with pytest.raises(ShardMismatchError, match="incomplete") as caught:
            load_shard(partial, "abc", 2)
        assert str(partial) in str(caught.value)


def test_complete_false_is_refused(tmp_path):
    path = tmp_path / "l0.h5"
    with h5py.File(path, "w") as handle:
        handle.create_dataset("vectors", data=np.zeros((2, 2), dtype=np.float16))
        handle.attrs.update({"index_checksum": "abc", "complete": False})
    with pytest.raises(ShardMismatchError, match="incomplete") as caught:
        load_shard(path, "abc", 2)
    assert str(path) in str(caught.value)


@pytest.fixture
def shard(tmp_path) -> Path:
    path = tmp_path / "l0.h5"
    with ShardSetWriter({0: path}, 3, 2, "float16", ATTRIBUTES) as writer:
        writer.write(0, _block(1, 3, 2))
        writer.commit({})
    return path


def test_other_index_checksum_is_refused(shard):
    with pytest.raises(ShardMismatchError) as caught:
        load_shard(shard, "def", 3)
    message = str(caught.value)
    assert str(shard) in message
    assert "abc" in message and "def" in message


def test_wrong_row_count_is_refused(shard):
    with pytest.raises(
        ShardMismatchError, match="3 rows, but the occurrence index has 4"
    ) as caught:
        load_shard(shard, "abc", 4)
    assert str(shard) in str(caught.value)
    vectors, _ = load_shard(shard, "abc")  # no row count: not checked
    assert vectors.shape == (3, 2)


def test_unreadable_or_missing_file_is_refused(tmp_path):
    junk = tmp_path / "junk.h5"
    junk.write_text("not hdf5")
    for path in (junk, tmp_path / "missing.h5"):
        with pytest.raises(ShardMismatchError) as caught:
            load_shard(path, "abc")
        assert str(path) in str(caught.value)


def test_shard_without_dataset_is_refused(tmp_path):
    path = tmp_path / "l0.h5"
    with h5py.File(path, "w") as handle:
        handle.attrs.update({"index_checksum": "abc", "complete": True})
    with pytest.raises(ShardMismatchError, match="no 'vectors' dataset"):
        load_shard(path, "abc")
