"""HDF5's fletcher32 checksum of a chunk, computed where the chunk's values already are.

A shard's chunks each carry HDF5's fletcher32 checksum (`hdf5.LayerFiles`), which HDF5
computes byte by byte on one thread as it writes: on a GPU node that capped the shards'
writing at 0.6 of what the disk takes. Computed on the GPU for a whole segment at once
(`fletcher32`, in torch), the chunks can go to the file as they are
(``write_direct_chunk``, `shards.ShardSetWriter`), and HDF5 still verifies each on reading.

HDF5's definition (H5checksum.c, ``H5_checksum_fletcher32``) reads the chunk as 16-bit
big-endian words w_1..w_n and keeps two sums, reduced modulo 65535 by folding the carry
((s & 0xffff) + (s >> 16)) every 360 words; the folds preserve the residue and never turn
a positive sum into 0, so the result is exactly

    s1 = S1 mod 65535,  S1 = Σ_i w_i;    s2 = S2 mod 65535,  S2 = Σ_i (n − i + 1) w_i

with a residue of 0 written 65535 unless the sum itself is 0 (every word 0), and the
checksum (s2 << 16) | s1, stored after the chunk's bytes, little-endian. Chunks of an even
number of bytes only (float16 and float32 rows).
"""

from __future__ import annotations

from typing import Any

import numpy as np

MODULUS = 65535
CHECKSUM_BYTES = 4
# Words summed at once: n·65535·n < 2^63 for n up to 2^24 words (32 MiB chunks).
_MAX_WORDS = 1 << 24
_GROUP_BYTES = 256 << 20  # of int64 products held at once


def _folded(total: Any, nonzero: Any) -> Any:
    """A sum's 16-bit fletcher value: its residue modulo 65535, 65535 for a positive
    multiple, 0 for 0 (`nonzero`: where the sum is positive)."""
    residue = total % MODULUS
    return residue + MODULUS * ((residue == 0) & nonzero)


def fletcher32_reference(chunk: bytes | np.ndarray) -> int:
    """HDF5's fletcher32 of one chunk's bytes, in numpy (for checks; `fletcher32` is the
    fast one)."""
    raw = np.frombuffer(memoryview(chunk).cast("B"), dtype=np.uint8)
    if len(raw) % 2:
        raise ValueError("fletcher32 here takes chunks of an even number of bytes")
    words = raw.view(">u2").astype(np.int64)
    n = len(words)
    s1 = int(words.sum())
    s2 = int(((n - np.arange(n, dtype=np.int64)) * words).sum())
    return int(_folded(s2, s2 > 0)) << 16 | int(_folded(s1, s1 > 0))


def fletcher32(chunks: Any) -> Any:
    """HDF5's fletcher32 of each chunk of a torch tensor, on the tensor's device.

    chunks: (n_chunks, ...) a tensor of a 2- or 4-byte dtype, each row the chunk's values
    in storage order (C order, little-endian, as h5py writes them). Returns (n_chunks,)
    int64 checksums, exact (integer arithmetic throughout).
    """
    import torch

    n_chunks = chunks.shape[0]
    if n_chunks == 0:
        return torch.zeros(0, dtype=torch.int64, device=chunks.device)
    words = chunks.contiguous().view(torch.int16).reshape(n_chunks, -1).to(torch.int32)
    if words.shape[1] > _MAX_WORDS:
        raise ValueError(f"chunks of more than {_MAX_WORDS} 16-bit words")
    words &= 0xFFFF  # as unsigned
    words = ((words & 0xFF) << 8) | (words >> 8)  # the little-endian bytes read big-endian
    n = words.shape[1]
    weights = torch.arange(n, 0, -1, dtype=torch.int64, device=words.device)
    s1 = words.sum(dim=1, dtype=torch.int64)
    group = max(1, _GROUP_BYTES // (8 * n))
    s2 = torch.cat(
        [
            (words[first : first + group].to(torch.int64) * weights).sum(dim=1)
            for first in range(0, n_chunks, group)
        ]
    )
    return _folded(s2, s2 > 0) << 16 | _folded(s1, s1 > 0)
