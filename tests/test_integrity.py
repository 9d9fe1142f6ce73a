"""Every kind of file one job writes and another reads, damaged on disk: random bit flips
and overwritten bytes are refused in one line naming the file, or read back identical;
never other values read without complaint, never a raw exception."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from contextuality.benchmarks import ScoringSettings
from contextuality.errors import ContextualityError
from contextuality.files.provenance import read_json, write_json
from contextuality.files.tables import (
    check_against_sidecar,
    read_parquet,
    read_provenance,
    read_tsv,
    write_parquet,
    write_tsv,
)
from contextuality.steps.static import score_static
from contextuality.storage.shards import ShardSetWriter, load_shard
from contextuality.storage.word_vectors import write_word2vec_text
from contextuality.streaming.accumulate import StreamingAccumulator
from contextuality.streaming.state import StreamingSettings, load_state

FLIPS = 150


def _frame(n_rows: int = 200) -> pd.DataFrame:
    """A table like a layer's word measures: ids, words, counts, float measures, NaNs."""
    rng = np.random.default_rng(0)
    selfsim = rng.random(n_rows)
    selfsim[::17] = np.nan
    return pd.DataFrame(
        {
            "word_id": np.arange(n_rows, dtype=np.int64),
            "word": [f"w{i}" for i in range(n_rows)],
            "n_contexts": rng.integers(5, 90, n_rows).astype(np.int32),
            "selfsim": selfsim,
            "norm": rng.random(n_rows) * 10,
            "kept": rng.random(n_rows) > 0.5,
        }
    )


def _outcomes(path: Path, read: Callable[[Path], object], same: Callable[[object], bool], damages):
    """Read `path` after each damage (a function of the original bytes giving the damaged
    ones): counts of refused reads and of identical reads. A read giving other values, a
    refusal of more than one line or not naming the file, or any other exception fails."""
    original = path.read_bytes()
    refused = identical = 0
    for damage in damages:
        path.write_bytes(damage(original))
        try:
            value = read(path)
        except ContextualityError as error:
            message = str(error)
            assert str(path) in message and "\n" not in message, message
            refused += 1
            continue
        assert same(value), f"damaged {path.name} read as other values"
        identical += 1
    path.write_bytes(original)
    return refused, identical


def _bit_flips(size: int, seed: int = 0) -> list[Callable[[bytes], bytes]]:
    """`FLIPS` single-bit flips at random offsets of a file of `size` bytes."""
    rng = np.random.default_rng(seed)

    def flip(offset: int, bit: int) -> Callable[[bytes], bytes]:
        def damaged(data: bytes) -> bytes:
            changed = bytearray(data)
            changed[offset] ^= 1 << bit
            return bytes(changed)

        return damaged

    return [
        flip(int(o), int(b))
        for o, b in zip(rng.integers(0, size, FLIPS), rng.integers(0, 8, FLIPS), strict=True)
    ]


def _overwrites(size: int, step: int) -> list[Callable[[bytes], bytes]]:
    """Four bytes overwritten at every `step`-th offset (HDF5's metadata included)."""

    def overwrite(offset: int) -> Callable[[bytes], bytes]:
        return lambda data: data[:offset] + b"\xde\xad\xbe\xef" + data[offset + 4 :]

    return [overwrite(offset) for offset in range(0, size - 4, step)]


def test_a_damaged_parquet_table_is_refused_or_read_identical(tmp_path):
    path = tmp_path / "layer_3.parquet"
    frame = _frame()
    write_parquet(frame, path, {"layer": 3, "model": "m"})
    pd.testing.assert_frame_equal(read_parquet(path), frame)
    refused, identical = _outcomes(
        path, read_parquet, lambda read: read.equals(frame), _bit_flips(path.stat().st_size)
    )
    assert refused > 0.75 * FLIPS and refused + identical == FLIPS  # the rest: unread bytes
    # the provenance alone is read checked too: a flip in the footer is no other layer
    refused, _ = _outcomes(
        path,
        read_provenance,
        lambda read: read == {"layer": 3, "model": "m"},
        _bit_flips(path.stat().st_size, seed=1),
    )
    assert refused > 0.75 * FLIPS


def test_a_table_from_elsewhere_is_not_read_as_one_of_ours(tmp_path):
    path = tmp_path / "x.parquet"
    _frame().to_parquet(path)
    with pytest.raises(ContextualityError, match="no content digest"):
        read_parquet(path)


def test_a_damaged_summary_is_refused_or_read_identical(tmp_path):
    """The issue's example first: one digit of a layer summary's value changed."""
    path = tmp_path / "layer_3.json"
    summary = {"selfsim": {"raw": 0.1735733863, "n": 355}, "layer": 3, "words": ["a", "b"]}
    write_json(path, summary)
    assert read_json(path) == summary
    path.write_text(path.read_text().replace("0.1735733863", "0.1735773863"))
    with pytest.raises(ContextualityError, match="damaged"):
        read_json(path)
    write_json(path, summary)
    refused, identical = _outcomes(
        path, read_json, lambda read: read == summary, _bit_flips(path.stat().st_size)
    )
    assert refused + identical == FLIPS and refused > 0.6 * FLIPS  # whitespace flips are harmless


def test_a_damaged_tsv_table_is_refused(tmp_path):
    path = tmp_path / "measures.tsv"
    frame = _frame()
    write_tsv(frame, path, {"step": "measures_table"})
    refused, identical = _outcomes(
        path, read_tsv, lambda read: False, _bit_flips(path.stat().st_size)
    )
    assert (refused, identical) == (FLIPS, 0)
    path.with_suffix(".provenance.json").unlink()
    with pytest.raises(ContextualityError, match="provenance.json beside it"):
        read_tsv(path)


def test_damaged_static_vectors_are_refused_before_scoring(tmp_path):
    path = tmp_path / "layer_3.txt"
    matrix = np.random.default_rng(0).standard_normal((20, 4)).astype(np.float32)
    write_word2vec_text(path, [f"w{i}" for i in range(20)], matrix, {"layer": 3})
    sidecar = Path(f"{path}.json")
    assert check_against_sidecar(path, sidecar)["n_words"] == 20
    refused, identical = _outcomes(
        path,
        lambda damaged: check_against_sidecar(damaged, sidecar),
        lambda read: False,
        _bit_flips(path.stat().st_size),
    )
    assert (refused, identical) == (FLIPS, 0)
    path.write_bytes(path.read_bytes().replace(b"w3 ", b"w4 ", 1))
    labels = {"model": "m", "method": "pc1", "layer": 3, "source": "x", "protocol": "all"}
    with pytest.raises(ContextualityError, match="damaged"):
        score_static(path, tmp_path, ScoringSettings(benchmarks=()), labels, tmp_path / "s.tsv")


def test_a_damaged_shard_is_refused_or_read_identical(tmp_path):
    """Four bytes overwritten at every 8th offset of a shard, its HDF5 metadata (superblock,
    object headers, attributes, the chunk index) and data alike."""
    path = tmp_path / "layer_3.h5"
    vectors = np.random.default_rng(0).standard_normal((1, 300, 16)).astype(np.float16)
    with ShardSetWriter({3: path}, 300, 16, "float16", {"index_checksum": "abc"}) as writer:
        writer.write(0, vectors)
        writer.commit({"n_missing": 0})
    refused, identical = _outcomes(
        path,
        lambda damaged: load_shard(damaged, "abc", 300, dtype=None)[0],
        lambda read: np.array_equal(read, vectors[0]),
        _overwrites(path.stat().st_size, 8),
    )
    assert refused > 0.5 * (refused + identical)


def test_a_damaged_state_file_is_refused_or_read_identical(tmp_path):
    rng = np.random.default_rng(2)
    sentence_id = np.repeat(np.arange(30), 4)
    word_id = rng.integers(0, 6, size=len(sentence_id))
    path = tmp_path / "layer_1.state.h5"
    settings = StreamingSettings(baseline_sample_size=20, sample_replicates=2)
    with StreamingAccumulator({1: path}, word_id, sentence_id, 8, {}, settings) as accumulator:
        accumulator.write(0, rng.standard_normal((1, len(word_id), 8)))
        accumulator.commit({"index_checksum": "abc"})
    state = load_state(path, "abc")

    def same(read) -> bool:
        fields = ("word_unit_sum", "word_vector_sum", "word_context_square", "unit_sum")
        return (
            read.sums.n == state.sums.n
            and all(
                np.array_equal(getattr(read.sums, name), getattr(state.sums, name))
                for name in fields
            )
            and np.array_equal(read.kept_vectors, state.kept_vectors, equal_nan=True)
        )

    refused, identical = _outcomes(
        path, lambda damaged: load_state(damaged, "abc"), same, _overwrites(path.stat().st_size, 16)
    )
    assert refused > 0.2 * (refused + identical)  # the rest: bytes HDF5 does not read
