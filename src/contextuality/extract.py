"""One forward pass of a model over the corpus, writing one HDF5 shard per layer.

Each sentence is tokenized once, as running text, and each subword is given to the unit
(shard row) it serves: for word units the word whose character span its own span overlaps
(`align_to_words`), for subword units itself. Sentences are then processed in contiguous
*blocks* of about 16k units, so memory is bounded whatever the corpus size. Inside a block
their inputs (windows of long sentences included) are sorted by length and packed into
batches whose padded size stays within a token budget (halved and retried on CUDA
out-of-memory). On CUDA the forward pass runs under float16 (or bfloat16) autocast; each
batch's subword vectors are pooled into unit vectors on the device and copied to pinned
host memory once, asynchronously, while the next batch is launched. The next block's
inputs are built on a helper thread, and a finished block is written to every layer's
shard as one contiguous slab by a writer thread, so row i of each shard is occurrence i of
the index and the model does not wait for the tokenizer or the disk."""

from __future__ import annotations

import contextlib
import logging
import queue
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from contextuality.errors import (
    ConfigError,
    DeviceMemoryError,
    ModelLoadError,
    NonFiniteValueError,
    NumericOverflowError,
    StorageError,
)
from contextuality.models import LONG_SENTENCE_MODES, LoadedModel, only_blocks_up_to
from contextuality.shards import ShardSetWriter
from contextuality.words import word_spans

FLOAT16_MAX = 65504.0
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class EncodedSentence:
    """One model input: subword ids (for ELMo, one row of character ids per word) and, per
    token, the word it gives its vector to.

    ``word_index`` is the word's position in its sentence, or -1 for special tokens and,
    in window mode, for subwords whose word takes its vector from another window.
    ``sentence`` is the position of the sentence in the list that was encoded.
    """

    input_ids: np.ndarray
    word_index: np.ndarray
    n_words: int
    truncated: bool
    sentence: int = 0


@dataclass
class ExtractionReport:
    """What one extraction did; stored in the model's meta.json.

    ``non_finite_vectors`` counts vectors that were ±inf or NaN after the forward pass; an
    extraction that meets one is refused, so a written meta.json always records 0.
    ``blocks_run``: the blocks each forward pass ran (up to the last layer asked for);
    ``shard_bytes``: the size of the vectors written. ``partition``: for one part of a
    partitioned extraction, which part and which rows (see `extract_to_shards`); its keys
    are written beside the others, and nothing when the extraction is whole.
    """

    n_sentences: int = 0
    n_occurrences: int = 0
    n_subword_tokens: int = 0
    n_batches: int = 0
    sentences_truncated: int = 0
    words_truncated: int = 0
    words_without_tokens: int = 0
    sentences_windowed: int = 0
    out_of_memory_retries: int = 0
    non_finite_vectors: int = 0
    subwords_spanning_words: int = 0
    subwords_outside_words: int = 0
    token_budget: int = 0
    storage_dtype: str = "float16"
    device: str = "cpu"
    seconds: float = 0.0
    shard_bytes: int = 0
    blocks_run: int = 0
    partition: dict[str, int] | None = None

    @property
    def tokens_per_second(self) -> float:
        return self.n_subword_tokens / self.seconds if self.seconds else 0.0

    def as_dict(self) -> dict[str, Any]:
        values = asdict(self)
        partition = values.pop("partition") or {}
        return {**values, **partition, "tokens_per_second": round(self.tokens_per_second, 1)}


def _window_assignment(word_ids: list[list[int]]) -> list[list[int]]:
    """For overlapping windows of one sentence, keep each word only in its most central window.

    A word's centrality in a window is the smallest distance of its subwords to the
    window's first or last content subword; ties go to the earlier window.
    """
    scores: dict[int, dict[int, int]] = {}
    for window, ids in enumerate(word_ids):
        content = [position for position, word in enumerate(ids) if word >= 0]
        for position, word in enumerate(ids):
            if word >= 0:
                score = min(position - content[0], content[-1] - position)
                per_window = scores.setdefault(word, {})
                per_window[window] = min(score, per_window.get(window, score))
    chosen = {
        word: max(per_window, key=lambda window: (per_window[window], -window))
        for word, per_window in scores.items()
    }
    return [
        [word if word >= 0 and chosen[word] == window else -1 for word in ids]
        for window, ids in enumerate(word_ids)
    ]


@dataclass(frozen=True)
class RunningTextEncoding:
    """One sentence tokenized as running text: the subword ids of its content, the special
    tokens the tokenizer puts before and after it (e.g. ``[CLS]`` and ``[SEP]``), and the
    character span [start, end) of each content subword in the sentence."""

    prefix: list[int]
    content: list[int]
    suffix: list[int]
    offsets: list[tuple[int, int]]


def encode_running_text(tokenizer: Any, sentences: list[str]) -> list[RunningTextEncoding]:
    """Tokenize whole sentences once, as running text (no truncation), splitting the special
    tokens from the content. A special token between content subwords is an error: a
    sentence's subwords must be contiguous."""
    if not sentences:  # an empty part of a partitioned extraction
        return []
    encoding = tokenizer(
        sentences,
        add_special_tokens=True,
        return_special_tokens_mask=True,
        return_offsets_mapping=True,
    )
    result = []
    for sentence, ids, special, offsets in zip(
        sentences,
        encoding["input_ids"],
        encoding["special_tokens_mask"],
        encoding["offset_mapping"],
        strict=True,
    ):
        content = [position for position, flag in enumerate(special) if not flag]
        first, last = (content[0], content[-1] + 1) if content else (len(ids), len(ids))
        if last - first != len(content):
            raise ModelLoadError(f"special tokens inside the subwords of {sentence!r}")
        spans = [(int(start), int(end)) for start, end in offsets[first:last]]
        result.append(RunningTextEncoding(ids[:first], ids[first:last], ids[last:], spans))
    return result


def subword_units(tokenizer: Any, encodings: list[RunningTextEncoding]) -> list[list[str]]:
    """The content subwords of each sentence as the tokenizer writes them (``##s``, ``Ġdog``)."""
    return [tokenizer.convert_ids_to_tokens(encoding.content) for encoding in encodings]


@dataclass(frozen=True)
class Alignment:
    """Which unit (shard row of the sentence) each content subword gives its vector to.

    token_unit: (n_subwords,) unit index, or -1 for a subword that belongs to no unit.
    spanning: subwords whose characters overlap two or more words (given to the first).
    outside: subwords that overlap no word (e.g. a piece that is only a space).
    """

    token_unit: np.ndarray
    n_units: int
    spanning: int = 0
    outside: int = 0


def align_to_words(offsets: list[tuple[int, int]], spans: list[tuple[int, int]]) -> Alignment:
    """Give each subword to the word whose character span it overlaps.

    offsets: the subwords' spans in the sentence, in order; spans: the words' spans, in
    order and disjoint. A subword overlapping several words goes to the first; one with an
    empty span or overlapping none goes to no word.
    """
    if not offsets:
        return Alignment(np.zeros(0, dtype=np.int64), len(spans))
    starts = np.array([start for start, _ in spans], dtype=np.int64)
    ends = np.array([end for _, end in spans], dtype=np.int64)
    subword_start = np.array([start for start, _ in offsets], dtype=np.int64)
    subword_end = np.array([end for _, end in offsets], dtype=np.int64)
    first = np.searchsorted(ends, subword_start, side="right")  # first word ending after it
    padded_starts = np.append(starts, np.iinfo(np.int64).max)
    overlaps = (subword_end > subword_start) & (padded_starts[first] < subword_end)
    spanning = overlaps & (padded_starts[np.minimum(first + 1, len(spans))] < subword_end)
    return Alignment(
        token_unit=np.where(overlaps, first, -1),
        n_units=len(spans),
        spanning=int(spanning.sum()),
        outside=int((~overlaps).sum()),
    )


def _window_starts(n_subwords: int, length: int, overlap: int) -> list[int]:
    """First subword of each window of `length` subwords over `n_subwords`, consecutive
    windows sharing `overlap` subwords; the last window ends at the last subword."""
    if n_subwords <= length:
        return [0]
    step = length - overlap
    if step < 1:
        raise ConfigError(f"window overlap {overlap} leaves no step in a window of {length}")
    return [*range(0, n_subwords - length, step), n_subwords - length]


def encode_inputs(
    tokenizer: Any,
    encodings: list[RunningTextEncoding],
    alignments: list[Alignment],
    max_length: int,
    add_bos: bool,
    long_sentences: str = "truncate",
    window_overlap: int | None = None,
) -> list[EncodedSentence]:
    """Model inputs of the encoded sentences, each subword marked with the unit it serves.

    An input is a sentence's special prefix, its content subwords and its special suffix,
    at most `max_length` tokens (with `add_bos`, the tokenizer's BOS token first, for
    GPT-2 style models). A longer sentence is truncated (``long_sentences="truncate"``: the
    units whose subwords are all cut get no vector) or split into windows of content that
    overlap by `window_overlap` subwords (``"window"``; default a quarter of the input),
    each unit taking its vector from the window where it is most central.
    """
    if long_sentences not in LONG_SENTENCE_MODES:
        raise ConfigError(f"long_sentences must be one of {LONG_SENTENCE_MODES}")
    if add_bos and tokenizer.bos_token_id is None:
        raise ConfigError("add_bos is set but the tokenizer has no BOS token")
    bos = [tokenizer.bos_token_id] if add_bos else []
    inputs = []
    for sentence, (encoding, alignment) in enumerate(zip(encodings, alignments, strict=True)):
        n_subwords = len(encoding.content)
        length = max_length - len(bos) - len(encoding.prefix) - len(encoding.suffix)
        if length < 1:
            raise ConfigError(f"max_length {max_length} leaves no room for content subwords")
        if long_sentences == "window":
            overlap = (max_length - len(bos)) // 4 if window_overlap is None else window_overlap
            starts = _window_starts(n_subwords, length, overlap)
        else:
            starts = [0]
        windows = [np.arange(start, min(start + length, n_subwords)) for start in starts]
        units = [alignment.token_unit[window].tolist() for window in windows]
        if len(windows) > 1:
            units = _window_assignment(units)
        for window, window_units in zip(windows, units, strict=True):
            content = [encoding.content[position] for position in window]
            inputs.append(
                EncodedSentence(
                    input_ids=np.asarray(
                        bos + encoding.prefix + content + encoding.suffix, dtype=np.int64
                    ),
                    word_index=np.asarray(
                        [-1] * (len(bos) + len(encoding.prefix))
                        + window_units
                        + [-1] * len(encoding.suffix),
                        dtype=np.int64,
                    ),
                    n_words=alignment.n_units,
                    truncated=len(windows) == 1 and n_subwords > length,
                    sentence=sentence,
                )
            )
    return inputs


def plan_batches(lengths: np.ndarray, token_budget: int) -> list[np.ndarray]:
    """Group items into batches of similar length, longest first.

    Each batch's padded size (its longest item × its item count) is at most
    `token_budget`, except that an item longer than the budget is batched alone.
    Returns arrays of item positions; every item appears exactly once.
    """
    order = np.argsort(-np.asarray(lengths), kind="stable")
    batches, current, longest = [], [], 0
    for item in order:
        length = int(lengths[item])
        if current and max(longest, length) * (len(current) + 1) > token_budget:
            batches.append(np.asarray(current))
            current, longest = [], 0
        current.append(item)
        longest = max(longest, length)
    if current:
        batches.append(np.asarray(current))
    return batches


def model_batches(loaded: LoadedModel, lengths: np.ndarray, token_budget: int) -> list[np.ndarray]:
    """The batches a model runs its inputs in: `plan_batches` by token budget, or, for a
    model that must see them one at a time in corpus order (`LoadedModel.sequential`),
    one input per batch in order."""
    if loaded.sequential:
        return [np.array([item]) for item in range(len(lengths))]
    return plan_batches(lengths, token_budget)


def pool_subwords(hidden: Any, token_word: Any, n_words: int, pooling: str) -> tuple[Any, Any]:
    """Pool subword vectors into word vectors, on the tensors' device.

    hidden: the (n_tokens, dim) subword vectors of each layer of a batch, flattened: a
    sequence of tensors, or one (n_layers, n_tokens, dim) tensor.
    token_word: (n_tokens,) word row of each subword, -1 for special and padding tokens.
    Returns (n_layers, n_words, dim) float32 word vectors, NaN for words with no
    subword, and the (n_words,) subword count of each word. Each layer is pooled straight
    from its own tensor: no stacked or gathered copy of the batch's states is made.
    """
    import torch

    keep = token_word >= 0
    rows = token_word[keep]
    counts = torch.bincount(rows, minlength=n_words)
    dim = hidden[0].shape[-1]
    # One extra row takes the special and padding tokens (mean pooling adds every token,
    # so no gathered copy of the kept ones is made); it is dropped at the end.
    pooled = torch.zeros(len(hidden), n_words + 1, dim, device=token_word.device)
    if pooling == "mean":
        target = torch.where(keep, token_word, n_words)
        for layer, states in enumerate(hidden):
            pooled[layer].index_add_(0, target, states.to(pooled.device, torch.float32))
        pooled = pooled[:, :n_words]
        pooled /= counts.clamp(min=1).to(pooled.dtype)[None, :, None]
    else:
        # Subwords of a word are contiguous; the first (last) is where the word changes.
        # (No wrap-around: with a single word in the batch, rows[0] == rows[-1].)
        boundary = torch.ones_like(rows, dtype=torch.bool)
        if pooling == "first":
            boundary[1:] = rows[1:] != rows[:-1]
        else:
            boundary[:-1] = rows[:-1] != rows[1:]
        chosen = keep.nonzero().flatten()[boundary]
        pooled = pooled[:, :n_words]
        for layer, states in enumerate(hidden):
            pooled[layer, rows[boundary]] = states[chosen.to(states.device)].to(pooled)
    pooled[:, counts == 0] = float("nan")
    return pooled, counts


def _forward_batch(
    loaded: LoadedModel,
    batch: list[EncodedSentence],
    layers: tuple[int, ...],
    first_rows: np.ndarray,
) -> tuple[Any, Any, np.ndarray]:
    """Run one padded batch and pool its subwords into word vectors on the device.

    first_rows: block row of each encoded sentence's first word (by ``sentence``).
    Returns (n_layers, n_rows, dim) float32 vectors, a (n_rows,) device mask of the rows
    that some subword reached (the others are NaN by design) and the block rows.
    """
    import torch

    device = next(loaded.model.parameters()).device
    longest = max(len(sentence.input_ids) for sentence in batch)
    pad_id = loaded.tokenizer.pad_token_id
    pad_id = 0 if pad_id is None else pad_id
    # A token is an id, or for ELMo a row of character ids.
    token_shape = batch[0].input_ids.shape[1:]
    input_ids = np.full((len(batch), longest, *token_shape), pad_id, dtype=np.int64)
    attention = np.zeros((len(batch), longest), dtype=np.int64)
    token_row = np.full((len(batch), longest), -1, dtype=np.int64)
    for position, sentence in enumerate(batch):
        length = len(sentence.input_ids)
        input_ids[position, :length] = sentence.input_ids
        attention[position, :length] = 1
        rows = first_rows[sentence.sentence] + sentence.word_index
        token_row[position, :length] = np.where(sentence.word_index >= 0, rows, -1)
    rows = np.unique(token_row[token_row >= 0])
    compact = np.where(token_row >= 0, np.searchsorted(rows, token_row), -1)
    last = blocks_to_run(loaded, layers)
    with (
        torch.inference_mode(),
        autocast(device, loaded.spec.cuda_dtype),
        only_blocks_up_to(loaded.blocks if last < loaded.n_layers else None, last),
        _final_norm_input(loaded, cut_short=last < loaded.n_layers) as before_norm,
    ):
        output = loaded.model(
            input_ids=torch.from_numpy(input_ids).to(device, non_blocking=True),
            attention_mask=torch.from_numpy(attention).to(device, non_blocking=True),
            output_hidden_states=True,
        )
        states = list(output.hidden_states)
        if before_norm is not None:
            states[-1] = before_norm["input"]
        hidden = [states[layer].reshape(-1, states[layer].shape[-1]) for layer in layers]
        token_word = torch.from_numpy(compact.reshape(-1)).to(device, non_blocking=True)
        pooled, counts = pool_subwords(hidden, token_word, len(rows), loaded.spec.pooling)
    return pooled, counts > 0, rows


def blocks_to_run(loaded: LoadedModel, layers: tuple[int, ...]) -> int:
    """How many blocks a forward pass needs for `layers`: up to the last one asked for (at
    least one: a model without blocks is not a shape every model accepts), where the
    model's blocks can be cut short (`LoadedModel.blocks`), else all."""
    return max(1, *layers) if loaded.blocks is not None else loaded.n_layers


@contextlib.contextmanager
def _final_norm_input(
    loaded: LoadedModel, cut_short: bool = False
) -> Iterator[dict[str, Any] | None]:
    """A dict that receives the final norm's input during the forward pass (the last
    block's output before normalization), where the last hidden state must be that input:
    with ``last_layer: before_final_norm``, or when the pass was cut short (`cut_short`)
    in a model that normalizes the last state it returns. Else None."""
    cut_before_norm = cut_short and loaded.returns_after_final_norm
    if not (loaded.takes_last_layer_before_final_norm or cut_before_norm):
        yield None
        return
    captured: dict[str, Any] = {}
    _, norm = loaded.final_norm
    handle = norm.register_forward_hook(
        lambda module, inputs, output: captured.update(input=inputs[0])
    )
    try:
        yield captured
    finally:
        handle.remove()


def autocast(device: Any, cuda_dtype: str) -> Any:
    """Mixed-precision context for the forward pass: `cuda_dtype` on CUDA, fp32 elsewhere."""
    import torch

    enabled = device.type == "cuda" and cuda_dtype != "float32"
    return torch.autocast(device.type, dtype=getattr(torch, cuda_dtype), enabled=enabled)


@dataclass
class _InFlight:
    """A batch whose pooled vectors are on their way to host memory."""

    rows: np.ndarray
    host: Any
    peak: Any
    non_finite: Any
    copied: Any


def _start_copy(pooled: Any, reached: Any, storage_dtype: str) -> tuple[Any, Any, Any, Any]:
    """Start the one device→host copy of a batch (pinned memory, asynchronous on CUDA).

    Returns the host tensor, the largest finite |value| and the mask of reached rows with a
    non-finite value in some layer (both still on the device, so the checks do not wait for
    the GPU), and a CUDA event marking the copy's end (or None).
    """
    import torch

    # Two reductions and no temporary the size of the batch: a row's largest |value| is
    # NaN or inf exactly when the row holds a non-finite value (unreached rows are NaN).
    row_peak = torch.maximum(pooled.amax(dim=2).amax(dim=0), pooled.amin(dim=2).amin(dim=0).neg())
    non_finite = ~torch.isfinite(row_peak) & reached
    peak = torch.where(reached & ~non_finite, row_peak, 0.0).amax()
    values = pooled.to(getattr(torch, storage_dtype))
    if values.device.type != "cuda":
        return values, peak, non_finite, None
    host = torch.empty(values.shape, dtype=values.dtype, pin_memory=True)
    host.copy_(values, non_blocking=True)
    copied = torch.cuda.Event()
    copied.record()
    return host, peak, non_finite, copied


class _BackgroundWriter:
    """Writes blocks to the shards on a separate thread, so the model never waits for disk.

    At most one block waits in the queue; an error in the thread is raised on the next
    call from the main thread.
    """

    def __init__(self, writer: ShardSetWriter) -> None:
        self._writer = writer
        self._queue: queue.Queue = queue.Queue(maxsize=1)
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="shard-writer", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while (item := self._queue.get()) is not None:
            if self._error is None:
                try:
                    self._writer.write(*item)
                except BaseException as error:  # re-raised in the main thread
                    self._error = error

    def _raise_if_failed(self) -> None:
        if self._error is not None:
            raise self._error

    def write(self, first_row: int, block: np.ndarray) -> None:
        self._raise_if_failed()
        self._queue.put((first_row, block))

    def close(self) -> None:
        """Wait for every queued block to be written."""
        if self._thread.is_alive():
            self._queue.put(None)
            self._thread.join()
        self._raise_if_failed()


BLOCK_WORDS = 16_384
BLOCK_BYTES = 256 * 2**20


def default_block_words(n_layers: int, dim: int) -> int:
    """Words per block of an extraction: as many as 256 MiB of float16 vectors of `n_layers`
    layers of width `dim` hold, at least 16,384. Batches are planned within a block, so a
    block of more sentences pads less (MiniLM on 2,680 STS sentences in blocks of 16,384
    words padded 11% more than in one block); the bytes bound keeps the host memory of the
    few blocks in flight small. Independent of the storage dtype, so that a float32 retry
    and every part of a partitioned extraction run the same blocks."""
    return max(BLOCK_WORDS, BLOCK_BYTES // (n_layers * dim * 2))


def block_words_of(loaded: LoadedModel, layers: tuple[int, ...]) -> int:
    """The words per block an extraction of `layers` runs in: the model's ``block_words``
    setting, else `default_block_words`."""
    return loaded.spec.block_words or default_block_words(len(layers), loaded.hidden_size)


def _blocks(words_per_sentence: np.ndarray, block_words: int) -> list[tuple[int, int]]:
    """Contiguous sentence ranges [start, end) holding about `block_words` words each."""
    blocks, start, filled = [], 0, 0
    for sentence, n_words in enumerate(words_per_sentence):
        if filled and filled + n_words > block_words:
            blocks.append((start, sentence))
            start, filled = sentence, 0
        filled += int(n_words)
    blocks.append((start, len(words_per_sentence)))
    return blocks


def partition_bounds(
    rows_per_sentence: np.ndarray, n_parts: int, block_rows: int = BLOCK_WORDS
) -> list[tuple[int, int]]:
    """Split the sentences into `n_parts` contiguous ranges [start, end), balanced by rows.

    rows_per_sentence: (n_sentences,) units (shard rows) of each sentence, in corpus order.
    Parts are cut only where the extraction starts a block of about `block_rows` rows
    (`extract_to_shards` with ``block_words=block_rows``), each cut at the block start
    nearest to k·total/n_parts rows: a part then runs exactly the batches the whole
    extraction runs for its sentences, so its rows are the whole extraction's rows, bit for
    bit wherever the forward pass is deterministic (a cut inside a block would regroup its
    batches, and other padding and batch shapes change the last bits of a forward pass). Each
    part holds total/n_parts rows give or take one block's rows (at most `block_rows`, or
    one sentence's where a sentence alone has more); ``block_rows=1`` cuts between any two
    sentences, balanced within one sentence's rows.

    Returns exactly `n_parts` ranges, in order, covering 0..n_sentences. When there are
    fewer blocks (or sentences) than parts, some parts are empty (start == end); the
    extraction of an empty part writes shards of 0 rows. Raises ConfigError when `n_parts`
    is not an integer ≥ 1.
    """
    if isinstance(n_parts, bool) or not isinstance(n_parts, int | np.integer) or n_parts < 1:
        raise ConfigError(f"the number of partitions must be an integer of at least 1: {n_parts!r}")
    counts = np.asarray(rows_per_sentence, dtype=np.int64)
    if counts.ndim != 1 or (counts < 0).any():
        raise ValueError("rows_per_sentence must be a 1-D array of non-negative counts")
    cuts = np.array([start for start, _ in _blocks(counts, block_rows)] + [len(counts)])
    before = np.concatenate([[0], np.cumsum(counts)])[cuts]  # rows before each cut
    # Integer arithmetic: cut k is the one whose n_parts·rows is nearest k·total (ties: later).
    scaled = before * n_parts
    targets = np.arange(1, n_parts, dtype=np.int64) * int(before[-1])
    above = np.minimum(np.searchsorted(scaled, targets, side="left"), len(cuts) - 1)
    below = np.maximum(above - 1, 0)
    nearer_below = targets - scaled[below] < scaled[above] - targets
    edges = [0, *cuts[np.where(nearer_below, below, above)].tolist(), len(counts)]
    return [(int(edges[k]), int(edges[k + 1])) for k in range(n_parts)]


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


def _count_coverage(encoded: list[EncodedSentence], report: ExtractionReport) -> None:
    """Add a block's truncated, windowed and token-less sentences and words to the report."""
    present: dict[int, set[int]] = {}
    inputs: dict[int, list[EncodedSentence]] = {}
    for sentence in encoded:
        present.setdefault(sentence.sentence, set()).update(
            sentence.word_index[sentence.word_index >= 0].tolist()
        )
        inputs.setdefault(sentence.sentence, []).append(sentence)
    for owner, parts in inputs.items():
        n_words, words = parts[0].n_words, present[owner]
        truncated = any(part.truncated for part in parts)
        cut = n_words - (max(words, default=-1) + 1) if truncated else 0
        report.sentences_truncated += int(truncated)
        report.sentences_windowed += int(len(parts) > 1)
        report.words_truncated += cut
        report.words_without_tokens += n_words - cut - len(words)


@dataclass(frozen=True)
class SentenceUnits:
    """The units (shard rows) of every sentence and how to encode sentences for the model.

    counts: units per sentence, shape (n_sentences,). encode(start, end): the model inputs
    of sentences [start, end), numbered from 0 within that range. subwords_spanning_words,
    subwords_outside_words: the alignment's counts over the corpus (see `Alignment`).
    """

    counts: np.ndarray
    encode: Callable[[int, int], list[EncodedSentence]]
    subwords_spanning_words: int = 0
    subwords_outside_words: int = 0


def _units(
    loaded: LoadedModel, encodings: list[RunningTextEncoding], alignments: list[Alignment]
) -> SentenceUnits:
    spec = loaded.spec
    return SentenceUnits(
        counts=np.array([alignment.n_units for alignment in alignments], dtype=np.int64),
        encode=lambda start, end: encode_inputs(
            loaded.tokenizer,
            encodings[start:end],
            alignments[start:end],
            loaded.max_length,
            spec.add_bos,
            spec.long_sentences,
            spec.window_overlap,
        ),
        subwords_spanning_words=sum(alignment.spanning for alignment in alignments),
        subwords_outside_words=sum(alignment.outside for alignment in alignments),
    )


def word_inputs(
    loaded: LoadedModel, sentences: list[str], spans: list[list[tuple[int, int]]]
) -> SentenceUnits:
    """Word units: the running text's subwords, each pooled into the word whose character
    span it overlaps (`align_to_words`); for ELMo, the words themselves, one token each."""
    if loaded.spec.loader == "elmo":
        encodings = [
            loaded.tokenizer.encode(sentence, sentence_spans)
            for sentence, sentence_spans in zip(sentences, spans, strict=True)
        ]
    else:
        encodings = encode_running_text(loaded.tokenizer, sentences)
    alignments = [
        align_to_words(encoding.offsets, sentence_spans)
        for encoding, sentence_spans in zip(encodings, spans, strict=True)
    ]
    return _units(loaded, encodings, alignments)


def subword_inputs(loaded: LoadedModel, encodings: list[RunningTextEncoding]) -> SentenceUnits:
    """Subword units: each content subword of the running text is a row of its own."""
    alignments = [
        Alignment(np.arange(len(encoding.content)), len(encoding.content)) for encoding in encodings
    ]
    return _units(loaded, encodings, alignments)


def sentence_units(
    loaded: LoadedModel, sentences: list[str], spans: list[list[tuple[int, int]]] | None = None
) -> SentenceUnits:
    """The units of `sentences` for the model's ``units`` setting: the words at `spans`
    (default: the ``regex`` word tokenizer's) or the subwords of the running text."""
    if loaded.spec.units == "subword":
        return subword_inputs(loaded, encode_running_text(loaded.tokenizer, sentences))
    return word_inputs(loaded, sentences, spans if spans is not None else word_spans(sentences))


def _finish_copy(
    batch: _InFlight,
    block: np.ndarray,
    filled: np.ndarray,
    first_row: int,
    storage_dtype: str,
    report: ExtractionReport,
    name: str,
) -> None:
    """Wait for a batch's copy to host, refuse non-finite or (float16) overflowing values,
    and place its rows in the block. first_row: occurrence id of the block's first row."""
    if batch.copied is not None:
        batch.copied.synchronize()
    non_finite = batch.non_finite.cpu().numpy()
    if non_finite.any():
        report.non_finite_vectors += int(non_finite.sum())
        raise NonFiniteValueError(
            f"model {name}: {report.non_finite_vectors} vectors are ±inf or NaN after "
            f"the forward pass (first at occurrence {first_row + batch.rows[non_finite][0]}); "
            "the model overflowed its compute dtype: set cuda_dtype to bfloat16 or float32"
        )
    peak = float(batch.peak)
    if storage_dtype == "float16" and peak >= FLOAT16_MAX:
        raise NumericOverflowError(f"model {name}: |value| {peak:.4g} does not fit float16")
    host = batch.host.numpy()
    for layer in range(len(block)):  # a layer at a time: 6× faster than one 3-D scatter
        block[layer, batch.rows] = host[layer]
    filled[batch.rows] = True


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
            f"model {name}: one input of {lengths[batch[0]]} subwords "
            "does not fit in device memory; lower max_length"
        ) from error
    if device.type == "cuda":
        torch.cuda.empty_cache()
    report.token_budget = max(1, report.token_budget // 2)
    report.out_of_memory_retries += 1
    log.warning("out of memory: token budget now %d", report.token_budget)
    remaining = np.concatenate([batch, *planned])
    return [remaining[part] for part in plan_batches(lengths[remaining], report.token_budget)]


def _extract_block(
    loaded: LoadedModel,
    encoded: list[EncodedSentence],
    layers: tuple[int, ...],
    first_rows: np.ndarray,
    block: np.ndarray,
    first_row: int,
    report: ExtractionReport,
) -> None:
    """Run one block's inputs in token-budget batches and fill `block` (n_layers, rows, dim)
    with their pooled vectors; each batch's copy to host overlaps the next batch's forward
    pass. Rows that no subword reached are NaN."""
    import torch

    device = next(loaded.model.parameters()).device
    filled = np.zeros(block.shape[1], dtype=bool)
    lengths = np.array([len(sentence.input_ids) for sentence in encoded])
    pending = None
    planned = model_batches(loaded, lengths, report.token_budget)
    while planned:
        batch = planned.pop(0)
        try:
            pooled, reached, rows = _forward_batch(
                loaded, [encoded[i] for i in batch], layers, first_rows
            )
        except torch.OutOfMemoryError as error:
            planned = _replan_after_out_of_memory(
                error, batch, planned, lengths, report, device, loaded.spec.name
            )
            continue
        in_flight = _InFlight(rows, *_start_copy(pooled, reached, str(block.dtype)))
        if pending is not None:
            _finish_copy(
                pending, block, filled, first_row, str(block.dtype), report, loaded.spec.name
            )
        pending = in_flight
        report.n_batches += 1
        report.n_subword_tokens += int(lengths[batch].sum())
    if pending is not None:
        _finish_copy(pending, block, filled, first_row, str(block.dtype), report, loaded.spec.name)
    block[:, ~filled] = np.nan


def part_sentences(
    rows_per_sentence: np.ndarray, part: int, n_parts: int, block_words: int = BLOCK_WORDS
) -> tuple[int, int]:
    """The sentence range [start, end) of part `part` (0-based) of `n_parts`
    (`partition_bounds`); ConfigError for a part outside 0..n_parts−1."""
    bounds = partition_bounds(rows_per_sentence, n_parts, block_words)
    if isinstance(part, bool) or not isinstance(part, int | np.integer) or not 0 <= part < n_parts:
        raise ConfigError(f"part {part!r} of {n_parts}: parts are numbered 0 to {n_parts - 1}")
    return bounds[part]


def units_of_part(units: SentenceUnits, counts: np.ndarray, first_sentence: int) -> SentenceUnits:
    """The units of one part's sentences (`units`, built from sentences `first_sentence`
    onward) presented as the whole corpus's: `counts`, the units of every sentence (from
    the occurrence index), and ``encode`` taking the corpus's sentence numbers, of which
    only the part's may be asked for. A part's job so tokenizes its own sentences alone."""

    def encode(start: int, end: int) -> list[EncodedSentence]:
        if start < first_sentence or end - first_sentence > len(units.counts):
            raise ValueError(f"sentences {start}..{end} are outside this part's units")
        return units.encode(start - first_sentence, end - first_sentence)

    counts = np.asarray(counts, dtype=np.int64)
    mine = counts[first_sentence : first_sentence + len(units.counts)]
    if not np.array_equal(mine, units.counts):
        raise ValueError("the part's units disagree with the counts of its sentences")
    return replace(units, counts=counts, encode=encode)


def _part_sentences(
    loaded: LoadedModel, units: SentenceUnits, part: int, n_parts: int, block_words: int
) -> tuple[int, int]:
    """The sentence range of one part of a partitioned extraction (`partition_bounds`)."""
    bounds = part_sentences(units.counts, part, n_parts, block_words)
    if loaded.sequential and n_parts > 1:
        raise ConfigError(
            f"model {loaded.spec.name} carries its states from sentence to sentence "
            "(lstm_states: carried), so it runs the corpus as one sequence and cannot be "
            "extracted in parts"
        )
    return bounds


def shard_bytes(n_rows: int, n_layers: int, hidden_size: int, storage_dtype: str) -> int:
    """Bytes the vectors of one extraction take on disk: occurrences × layers × dimensions ×
    bytes per value (HDF5's own overhead, a few kB a file, aside)."""
    return n_rows * n_layers * hidden_size * np.dtype(storage_dtype).itemsize


def check_free_space(directory: str | Path, needed: int, name: str) -> None:
    """Say how much an extraction will write and refuse it when `directory`'s disk has
    less free space than that (StorageError), before any forward pass."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    free = shutil.disk_usage(directory).free
    log.info("%s: the shards will take %.3g GB (%.3g GB free)", name, needed / 1e9, free / 1e9)
    if needed > free:
        raise StorageError(
            f"model {name}: the shards need {needed / 1e9:.3g} GB but {directory} has "
            f"{free / 1e9:.3g} GB free; free space, extract fewer layers, or store float16"
        )


def extract_to_shards(
    loaded: LoadedModel,
    units: SentenceUnits,
    layers: tuple[int, ...],
    shard_paths: dict[int, str | Path],
    attributes: dict[str, Any],
    storage_dtype: str = "float16",
    block_words: int | None = None,
    progress: bool = True,
    writer: Any = None,
    part: int = 0,
    n_parts: int = 1,
) -> ExtractionReport:
    """Extract the vectors of `layers` for every unit of every sentence into shards.

    Rows follow sentence order then unit order, the order of the occurrence index built
    from the same sentences (see `sentence_units`). An extraction whose shards would not
    fit on their disk is refused first (`check_free_space`). Values beyond float16's range raise
    NumericOverflowError when storing float16 (the caller may retry with float32). On CUDA
    out-of-memory the token budget is halved and the batch retried. Sentences run in blocks
    of about `block_words` words (default: `block_words_of`), each block's batches
    planned together and its rows written together.

    writer: where the blocks go instead of shards (`shard_paths` and `attributes` unused):
    an object with `ShardSetWriter`'s ``write``, ``commit`` and ``abort`` for these layers,
    such as `streaming.StreamingAccumulator`; it is committed or aborted here.

    part, n_parts: extract only part `part` (0-based) of `n_parts` (`partition_bounds` with
    `block_words`): its shards hold its rows alone, which are the whole extraction's rows
    `first_row` to `first_row` + their count, and record ``part``, ``n_parts``,
    ``first_row``, ``n_rows_total``, ``first_sentence``, ``end_sentence`` and
    ``block_words`` (`shards.load_shard_parts` gathers the parts). A model that must see
    the corpus as one sequence (ELMo with ``lstm_states: carried``) cannot be partitioned.
    """
    from tqdm.auto import tqdm

    started = time.perf_counter()
    spec = loaded.spec
    row_offsets = np.concatenate([[0], np.cumsum(units.counts)])
    if block_words is None:
        block_words = block_words_of(loaded, layers)
    blocks = _blocks(units.counts, block_words)
    first_sentence, end_sentence = 0, len(units.counts)
    partition = None
    if (part, n_parts) != (0, 1):
        first_sentence, end_sentence = _part_sentences(loaded, units, part, n_parts, block_words)
        blocks = [
            (start, end) for start, end in blocks if first_sentence <= start < end <= end_sentence
        ]
    if loaded.sequential:
        loaded.model.reset_states()
    part_start = int(row_offsets[first_sentence])
    n_rows = int(row_offsets[end_sentence]) - part_start
    if (part, n_parts) != (0, 1):
        partition = {
            "part": part,
            "n_parts": n_parts,
            "first_row": part_start,
            "n_rows_total": int(row_offsets[-1]),
            "first_sentence": first_sentence,
            "end_sentence": end_sentence,
            "block_words": block_words,
        }
        log.info(
            "%s: part %d of %d (0-based): sentences %d to %d, rows %d to %d of %d",
            spec.name,
            part,
            n_parts,
            first_sentence,
            end_sentence,
            part_start,
            part_start + n_rows,
            partition["n_rows_total"],
        )
    if writer is not None and list(writer.layers) != list(layers):
        writer.abort()
        raise ValueError(f"the writer takes layers {writer.layers}, not {list(layers)}")
    needed = 0
    if writer is None:
        needed = shard_bytes(n_rows, len(layers), loaded.hidden_size, storage_dtype)
        check_free_space(Path(shard_paths[layers[0]]).parent, needed, spec.name)
    report = ExtractionReport(
        n_sentences=end_sentence - first_sentence,
        n_occurrences=n_rows,
        storage_dtype=storage_dtype,
        device=str(next(loaded.model.parameters()).device),
        token_budget=spec.token_budget,
        shard_bytes=needed,
        blocks_run=blocks_to_run(loaded, layers),
        subwords_spanning_words=units.subwords_spanning_words,
        subwords_outside_words=units.subwords_outside_words,
        partition=partition,
    )
    shards = (
        writer
        if writer is not None
        else ShardSetWriter(
            {layer: shard_paths[layer] for layer in layers},
            n_rows,
            loaded.hidden_size,
            storage_dtype,
            {**attributes, **(partition or {})},
        )
    )
    with (
        shards,
        tqdm(total=n_rows, unit="word", desc=spec.name, disable=not progress) as bar,
    ):
        writer = _BackgroundWriter(shards)
        # On a GPU, blocks are tokenized ahead on another thread while the model runs. On
        # the CPU the forward pass takes every core, and a thread tokenizing beside it slows
        # it more than tokenizing in turn costs (bench/extraction.py, MiniLM on 2 cores).
        tokenizing = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tokenize")
        try:

            def encode(bounds: tuple[int, int]) -> list[EncodedSentence]:
                return units.encode(*bounds)

            if report.device == "cpu":
                encodings = map(encode, blocks)
            else:
                encodings = _one_ahead(tokenizing, encode, blocks)
            for (start, end), encoded in zip(blocks, encodings, strict=True):
                _count_coverage(encoded, report)
                first_row = int(row_offsets[start])
                block_rows = int(row_offsets[end]) - first_row
                block = np.empty((len(layers), block_rows, loaded.hidden_size), storage_dtype)
                first_rows = row_offsets[start:end] - first_row
                _extract_block(loaded, encoded, layers, first_rows, block, first_row, report)
                writer.write(first_row - part_start, block)
                bar.update(block_rows)
        finally:
            tokenizing.shutdown(cancel_futures=True)
            writer.close()
        report.seconds = time.perf_counter() - started
        shards.commit({"n_missing": report.words_truncated + report.words_without_tokens})
    if report.words_truncated:
        log.warning(
            "%s: %d words in %d sentences lost to truncation at %d subwords (NaN rows)",
            spec.name,
            report.words_truncated,
            report.sentences_truncated,
            loaded.max_length,
        )
    return report
