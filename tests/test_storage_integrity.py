"""Shards and state files on a damaged or full disk, and temporary files of several writers:
damage is refused with a way to rebuild, a full disk is one line and leaves nothing, an
extraction's layers are moved into place all or none, and only ended writers' temporary
files are cleaned up."""

from __future__ import annotations

import errno
import os
import socket
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import h5py
import numpy as np
import pytest

from contextuality.backends import load_model
from contextuality.backends.settings import ModelSettings
from contextuality.errors import ShardMismatchError, StorageError
from contextuality.extraction.units import sentence_units
from contextuality.files.provenance import partial_path, write_json
from contextuality.storage.shards import (
    ShardSetWriter,
    expected_extraction,
    load_shard,
    load_shard_parts,
    shard_bytes,
)
from contextuality.streaming.accumulate import StreamingAccumulator
from contextuality.streaming.state import StreamingSettings, load_state

from extraction import extract_into_shards

ATTRIBUTES = {"model": "m", "index_checksum": "abc"}
DIM = 256  # float16: 2,048 rows a chunk of 1 MiB


def _vectors(n_layers: int, n_rows: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n_layers, n_rows, DIM)).astype(np.float16)


def _write(paths: dict[int, Path], vectors: np.ndarray, **final) -> None:
    with ShardSetWriter(paths, vectors.shape[1], DIM, "float16", ATTRIBUTES) as writer:
        writer.write(0, vectors)
        writer.commit({"n_missing": 0, **final})


def _names(directory: Path) -> list[str]:
    return sorted(path.name for path in directory.iterdir())


def _damage(path: Path, dataset: str, chunk: int, size: int) -> None:
    """Overwrite `size` bytes of chunk `chunk` of `dataset` with random bytes, then touch."""
    with h5py.File(path, "r") as handle:
        stored = handle[dataset]
        if stored.chunks is None:  # contiguous, as before checksums
            offset = stored.id.get_offset() + chunk * stored.dtype.itemsize
        else:
            offset = stored.id.get_chunk_info(chunk).byte_offset
    with open(path, "r+b") as handle:
        handle.seek(offset)
        handle.write(np.random.default_rng(1).bytes(size))
    os.utime(path)


# --------------------------------------------------------------------------------------
# damaged files
# --------------------------------------------------------------------------------------


def test_a_shard_damaged_on_disk_is_refused_naming_it_and_how_to_rebuild(tmp_path):
    """64 KiB of random bytes in the middle of a shard: reading it, whole or some rows, is
    one ShardMismatchError that names the file and says how to rebuild it."""
    path = tmp_path / "layer_3.h5"
    vectors = _vectors(1, 6000)
    _write({3: path}, vectors)
    np.testing.assert_array_equal(load_shard(path, "abc", 6000, dtype=None)[0], vectors[0])
    _damage(path, "vectors", chunk=1, size=64 * 1024)
    for rows in (None, np.array([0, 5999])):
        with pytest.raises(ShardMismatchError, match="damaged") as caught:
            load_shard(path, "abc", 6000, rows=rows)
        message = str(caught.value)
        assert str(path) in message and "delete it and rerun snakemake" in message
        assert "\n" not in message


def test_a_shard_copied_over_another_layer_s_name_is_refused(tmp_path):
    """``cp layer_4.h5 layer_3.h5``: read as layer 3, the shard is refused in one line
    naming both layers; read for what it holds, it is accepted."""
    paths = {3: tmp_path / "layer_3.h5", 4: tmp_path / "layer_4.h5"}
    vectors = _vectors(2, 100)
    _write(paths, vectors)
    copied = tmp_path / "copied" / "layer_3.h5"
    copied.parent.mkdir()
    copied.write_bytes(paths[4].read_bytes())
    np.testing.assert_array_equal(
        load_shard(paths[3], "abc", 100, expected_extraction(None, 3), dtype=None)[0], vectors[0]
    )
    with pytest.raises(ShardMismatchError, match="holds layer 4, not layer 3") as caught:
        load_shard(copied, "abc", 100, expected_extraction(None, 3))
    assert str(copied) in str(caught.value) and "\n" not in str(caught.value)
    assert load_shard(copied, "abc", 100, expected_extraction(None, 4))[1]["layer"] == 4
    assert expected_extraction(None) is None


@pytest.mark.parametrize("layers", [None, [2, 0]])
def test_a_job_s_settings_expect_the_hash_the_extraction_recorded(tiny_bert_dir, layers):
    """A measure or geometry job is given the model's vector settings (its layers left
    out) and builds the model's settings from them: it expects a shard to hold the hash
    of that same record, whichever layers the config lists."""
    from contextuality import backends
    from contextuality.files.provenance import config_hash
    from contextuality.workflow import vector_settings

    config = {"models": {"tiny": {"source": str(tiny_bert_dir), "layers": layers}}}
    recorded = vector_settings(config, "tiny")
    expected = expected_extraction(backends.model_settings("tiny", recorded), 1)
    assert expected == {
        "model_id": str(tiny_bert_dir),
        "pooling": recorded["pooling"],
        "config_hash": config_hash(recorded),
        "layer": 1,
    }


@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_rows_without_a_vector_must_match_n_missing(tmp_path, dtype):
    """A shard written without checksums (before them) is still read, but one holding
    other NaN rows than its extraction recorded (``n_missing``) is refused."""
    path = tmp_path / "layer_0.h5"
    vectors = _vectors(1, 10)[0].astype(dtype)
    vectors[[2, 7]] = np.nan
    with h5py.File(path, "w") as handle:
        handle.create_dataset("vectors", data=vectors)
        handle.attrs.update({"index_checksum": "abc", "complete": True, "n_missing": 2})
    read, _ = load_shard(path, "abc", 10)
    assert np.isnan(read[[2, 7]]).all() and np.isfinite(np.delete(read, [2, 7], 0)).all()
    with h5py.File(path, "r+") as handle:
        handle["vectors"][4, 1] = np.inf  # a damaged value
    with pytest.raises(ShardMismatchError, match="3 rows have no vector but its extraction left 2"):
        load_shard(path, "abc", 10)


def test_a_part_with_other_nan_rows_than_recorded_is_refused(tmp_path):
    """Each part of a partitioned extraction is checked against its own ``n_missing``; an
    attribute changed after the shard was written is damage."""
    paths = [tmp_path / f"part_{part}" / "layer_0.h5" for part in range(2)]
    vectors = _vectors(1, 8)
    vectors[0, 6] = np.nan

    def write(part: int, n_missing: int) -> None:
        with ShardSetWriter({0: paths[part]}, 4, DIM, "float16", ATTRIBUTES) as writer:
            writer.write(0, vectors[:, 4 * part : 4 * part + 4])
            part_attributes = {"part": part, "n_parts": 2, "first_row": 4 * part}
            writer.commit({"n_missing": n_missing, "n_rows_total": 8, **part_attributes})

    write(0, 0)
    write(1, 1)
    read, whole = load_shard_parts(paths, "abc", 8)
    assert whole["n_missing"] == 1 and np.isnan(read[6]).all()
    with h5py.File(paths[1], "r+") as handle:
        handle.attrs["n_missing"] = 0
    with pytest.raises(ShardMismatchError, match="attributes differ from the digest") as caught:
        load_shard_parts(paths, "abc", 8)
    assert str(paths[1]) in str(caught.value)
    write(1, 0)
    with pytest.raises(ShardMismatchError, match="1 rows have no vector") as caught:
        load_shard_parts(paths, "abc", 8)
    assert str(paths[1]) in str(caught.value)


def test_a_damaged_state_file_is_refused(tmp_path):
    rng = np.random.default_rng(2)
    sentence_id = np.repeat(np.arange(50), 4)
    word_id = rng.integers(0, 10, size=len(sentence_id))
    path = tmp_path / "layer_1.state.h5"
    with StreamingAccumulator(
        {1: path},
        word_id,
        sentence_id,
        DIM,
        ATTRIBUTES,
        StreamingSettings(baseline_sample_size=20, sample_replicates=2),
    ) as accumulator:
        accumulator.write(0, rng.standard_normal((1, len(word_id), DIM)))
        accumulator.commit({})
    assert load_state(path, "abc").sums.n == len(word_id)
    _damage(path, "word_unit_sum", chunk=0, size=64)
    with pytest.raises(ShardMismatchError, match="damaged") as caught:
        load_state(path, "abc")
    assert str(path) in str(caught.value) and "delete it and rerun" in str(caught.value)


# --------------------------------------------------------------------------------------
# a full disk
# --------------------------------------------------------------------------------------


def test_the_space_needed_counts_whole_chunks(tmp_path):
    """3,000 rows are stored in two chunks of 2,048 rows: 4,096 rows' bytes, which the
    file really takes (plus a few kB of HDF5's own)."""
    assert shard_bytes(3000, 2, DIM, "float16") == 2 * 4096 * DIM * 2
    assert shard_bytes(2048, 1, DIM, "float16") == 2048 * DIM * 2
    assert shard_bytes(10, 1, DIM, "float32") == 10 * DIM * 4  # one chunk of the rows there are
    path = tmp_path / "layer_0.h5"
    _write({0: path}, _vectors(1, 3000))
    assert shard_bytes(3000, 1, DIM, "float16") <= path.stat().st_size
    assert path.stat().st_size <= shard_bytes(3000, 1, DIM, "float16") + 64 * 1024


def _ended_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def test_stale_partials_are_removed_before_the_free_space_check(tmp_path, monkeypatch):
    """A killed run's temporary shard does not count against the rerun that replaces it;
    a running writer's does."""
    directory = tmp_path / "m"
    directory.mkdir()
    host = socket.gethostname()
    stale = directory / f".layer_0.h5.partial-{_ended_pid()}-0@{host}"
    stale.write_bytes(bytes(600_000))
    budget = shard_bytes(3000, 1, DIM, "float16") + 300_000

    def disk_usage(path):
        used = sum(file.stat().st_size for file in directory.iterdir())
        return SimpleNamespace(free=budget - used)

    monkeypatch.setattr("shutil.disk_usage", disk_usage)
    _write({0: directory / "layer_0.h5"}, _vectors(1, 3000))
    assert _names(directory) == ["layer_0.h5"]
    (directory / "layer_0.h5").unlink()
    stale.write_bytes(bytes(600_000))
    live = directory / f".layer_0.h5.partial-{os.getppid()}-0@{host}"
    live.write_bytes(bytes(600_000))
    with pytest.raises(StorageError, match="the shards need"):
        _write({0: directory / "layer_0.h5"}, _vectors(1, 3000))
    assert _names(directory) == [live.name]


def test_the_disk_message_suggests_float16_only_to_float32_shards(tmp_path, monkeypatch):
    monkeypatch.setattr("shutil.disk_usage", lambda path: SimpleNamespace(free=0))
    for dtype, suggested in (("float16", False), ("float32", True)):
        with pytest.raises(StorageError, match="extract fewer layers") as caught:
            ShardSetWriter({0: tmp_path / "layer_0.h5"}, 10, DIM, dtype, ATTRIBUTES)
        assert ("store float16" in str(caught.value)) == suggested
    assert _names(tmp_path) == []


def _disk_full(*args, **kwargs):
    raise OSError(errno.ENOSPC, "No space left on device")


def test_a_full_disk_while_writing_is_one_storage_error_and_leaves_nothing(tmp_path, monkeypatch):
    paths = {layer: tmp_path / f"layer_{layer}.h5" for layer in range(2)}
    _write(paths, _vectors(2, 10))
    monkeypatch.setattr(h5py.Dataset, "__setitem__", _disk_full)
    with (
        pytest.raises(StorageError, match="the disk filled up") as caught,
        ShardSetWriter({0: tmp_path / "new" / "layer_0.h5"}, 10, DIM, "float16", ATTRIBUTES) as w,
    ):
        w.write(0, _vectors(1, 10))
    assert str(tmp_path / "new") in str(caught.value) and "\n" not in str(caught.value)
    assert _names(tmp_path / "new") == []
    assert _names(tmp_path) == ["layer_0.h5", "layer_1.h5", "new"]


def _state_accumulator(path: Path, sentence_id: np.ndarray) -> StreamingAccumulator:
    word_id = np.arange(len(sentence_id)) % 10
    settings = StreamingSettings(baseline_sample_size=20, sample_replicates=2)
    return StreamingAccumulator({1: path}, word_id, sentence_id, DIM, ATTRIBUTES, settings)


def test_streamed_state_files_check_the_disk_and_fail_a_full_one_in_one_line(tmp_path, monkeypatch):
    sentence_id = np.repeat(np.arange(50), 4)
    path = tmp_path / "states" / "layer_1.state.h5"
    with monkeypatch.context() as patch:
        patch.setattr("shutil.disk_usage", lambda directory: SimpleNamespace(free=100))
        with pytest.raises(StorageError, match=r"the state files need .* 1e-07 GB free") as caught:
            _state_accumulator(path, sentence_id)
    assert "float16" not in str(caught.value) and _names(path.parent) == []
    monkeypatch.setattr(h5py.Dataset, "__setitem__", _disk_full)
    with (
        pytest.raises(StorageError, match="the disk filled up"),
        _state_accumulator(path, sentence_id) as accumulator,
    ):
        accumulator.write(0, np.ones((1, len(sentence_id), DIM)))
    assert _names(path.parent) == []


def test_a_full_disk_during_an_extraction_is_one_storage_error(
    tiny_bert_dir, tmp_path, monkeypatch
):
    """The extraction's writer thread meets the full disk; the run stops with StorageError
    and no shard or temporary file is left."""
    bert = load_model(ModelSettings(name="tiny-bert", source=str(tiny_bert_dir)))
    units = sentence_units(bert, ["The cat sat.", "A dog ran in the park."])
    paths = {layer: tmp_path / f"layer_{layer}.h5" for layer in (0, 1)}
    monkeypatch.setattr(h5py.Dataset, "__setitem__", _disk_full)
    with pytest.raises(StorageError, match="the disk filled up"):
        extract_into_shards(bert, units, (0, 1), paths, {"index_checksum": "i"})
    assert _names(tmp_path) == []


def test_a_full_disk_when_committing_moves_no_layer(tmp_path, monkeypatch):
    paths = {layer: tmp_path / f"layer_{layer}.h5" for layer in range(3)}
    writer = ShardSetWriter(paths, 10, DIM, "float16", ATTRIBUTES)
    writer.write(0, _vectors(3, 10))
    closed = []
    close = h5py.File.close

    def close_once_then_fail(handle):
        if closed:
            _disk_full()
        closed.append(handle)
        close(handle)

    monkeypatch.setattr(h5py.File, "close", close_once_then_fail)
    with pytest.raises(StorageError, match="the disk filled up"):
        writer.commit({})
    assert _names(tmp_path) == []


def test_abort_never_raises_and_removes_every_temporary_file(tmp_path, monkeypatch):
    paths = {layer: tmp_path / f"layer_{layer}.h5" for layer in range(3)}
    writer = ShardSetWriter(paths, 10, DIM, "float16", ATTRIBUTES)
    writer.write(0, _vectors(3, 10))
    assert len(_names(tmp_path)) == 3
    monkeypatch.setattr(h5py.File, "close", _disk_full)
    writer.abort()
    assert _names(tmp_path) == []


def test_layers_are_moved_into_place_all_or_none(tmp_path, monkeypatch):
    """A rename that fails while an extraction's shards are moved into place takes back
    those already moved: the earlier shards stay as they were, and no new one appears."""
    paths = {layer: tmp_path / f"layer_{layer}.h5" for layer in range(3)}
    before = _vectors(2, 10, seed=1)
    _write({0: paths[0], 1: paths[1]}, before)
    replace = os.replace
    failed = []

    def fail_once_onto_layer_1(source, destination):
        if Path(destination) == paths[1] and not failed:
            failed.append(source)
            raise OSError(errno.EIO, "Input/output error")
        replace(source, destination)

    monkeypatch.setattr(os, "replace", fail_once_onto_layer_1)
    with pytest.raises(OSError, match="Input/output error"):
        _write(paths, _vectors(3, 10, seed=2))
    assert failed and _names(tmp_path) == ["layer_0.h5", "layer_1.h5"]
    for layer in (0, 1):
        np.testing.assert_array_equal(
            load_shard(paths[layer], "abc", 10, dtype=None)[0], before[layer]
        )


# --------------------------------------------------------------------------------------
# temporary files of several writers
# --------------------------------------------------------------------------------------


def test_a_temporary_name_records_its_process_and_host(tmp_path):
    name = partial_path(tmp_path / "layer_0.h5").name
    assert name.startswith(f".layer_0.h5.partial-{os.getpid()}-")
    assert name.endswith(f"@{socket.gethostname()}")


def _partials(directory: Path, final: str) -> dict[str, Path]:
    """Temporary files of `final` by a running process, an ended one (with and without a
    host in the name) and one on another host."""
    ended, host = _ended_pid(), socket.gethostname()
    owners = {
        "running": f"{os.getppid()}-0@{host}",
        "ended": f"{ended}-0@{host}",
        "ended, no host": f"{ended}-1",
        "elsewhere": f"{ended}-2@another-{host}",
    }
    partials = {}
    for owner, suffix in owners.items():
        partials[owner] = directory / f".{final}.partial-{suffix}"
        partials[owner].write_bytes(b"half a file")
    return partials


def test_only_ended_writers_temporary_shards_are_removed(tmp_path):
    """A second extraction into a directory (or a job beside ``snakemake --unlock``) keeps
    the temporary shards of a writer still running, and of one on another host."""
    partials = _partials(tmp_path, "layer_0.h5")
    _write({0: tmp_path / "layer_0.h5"}, _vectors(1, 10))
    assert partials["running"].exists() and partials["elsewhere"].exists()
    assert not partials["ended"].exists() and not partials["ended, no host"].exists()


def test_atomic_writes_remove_ended_writers_temporary_files(tmp_path):
    """The temporary file of a killed measure or figure job is removed by the next write."""
    partials = _partials(tmp_path, "summary.json")
    write_json(tmp_path / "summary.json", {"a": 1})
    assert partials["running"].exists() and partials["elsewhere"].exists()
    assert not partials["ended"].exists() and not partials["ended, no host"].exists()
