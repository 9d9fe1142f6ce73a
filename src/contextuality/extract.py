"""One forward pass of a model over the corpus, writing one HDF5 shard per layer.

Sentences are processed in contiguous *blocks* (bounded memory whatever the corpus size).
Inside a block they are sorted by subword length and packed into batches whose padded
size stays within a token budget; each batch's subword vectors are pooled into word
vectors on the model's device, and the block is written to every layer's shard as one
contiguous slab, so row i of each shard is occurrence i of the index.
"""

from __future__ import annotations

import logging
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from contextuality.errors import NumericOverflowError
from contextuality.models import LoadedModel
from contextuality.shards import ShardSetWriter
from contextuality.words import split_words

FLOAT16_MAX = 65504.0
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class EncodedSentence:
    """Subword ids of one sentence and, per subword, the word it belongs to (-1: special)."""

    input_ids: np.ndarray
    word_index: np.ndarray
    n_words: int
    truncated: bool


@dataclass
class ExtractionReport:
    """What one extraction did; stored as the model's meta.json."""

    n_sentences: int = 0
    n_occurrences: int = 0
    n_subword_tokens: int = 0
    n_batches: int = 0
    sentences_truncated: int = 0
    words_truncated: int = 0
    words_without_tokens: int = 0
    storage_dtype: str = "float16"
    device: str = "cpu"
    seconds: float = 0.0

    @property
    def tokens_per_second(self) -> float:
        return self.n_subword_tokens / self.seconds if self.seconds else 0.0

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "tokens_per_second": round(self.tokens_per_second, 1)}


def encode_sentences(
    tokenizer: Any, sentence_words: list[list[str]], max_length: int, add_bos: bool
) -> list[EncodedSentence]:
    """Tokenize pre-split sentences into subwords, keeping the subword→word map.

    Sentences longer than `max_length` subwords (special tokens included) are truncated;
    with `add_bos` the tokenizer's BOS token is put first (GPT-2 style models).
    """
    bos = [tokenizer.bos_token_id] if add_bos else []
    if add_bos and tokenizer.bos_token_id is None:
        raise ValueError("add_bos is set but the tokenizer has no BOS token")
    encoding = tokenizer(
        sentence_words,
        is_split_into_words=True,
        truncation=True,
        max_length=max_length - len(bos),
        add_special_tokens=True,
    )
    encoded = []
    for position, input_ids in enumerate(encoding["input_ids"]):
        word_ids = [-1 if word is None else word for word in encoding.word_ids(position)]
        encoded.append(
            EncodedSentence(
                input_ids=np.asarray(bos + input_ids, dtype=np.int64),
                word_index=np.asarray([-1] * len(bos) + word_ids, dtype=np.int64),
                n_words=len(sentence_words[position]),
                truncated=bool(encoding.encodings[position].overflowing),
            )
        )
    return encoded


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


def pool_subwords(hidden: Any, token_word: Any, n_words: int, pooling: str) -> tuple[Any, Any]:
    """Pool subword vectors into word vectors, on the tensors' device.

    hidden: (n_layers, n_tokens, dim) subword vectors of a batch, flattened.
    token_word: (n_tokens,) word row of each subword, -1 for special and padding tokens.
    Returns (n_layers, n_words, dim) float32 word vectors, NaN for words with no
    subword, and the (n_words,) subword count of each word.
    """
    import torch

    keep = token_word >= 0
    rows = token_word[keep]
    vectors = hidden[:, keep].float()
    counts = torch.bincount(rows, minlength=n_words)
    pooled = torch.zeros(hidden.shape[0], n_words, hidden.shape[2], device=hidden.device)
    if pooling == "mean":
        pooled.index_add_(1, rows, vectors)
        pooled /= counts.clamp(min=1).to(pooled.dtype)[None, :, None]
    else:
        # Subwords of a word are contiguous; the first (last) is where the word changes.
        # (No wrap-around: with a single word in the batch, rows[0] == rows[-1].)
        boundary = torch.ones_like(rows, dtype=torch.bool)
        if pooling == "first":
            boundary[1:] = rows[1:] != rows[:-1]
        else:
            boundary[:-1] = rows[:-1] != rows[1:]
        pooled[:, rows[boundary]] = vectors[:, boundary]
    pooled[:, counts == 0] = float("nan")
    return pooled, counts


def _forward_batch(loaded: LoadedModel, batch: list[EncodedSentence], layers: tuple[int, ...]):
    """Run one padded batch; returns (n_layers, n_words, dim) pooled vectors on the device."""
    import torch

    device = next(loaded.model.parameters()).device
    longest = max(len(sentence.input_ids) for sentence in batch)
    pad_id = loaded.tokenizer.pad_token_id
    pad_id = 0 if pad_id is None else pad_id
    input_ids = np.full((len(batch), longest), pad_id, dtype=np.int64)
    attention = np.zeros((len(batch), longest), dtype=np.int64)
    token_word = np.full((len(batch), longest), -1, dtype=np.int64)
    word_offset = 0
    for row, sentence in enumerate(batch):
        length = len(sentence.input_ids)
        input_ids[row, :length] = sentence.input_ids
        attention[row, :length] = 1
        has_word = sentence.word_index >= 0
        token_word[row, :length] = np.where(has_word, sentence.word_index + word_offset, -1)
        word_offset += sentence.n_words
    autocast = device.type == "cuda"
    with (
        torch.inference_mode(),
        torch.autocast(device.type, dtype=torch.float16, enabled=autocast),
    ):
        output = loaded.model(
            input_ids=torch.from_numpy(input_ids).to(device),
            attention_mask=torch.from_numpy(attention).to(device),
            output_hidden_states=True,
        )
        hidden = torch.stack([output.hidden_states[layer] for layer in layers])
        hidden = hidden.reshape(len(layers), -1, hidden.shape[-1])
        token_word_flat = torch.from_numpy(token_word.reshape(-1)).to(device)
        pooled, _ = pool_subwords(hidden, token_word_flat, word_offset, loaded.spec.pooling)
    return pooled


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


def extract_to_shards(
    loaded: LoadedModel,
    sentences: list[str],
    layers: tuple[int, ...],
    shard_paths: dict[int, str | Path],
    attributes: dict[str, Any],
    storage_dtype: str = "float16",
    block_words: int = 16_384,
    progress: bool = True,
) -> ExtractionReport:
    """Extract word vectors of `layers` for every word of every sentence into shards.

    Rows follow sentence order then word order, the order of the occurrence index built
    from the same sentences. Values beyond float16's range raise NumericOverflowError
    when storing float16 (the caller may retry with float32).
    """
    from tqdm.auto import tqdm

    started = time.perf_counter()
    device = next(loaded.model.parameters()).device
    sentence_words = [split_words(sentence) for sentence in sentences]
    words_per_sentence = np.array([len(words) for words in sentence_words], dtype=np.int64)
    row_offsets = np.concatenate([[0], np.cumsum(words_per_sentence)])
    n_rows = int(row_offsets[-1])
    report = ExtractionReport(
        n_sentences=len(sentences),
        n_occurrences=n_rows,
        storage_dtype=storage_dtype,
        device=str(device),
    )
    with (
        ShardSetWriter(
            {layer: shard_paths[layer] for layer in layers},
            n_rows,
            loaded.hidden_size,
            storage_dtype,
            attributes,
        ) as writer,
        tqdm(total=n_rows, unit="word", desc=loaded.spec.name, disable=not progress) as bar,
    ):
        for start, end in _blocks(words_per_sentence, block_words):
            encoded = encode_sentences(
                loaded.tokenizer, sentence_words[start:end], loaded.max_length, loaded.spec.add_bos
            )
            block_rows = int(row_offsets[end] - row_offsets[start])
            block = np.empty((len(layers), block_rows, loaded.hidden_size), dtype=storage_dtype)
            lengths = np.array([len(sentence.input_ids) for sentence in encoded])
            for batch in plan_batches(lengths, loaded.spec.token_budget):
                items = [encoded[i] for i in batch]
                pooled = _forward_batch(loaded, items, layers)
                largest = float(pooled.nan_to_num(0.0).abs().max())
                if storage_dtype == "float16" and largest >= FLOAT16_MAX:
                    raise NumericOverflowError(
                        f"model {loaded.spec.name}: |value| {largest:.4g} does not fit float16"
                    )
                pooled = pooled.to("cpu").numpy().astype(storage_dtype, copy=False)
                cursor = 0
                for i, item in zip(batch, items, strict=True):
                    first = int(row_offsets[start + i] - row_offsets[start])
                    block[:, first : first + item.n_words] = pooled[
                        :, cursor : cursor + item.n_words
                    ]
                    cursor += item.n_words
                report.n_batches += 1
                report.n_subword_tokens += int(lengths[batch].sum())
            writer.write(int(row_offsets[start]), block)
            for sentence in encoded:
                present = np.unique(sentence.word_index[sentence.word_index >= 0])
                reached = int(present.max()) + 1 if len(present) else 0
                cut = sentence.n_words - reached if sentence.truncated else 0
                report.sentences_truncated += int(sentence.truncated)
                report.words_truncated += cut
                report.words_without_tokens += sentence.n_words - cut - len(present)
            bar.update(block_rows)
        report.seconds = time.perf_counter() - started
        writer.commit({"n_missing": report.words_truncated + report.words_without_tokens})
    if report.words_truncated:
        log.warning(
            "%s: %d words in %d sentences lost to truncation at %d subwords (NaN rows)",
            loaded.spec.name,
            report.words_truncated,
            report.sentences_truncated,
            loaded.max_length,
        )
    return report
