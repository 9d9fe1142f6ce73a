"""A segment's vectors, assembled where the model runs, checked, and handed to the sink.

Each batch's pooled word vectors are converted to the stored dtype on the device, and two
reductions say which of its rows came out ±inf or NaN and how large its largest finite
value is (`pooled_batch`); on CUDA those few values come back to the host asynchronously,
read one batch later (`non_finite_rows`), so the checks never make the GPU wait. The
batch's rows then go into the segment's buffer (`Segment.place`), on the same device: the
whole segment is assembled on the GPU and leaves it once, in one copy into pinned host
memory (`HostCopies`), after the sink has done on the device what it wants done there (a
shard writer's chunk checksums; a streaming sink on the GPU takes the buffer itself).
"""

from __future__ import annotations

import queue
from dataclasses import dataclass
from typing import Any

import numpy as np

from contextuality.backends.base import LoadedModel
from contextuality.errors import NonFiniteValueError, NumericOverflowError
from contextuality.extraction.forward import FLOAT16_MAX, non_finite_cause


@dataclass
class PooledBatch:
    """A batch's pooled vectors on their way into a segment: the segment's inputs it holds
    (`positions`), the dtype its forward pass ran in, the segment rows of its vectors
    (`rows`), the (n_layers, rows, dim) vectors in the stored dtype, where the model ran,
    and their checks (`pooled_batch`)."""

    positions: np.ndarray
    dtype: str
    rows: np.ndarray
    values: Any
    peak: Any
    non_finite: Any
    checked: Any


def pooled_batch(
    positions: np.ndarray, dtype: str, pooled: Any, reached: Any, rows: np.ndarray, stored: str
) -> PooledBatch:
    """A batch's `PooledBatch`: its float32 pooled vectors (n_layers, rows, dim) converted to
    the `stored` dtype, the largest finite |value| of its reached rows and the mask of
    reached rows holding a non-finite value in some layer. On CUDA the two checks are
    copied to pinned host memory asynchronously and a CUDA event marks their arrival."""
    import torch

    # Two reductions and no temporary the size of the batch: a row's largest |value| is
    # NaN or inf exactly when the row holds a non-finite value (unreached rows are NaN).
    row_peak = torch.maximum(pooled.amax(dim=2).amax(dim=0), pooled.amin(dim=2).amin(dim=0).neg())
    non_finite = ~torch.isfinite(row_peak) & reached
    peak = torch.where(reached & ~non_finite, row_peak, 0.0).amax()
    # Rounded to float16 by torch (vectorized; the same rounding, to the bit, as numpy's).
    values = pooled.to(getattr(torch, stored))
    if pooled.device.type != "cuda":
        return PooledBatch(positions, dtype, rows, values, peak, non_finite, None)
    host_peak = torch.empty((), dtype=peak.dtype, pin_memory=True)
    host_mask = torch.empty(non_finite.shape, dtype=torch.bool, pin_memory=True)
    host_peak.copy_(peak, non_blocking=True)
    host_mask.copy_(non_finite, non_blocking=True)
    checked = torch.cuda.Event()
    checked.record()
    return PooledBatch(positions, dtype, rows, values, host_peak, host_mask, checked)


def non_finite_rows(batch: PooledBatch) -> np.ndarray:
    """Wait for a batch's checks; the mask of its rows (``batch.rows``) that some subword
    reached and that hold ±inf or NaN in some layer."""
    if batch.checked is not None:
        batch.checked.synchronize()
    return batch.non_finite.cpu().numpy()


def non_finite_error(
    batch: PooledBatch, non_finite: np.ndarray, first_row: int, loaded: LoadedModel
) -> NonFiniteValueError:
    """The error for a batch whose rows in `non_finite` are ±inf or NaN, naming the first
    (first_row: occurrence id of the segment's first row) and `non_finite_cause`."""
    device = next(loaded.model.parameters()).device.type
    return NonFiniteValueError(
        f"model {loaded.spec.name}: {int(non_finite.sum())} vectors are ±inf or NaN after "
        f"the forward pass (first at occurrence {first_row + batch.rows[non_finite][0]}); "
        + non_finite_cause(loaded.spec, loaded.model, device, batch.dtype)
    )


class Segment:
    """One segment's (n_layers, n_rows, dim) vectors in the stored dtype, on the device
    the model runs on (on the CPU, `host` is the same memory as a numpy array); rows that
    no subword reached are NaN once `finish` ran."""

    def __init__(self, n_layers: int, n_rows: int, dim: int, dtype: str, device: Any) -> None:
        import torch

        self.host = None
        if device.type == "cpu":
            self.host = np.empty((n_layers, n_rows, dim), dtype=dtype)
            self.values = torch.from_numpy(self.host)
        else:
            shape = (n_layers, n_rows, dim)
            self.values = torch.empty(shape, dtype=getattr(torch, dtype), device=device)
        self.filled = torch.zeros(n_rows, dtype=torch.bool, device=device)

    def place(self, batch: PooledBatch, name: str) -> None:
        """Place a checked batch's rows; for a float16 segment, values beyond its range are
        a NumericOverflowError (name: the model's, for the message)."""
        import torch

        peak = float(batch.peak)
        if self.values.dtype == torch.float16 and peak >= FLOAT16_MAX:
            raise NumericOverflowError(f"model {name}: |value| {peak:.4g} does not fit float16")
        rows = torch.from_numpy(batch.rows).to(self.values.device, non_blocking=True)
        self.values.index_copy_(1, rows, batch.values)
        self.filled[rows] = True

    def finish(self) -> None:
        """Set the rows no batch placed to NaN."""
        if not bool(self.filled.all()):
            self.values[:, ~self.filled] = float("nan")


@dataclass
class Handoff:
    """A finished segment on its way to the sink's ``write``: its job-relative first row,
    its vectors (a numpy array, or the device tensor for a sink that takes those), what
    the sink's ``on_device`` gave for it, as host values (None if it has none), the CUDA
    event after which both may be read, and what frees their memory once written."""

    first_row: int
    vectors: Any
    prepared: Any = None
    ready: Any = None
    release: Any = None


class HostCopies:
    """Pinned host buffers that finished segments are copied into from the GPU, `count` of
    them in turn: the copy of a segment waits for a free one, which the writer frees once
    the segment is written (so at most `count` segments' vectors are in host memory)."""

    def __init__(self, count: int = 2) -> None:
        self._free: queue.Queue = queue.Queue()
        for _ in range(count):
            self._free.put(None)

    def copy(self, first_row: int, values: Any, prepared: Any = None) -> Handoff:
        """Start copying a segment's `values` (and `prepared`, a small tensor or None) to
        host memory; a `Handoff` whose ``ready`` event marks the copy's end."""
        import torch

        buffer = self._free.get()
        if buffer is None or buffer.numel() < values.numel() * values.element_size():
            buffer = torch.empty(
                values.numel() * values.element_size(), dtype=torch.uint8, pin_memory=True
            )
        host = buffer[: values.numel() * values.element_size()].view(values.dtype)
        host = host.view(values.shape)
        host.copy_(values, non_blocking=True)
        prepared_host = None
        if prepared is not None:
            prepared_host = torch.empty(prepared.shape, dtype=prepared.dtype, pin_memory=True)
            prepared_host.copy_(prepared, non_blocking=True)
        ready = torch.cuda.Event()
        ready.record()
        return Handoff(
            first_row,
            host.numpy(),
            None if prepared_host is None else prepared_host.numpy(),
            ready,
            lambda: self._free.put(buffer),
        )
