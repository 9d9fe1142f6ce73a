"""The extraction loop: a model's layers over the corpus, segment by segment, into a sink.

Sentences run in contiguous segments (`partitions.plan_extraction`), so memory is
bounded whatever the corpus size. A segment's inputs are planned into token-budget
batches (`forward.plan_batches`; the budget halved and the rest replanned on CUDA
out-of-memory), each batch's pooled vectors land in the segment's buffer on the device
the model runs on (`segments.Segment`; a batch that overflows float16 or bfloat16 is run
again in float32), and the finished segment goes to the *sink*, the object that keeps
the vectors: shards (`storage.shards.ShardSetWriter`) or running sums
(`streaming.accumulate`), written by a thread of its own so that the model does not wait
for the disk. From a GPU a segment leaves in one copy to pinned host memory
(`segments.HostCopies`), after the sink's own work on the device (``on_device``), unless
the sink takes device tensors. On a GPU the next segment's inputs are built on a helper
thread while the model runs; on the CPU, whose cores the forward pass takes, in turn. Row
i of what the sink receives is occurrence i of the index, less the job's first row.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol

import numpy as np

from contextuality.backends.base import LoadedModel, token_budget
from contextuality.errors import DeviceMemoryError, NumericOverflowError
from contextuality.extraction.ablation import ablated, check_block_extracted
from contextuality.extraction.collector import collector_sparing_live_objects
from contextuality.extraction.forward import (
    blocks_to_run,
    first_non_finite_weight,
    forward_batch,
    forward_dtype,
    model_batches,
    plan_batches,
    wider_dtypes,
)
from contextuality.extraction.parity import ParityCheck, SegmentParity
from contextuality.extraction.partitions import ExtractionPlan
from contextuality.extraction.progress import ExtractionProgress
from contextuality.extraction.report import ExtractionReport, count_coverage
from contextuality.extraction.segments import (
    Handoff,
    HostCopies,
    PooledBatch,
    Segment,
    non_finite_error,
    non_finite_rows,
    pooled_batch,
)
from contextuality.extraction.units import EncodedSentence, SentenceUnits

log = logging.getLogger(__name__)


class Sink(Protocol):
    """Where an extraction's vectors go: ``write`` receives each segment's
    (n_layers, n_rows, dim) vectors and the job-relative row of its first row, in order;
    ``commit`` records final attributes and puts the outputs in place; ``abort`` removes
    what was written. Leaving its context aborts whatever was not committed.
    dtype: what the vectors are stored as, and so handed over as (float16 or float32);
    bytes_to_write: what it will store on disk (0 for one that keeps sums).

    Optional, for a model on a GPU: ``on_device(first_row, vectors)``, given the segment
    as a device tensor before it is copied to the host, returns a tensor that ``write``
    then receives as host values, its third argument (a shard writer's chunk checksums);
    ``takes_device_tensors = True``: ``write`` receives the device tensor itself (a sink
    that sums on the GPU).
    """

    layers: list[int]
    dtype: str
    bytes_to_write: int

    def write(self, first_row: int, vectors: np.ndarray) -> None: ...

    def commit(self, attributes: dict[str, Any]) -> None: ...

    def abort(self) -> None: ...

    def __enter__(self) -> Sink: ...

    def __exit__(self, kind: Any, value: Any, traceback: Any) -> None: ...


class _BackgroundWriter:
    """Hands segments (`segments.Handoff`) to a sink on a separate thread, so the model
    never waits for disk: each once its copy from the device is done, its memory freed
    after it is written.

    At most one segment waits in the queue; an error in the thread is raised on the next
    call from the main thread.
    """

    def __init__(self, writer: Sink) -> None:
        self._writer = writer
        self._queue: queue.Queue = queue.Queue(maxsize=1)
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="sink-writer", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while (item := self._queue.get()) is not None:
            try:
                if self._error is None:
                    self._write(item)
            except BaseException as error:  # re-raised in the main thread
                self._error = error
            finally:
                if item.release is not None:
                    item.release()

    def _write(self, item: Handoff) -> None:
        if item.ready is not None:
            item.ready.synchronize()
        if item.prepared is None:
            self._writer.write(item.first_row, item.vectors)
        else:
            self._writer.write(item.first_row, item.vectors, item.prepared)

    def _raise_if_failed(self) -> None:
        if self._error is not None:
            raise self._error

    def write(self, item: Handoff) -> None:
        self._raise_if_failed()
        self._queue.put(item)

    def close(self) -> None:
        """Wait for every queued segment to be written."""
        if self._thread.is_alive():
            self._queue.put(None)
            self._thread.join()
        self._raise_if_failed()


def _one_ahead(executor: ThreadPoolExecutor, function: Any, items: list) -> Iterator[Any]:
    """Yield ``function(item)`` for each item in order, computing the next one ahead.

    Unlike ``executor.map``, at most one result waits, so memory stays bounded.
    """
    future = executor.submit(function, items[0]) if items else None
    for position in range(len(items)):
        result = future.result()
        if position + 1 < len(items):
            future = executor.submit(function, items[position + 1])
        yield result


def _replan_after_out_of_memory(
    error: BaseException,
    batch: np.ndarray,
    planned: list[np.ndarray],
    lengths: np.ndarray,
    report: ExtractionReport,
    device: Any,
    name: str,
) -> list[np.ndarray]:
    """Halve the token budget and plan the failed batch and the rest again; a single input
    that does not fit is a DeviceMemoryError."""
    import torch

    if len(batch) == 1:
        raise DeviceMemoryError(
            f"model {name}: one input of {lengths[batch[0]]:,} subwords does not fit in "
            f"device memory even alone; set models.{name}.max_length lower (with "
            f"models.{name}.long_sentences: window, longer sentences are read in windows)"
        ) from error
    if device.type == "cuda":
        torch.cuda.empty_cache()
    report.token_budget = max(1, report.token_budget // 2)
    report.out_of_memory_retries += 1
    log.warning("out of memory: token budget now %d", report.token_budget)
    remaining = np.concatenate([batch, *planned])
    return [remaining[part] for part in plan_batches(lengths[remaining], report.token_budget)]


def _run_segment(
    loaded: LoadedModel,
    encoded: list[EncodedSentence],
    layers: tuple[int, ...],
    first_rows: np.ndarray,
    segment: Segment,
    first_row: int,
    report: ExtractionReport,
    told: ExtractionProgress,
    parity: SegmentParity | None = None,
) -> None:
    """Run one segment's inputs in token-budget batches, in ``report.forward_dtype``, and
    place their pooled vectors in `segment`, each batch counted in `told`; each batch's
    checks are read while the next batch runs (`_finished` may run one again, in turn).
    Rows that no subword reached are NaN. `parity` keeps its sampled inputs' rows from
    their batches, then runs them alone (`parity.SegmentParity`)."""
    import torch

    device = next(loaded.model.parameters()).device
    lengths = np.array([len(sentence.input_ids) for sentence in encoded])
    name = loaded.spec.name
    stored = str(segment.values.dtype).removeprefix("torch.")

    def launch(positions: np.ndarray, dtype: str) -> PooledBatch:
        inputs = [encoded[i] for i in positions]
        pooled, reached, rows = forward_batch(loaded, inputs, layers, first_rows, dtype)
        if parity is not None:
            parity.keep(positions, pooled, rows, dtype)
        return pooled_batch(positions, dtype, pooled, reached, rows, stored)

    def replan(error: BaseException, batch: np.ndarray, rest: list[np.ndarray]) -> list:
        return _replan_after_out_of_memory(error, batch, rest, lengths, report, device, name)

    def finish(batch: PooledBatch) -> None:
        for done in _finished(batch, launch, replan, loaded, first_row, report):
            segment.place(done, name)
            report.n_batches += 1
            report.n_subword_tokens += int(lengths[done.positions].sum())
            told.batch(done.positions)

    pending = None
    planned = model_batches(loaded, lengths, report.token_budget)
    while planned:
        batch = planned.pop(0)
        try:
            in_flight = launch(batch, report.forward_dtype)
        except torch.OutOfMemoryError as error:
            planned = replan(error, batch, planned)
            continue
        if pending is not None:
            finish(pending)
        pending = in_flight
    if pending is not None:
        finish(pending)
    segment.finish()
    if parity is not None:
        parity.compare(loaded, layers)


def _finished(
    batch: PooledBatch,
    launch: Callable[[np.ndarray, str], PooledBatch],
    replan: Callable[..., list[np.ndarray]],
    loaded: LoadedModel,
    first_row: int,
    report: ExtractionReport,
) -> list[PooledBatch]:
    """Wait for a batch's checks and return the batches whose vectors to keep: the batch
    itself if its reached rows are finite; else, where it ran in float16 or bfloat16, the
    model's weights are finite and no state carries from one input to the next (not
    ``sequential``: those states have moved on), its inputs run again in float32, counted
    in `report`. Otherwise, or where they are still ±inf or NaN, a NonFiniteValueError
    naming the cause."""
    non_finite = non_finite_rows(batch)
    if not non_finite.any():
        return [batch]
    rerun = batch.dtype != "float32" and not loaded.sequential
    if not rerun or first_non_finite_weight(loaded.model) is not None:
        raise non_finite_error(batch, non_finite, first_row, loaded)
    report.batches_rerun_in_float32 += 1
    return [
        done
        for part in _run_in_float32(batch.positions, launch, replan)
        for done in _finished(part, launch, replan, loaded, first_row, report)
    ]


def _run_in_float32(
    positions: np.ndarray,
    launch: Callable[[np.ndarray, str], PooledBatch],
    replan: Callable[..., list[np.ndarray]],
) -> list[PooledBatch]:
    """The inputs at `positions` run in float32: as one batch, or, where that runs out of
    device memory, in the smaller batches `replan` makes."""
    import torch

    try:
        return [launch(positions, "float32")]
    except torch.OutOfMemoryError as error:
        smaller = replan(error, positions, [])
    return [part for batch in smaller for part in _run_in_float32(batch, launch, replan)]


def run_extraction(
    loaded: LoadedModel,
    units: SentenceUnits,
    plan: ExtractionPlan,
    sink: Sink,
    progress: bool = True,
    before_commit: Callable[[], None] | None = None,
    *,
    seed: int,
) -> ExtractionReport:
    """Extract `plan`'s layers for every unit of its sentences into `sink`, and commit it
    (after `before_commit`, which may refuse the extraction, and the parity check of a
    seeded sample of its sentences run alone, `parity.ParityCheck`, which refuses one whose
    batches differ from them; seed: the run's, which draws the sample).

    Rows follow sentence order then unit order, the order of the occurrence index built
    from the same sentences (see `units.sentence_units`). Values beyond float16's range
    raise NumericOverflowError when the sink stores float16 (`extract` may retry with
    float32). The sink is aborted on any error.
    """
    started = time.perf_counter()
    with sink:
        if list(sink.layers) != list(plan.layers):
            raise ValueError(f"the sink takes layers {sink.layers}, not {list(plan.layers)}")
        if plan.partitioned:
            _log_part(plan, loaded.spec.name)
        if loaded.sequential:
            loaded.model.reset_states()
        device = next(loaded.model.parameters()).device
        report = ExtractionReport(
            n_sentences=plan.end_sentence - plan.first_sentence,
            n_occurrences=plan.n_rows,
            device=str(device),
            token_budget=token_budget(loaded.spec, device.type),
            forward_dtype=forward_dtype(device, loaded.spec),
            autocast=device.type == "cuda" and not loaded.holds_forward_dtype,
            shard_bytes=sink.bytes_to_write,
            blocks_run=blocks_to_run(loaded, plan.layers),
            subwords_spanning_words=units.subwords_spanning_words,
            words_sharing_subwords=units.words_sharing_subwords,
            subwords_outside_words=units.subwords_outside_words,
            partition=plan.part_attributes() or None,
        )
        parity = ParityCheck.planned(loaded, plan, report.forward_dtype, seed)
        with collector_sparing_live_objects():
            _run_segments(loaded, units, plan, sink, report, progress, parity)
        _warn_about_reruns(report, loaded.spec.name)
        report.storage_dtype = sink.dtype
        report.seconds = time.perf_counter() - started
        report.parity = parity.record()
        parity.refuse_if_beyond_tolerance()
        if before_commit is not None:
            before_commit()
        missing = report.words_truncated + report.words_without_tokens
        sink.commit({"n_missing": missing, "parity": report.parity})
    return report


def _warn_about_reruns(report: ExtractionReport, name: str) -> None:
    """One warning for all the batches that overflowed their dtype and ran again."""
    if report.batches_rerun_in_float32:
        log.warning(
            "model %s: %d of %d batches gave ±inf or NaN in %s and were run again in "
            "float32; set models.%s.cuda_dtype to %s to run every batch so",
            name,
            report.batches_rerun_in_float32,
            report.n_batches,
            report.forward_dtype,
            name,
            wider_dtypes(report.forward_dtype),
        )


def _run_segments(
    loaded: LoadedModel,
    units: SentenceUnits,
    plan: ExtractionPlan,
    sink: Sink,
    report: ExtractionReport,
    progress: bool,
    parity: ParityCheck,
) -> None:
    """Run every segment of `plan` in order and hand its vectors to `sink`, through a
    writer thread (`_handoff` says how they leave the device); with `progress`, its
    start, its sentences and words done between batches, and its end told on the console
    (`ExtractionProgress`). Each segment's sampled sentences are run alone too (`parity`)."""
    device = next(loaded.model.parameters()).device
    writer = _BackgroundWriter(sink)
    copies = HostCopies() if device.type == "cuda" else None
    tokenizing = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tokenize")
    what = loaded.spec.name + (f" (part {plan.part + 1} of {plan.n_parts})" * plan.partitioned)
    n_sentences = plan.end_sentence - plan.first_sentence
    told = ExtractionProgress(what, n_sentences, plan.n_rows, len(plan.layers), device, progress)
    try:
        encodings = _encoded_segments(units, plan, report.device, tokenizing)
        for (start, end), encoded in zip(plan.segments, encodings, strict=True):
            count_coverage(encoded, plan.row_offsets[start:end], report)
            first_row = int(plan.row_offsets[start])
            n_rows = int(plan.row_offsets[end]) - first_row
            segment = Segment(len(plan.layers), n_rows, loaded.hidden_size, sink.dtype, device)
            first_rows = plan.row_offsets[start:end] - first_row
            checked = parity.segment(encoded, start, first_rows)
            told.segment(encoded)
            _run_segment(
                loaded, encoded, plan.layers, first_rows, segment, first_row, report, told, checked
            )
            writer.write(_handoff(segment, first_row - plan.first_row, sink, copies))
        told.finish()
    finally:
        tokenizing.shutdown(cancel_futures=True)
        writer.close()


def _handoff(segment: Segment, first_row: int, sink: Sink, copies: HostCopies | None) -> Handoff:
    """A finished segment as the sink takes it: the CPU's array as it is; from a GPU, the
    device tensor for a sink that takes those, else a copy in pinned host memory, with
    what the sink's ``on_device`` made of the tensor first."""
    if copies is None:
        return Handoff(first_row, segment.host)
    if getattr(sink, "takes_device_tensors", False):
        return Handoff(first_row, segment.values)
    on_device = getattr(sink, "on_device", None)
    prepared = None if on_device is None else on_device(first_row, segment.values)
    return copies.copy(first_row, segment.values, prepared)


def _log_part(plan: ExtractionPlan, name: str) -> None:
    """Say which sentences and rows a part of a partitioned extraction runs."""
    log.info(
        "%s: part %d of %d (0-based): sentences %d to %d, rows %d to %d of %d",
        name,
        plan.part,
        plan.n_parts,
        plan.first_sentence,
        plan.end_sentence,
        plan.first_row,
        plan.first_row + plan.n_rows,
        int(plan.row_offsets[-1]),
    )


def _encoded_segments(
    units: SentenceUnits, plan: ExtractionPlan, device: str, executor: ThreadPoolExecutor
) -> Iterator[list[EncodedSentence]]:
    """The model inputs of each segment of `plan`, in order: on a GPU built one segment
    ahead on `executor` while the model runs; on the CPU, whose every core the forward pass
    takes, in turn (a thread tokenizing beside it slows it more than waiting costs)."""

    def encode(bounds: tuple[int, int]) -> list[EncodedSentence]:
        return units.encode(*bounds)

    if device == "cpu":
        return map(encode, plan.segments)
    return _one_ahead(executor, encode, plan.segments)


def extract(
    loaded: LoadedModel,
    units: SentenceUnits,
    plan: ExtractionPlan,
    open_sink: Callable[[str], Sink],
    progress: bool = True,
    *,
    seed: int,
) -> ExtractionReport:
    """`run_extraction` into ``open_sink(dtype)`` (seed: the run's, which draws the parity
    check's sentences), in the model's ``storage_dtype``: with
    ``auto``, float16 first and, if a value overflows it, the whole job again into a fresh
    float32 sink (logged, and recorded as ``stored_float32_after_overflow``); with
    ``float16``, an overflow is a NumericOverflowError naming the setting. A model with an
    ablation runs with it in place (`ablation.ablated`), recorded in the report; one that
    replaced nothing is refused before anything is committed."""
    check_block_extracted(loaded, list(plan.layers))
    with ablated(loaded, units) as ablation:
        check = None if ablation is None else ablation.check_replaced
        report = _extract_as_stored(loaded, units, plan, open_sink, progress, check, seed)
    report.ablation = None if ablation is None else ablation.record
    return report


def _extract_as_stored(
    loaded: LoadedModel,
    units: SentenceUnits,
    plan: ExtractionPlan,
    open_sink: Callable[[str], Sink],
    progress: bool,
    before_commit: Callable[[], None] | None,
    seed: int,
) -> ExtractionReport:
    """`extract`'s choice of the storage dtype."""
    spec = loaded.spec
    if spec.storage_dtype == "auto":
        try:
            return run_extraction(
                loaded, units, plan, open_sink("float16"), progress, before_commit, seed=seed
            )
        except NumericOverflowError as error:
            log.warning("%s; storing model %s as float32 instead", error, spec.name)
            report = run_extraction(
                loaded, units, plan, open_sink("float32"), progress, before_commit, seed=seed
            )
            report.stored_float32_after_overflow = True
            return report
    try:
        sink = open_sink(spec.storage_dtype)
        return run_extraction(loaded, units, plan, sink, progress, before_commit, seed=seed)
    except NumericOverflowError as error:
        raise NumericOverflowError(
            f"{error}; set models.{spec.name}.storage_dtype: float32 (or auto)"
        ) from error
