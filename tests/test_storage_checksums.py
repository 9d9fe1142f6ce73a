"""HDF5's fletcher32, computed in torch for whole segments (`storage.checksums`), against
HDF5's own; and shards whose whole chunks are written with those checksums past HDF5's
filter (`ShardSetWriter.on_device`, ``write(..., checksums)``), byte for byte the shards
HDF5's filter writes, read back and verified by HDF5."""

from __future__ import annotations

import h5py
import numpy as np
import pytest
import torch

from contextuality.errors import ShardMismatchError
from contextuality.storage.checksums import fletcher32, fletcher32_reference
from contextuality.storage.shards import ShardSetWriter, load_shard


def _hdf5_checksum(path, values: np.ndarray) -> int:
    """The checksum HDF5's fletcher32 filter stores for `values` as one chunk."""
    with h5py.File(path, "w") as handle:
        dataset = handle.create_dataset("v", data=values, chunks=values.shape, fletcher32=True)
        _, stored = dataset.id.read_direct_chunk((0,) * values.ndim)
    return int.from_bytes(stored[-4:], "little")


def _edge_chunks() -> list[np.ndarray]:
    """Chunks whose sums fold to 0 or 65535: all zeros, all ones (each 16-bit word 0xffff),
    NaN; then random float16 and float32 rows of odd sizes."""
    rng = np.random.default_rng(0)
    ones = np.full((64, 96), 0xFFFF, dtype=np.uint16).view(np.float16)
    return [
        np.zeros((64, 96), np.float16),
        ones,
        np.full((64, 96), np.nan, np.float16),
        # 65535 words of 1 (as big-endian words: the byte pair 00 01): S1 = 65535
        np.frombuffer(bytes([0, 1]) * 65535, dtype=np.float16).reshape(65535, 1).copy(),
        rng.standard_normal((682, 768)).astype(np.float16),
        rng.standard_normal((7, 33)).astype(np.float16),
        rng.standard_normal((5, 33)).astype(np.float32),
    ]


@pytest.mark.parametrize("position", range(len(_edge_chunks())))
def test_fletcher32_is_hdf5_s(tmp_path, position):
    chunk = _edge_chunks()[position]
    stored = _hdf5_checksum(tmp_path / "chunk.h5", chunk)
    assert fletcher32_reference(chunk.tobytes()) == stored
    assert int(fletcher32(torch.from_numpy(chunk.copy())[None])[0]) == stored


def test_fletcher32_takes_many_chunks_at_once(tmp_path):
    """Every chunk of a batch gets its own checksum, in groups of any size."""
    rng = np.random.default_rng(1)
    chunks = rng.standard_normal((9, 50, 40)).astype(np.float16)
    expected = [_hdf5_checksum(tmp_path / f"{k}.h5", chunk) for k, chunk in enumerate(chunks)]
    assert fletcher32(torch.from_numpy(chunks)).tolist() == expected
    assert fletcher32(torch.from_numpy(chunks[:0])).tolist() == []
    with pytest.raises(ValueError, match="even number of bytes"):
        fletcher32_reference(b"abc")


SEGMENTS = [(0, 10_000), (10_000, 10_003), (10_003, 43_210), (43_210, 50_000)]


def _write(directory, data: np.ndarray, direct: bool) -> dict[int, object]:
    """`data` (layers, rows, dim) into shards, segment by segment (`SEGMENTS`), whole
    chunks with `on_device`'s checksums (`direct`) or all through HDF5's filter."""
    paths = {layer: directory / f"layer_{layer}.h5" for layer in range(len(data))}
    directory.mkdir()
    with ShardSetWriter(paths, data.shape[1], data.shape[2], "float16", {"model": "m"}) as sink:
        for first, end in SEGMENTS:
            segment = data[:, first:end]
            if direct:
                checksums = sink.on_device(first, torch.from_numpy(segment.copy())).numpy()
                sink.write(first, segment, checksums)
            else:
                sink.write(first, segment)
        sink.commit({"index_checksum": "i"})
    return paths


def test_whole_chunks_written_directly_are_the_filter_s_bytes(tmp_path):
    """Segments cut through chunks (and one of 3 rows, inside one): every chunk of every
    layer, its checksum included, is the bytes HDF5's filter writes, and reads back."""
    rng = np.random.default_rng(2)
    data = rng.standard_normal((3, 50_000, 96)).astype(np.float16)
    data[1, 7_000:7_100] = np.nan  # rows without a vector
    plain = _write(tmp_path / "plain", data, direct=False)
    direct = _write(tmp_path / "direct", data, direct=True)
    for layer in range(3):
        with h5py.File(plain[layer]) as one, h5py.File(direct[layer]) as other:
            rows = one["vectors"].chunks[0]
            assert rows < 10_000  # several chunks a segment
            for chunk in range(-(-50_000 // rows)):
                offset = (chunk * rows, 0)
                assert one["vectors"].id.read_direct_chunk(offset) == (
                    other["vectors"].id.read_direct_chunk(offset)
                )
        vectors = load_shard(direct[layer], "i", 50_000)[0]
        stored = vectors.astype(np.float16)  # read as float32, exactly
        assert np.array_equal(stored.view(np.uint16), data[layer].view(np.uint16))


def test_a_chunk_written_with_a_wrong_checksum_is_refused_on_reading(tmp_path):
    """HDF5 verifies the checksums written past its filter: a wrong one fails the read."""
    data = np.random.default_rng(3).standard_normal((1, 50_000, 96)).astype(np.float16)
    paths = {0: tmp_path / "layer_0.h5"}
    with ShardSetWriter(paths, 50_000, 96, "float16", {"model": "m"}) as sink:
        checksums = sink.on_device(0, torch.from_numpy(data.copy())).numpy()
        checksums[0, 1] += 1
        sink.write(0, data, checksums)
        sink.commit({"index_checksum": "i"})
    with pytest.raises(ShardMismatchError, match="damaged"):
        load_shard(paths[0], "i", 50_000)
