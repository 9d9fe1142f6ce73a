"""The model's own tokens, besides the words. The states of its special tokens ([CLS],
[SEP], <bos>, …), which the extraction pools into no word, beside the word vectors of the
same sentences, pooled as the extraction pools them.

A sample of sentences runs through the model (float32, no autocast) in batches that keep a
sentence's inputs (its windows) together; `special_token_batches` yields, per batch and
layer, the word rows and the special-token rows with their sentence, their kind (the token
as the tokenizer writes it) and their position in the input. Where attention sinks live,
this is where they show: a sentence's first word is the model's second token.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from contextuality.backends.base import LoadedModel
from contextuality.extraction.forward import layer_states, pad_batch, pool_batch
from contextuality.extraction.units import EncodedSentence


@dataclass(frozen=True)
class BatchLayerRows:
    """One layer's rows of one batch: the word vectors (n_words, dim) float32 and their
    sentence (numbered as encoded), and the special-token vectors (n_special, dim) with
    their sentence, kind and position in their input."""

    layer: int
    words: np.ndarray
    word_sentence: np.ndarray
    special: np.ndarray
    special_sentence: np.ndarray
    special_kind: np.ndarray
    special_position: np.ndarray


def token_name(loaded: LoadedModel, token: Any) -> str:
    """A special token as its tokenizer writes it (``[CLS]``), else ``special``."""
    convert = getattr(loaded.tokenizer, "convert_ids_to_tokens", None)
    if convert is None or np.ndim(token) != 0:
        return "special"
    return str(convert(int(token)))


def special_positions(loaded: LoadedModel, encoded: EncodedSentence) -> list[int]:
    """The positions in an input of its special tokens: those that give their vector to no
    word (``word_index`` -1) and are among the tokenizer's special tokens (not a content
    piece that overlaps no word, such as a lone space, nor one that another window pools).
    None for a model whose tokenizer names no special token (ELMo)."""
    special_ids = set(getattr(loaded.tokenizer, "all_special_ids", None) or ())
    return [
        int(token)
        for token in np.flatnonzero(encoded.word_index < 0)
        if np.ndim(encoded.input_ids[token]) == 0 and int(encoded.input_ids[token]) in special_ids
    ]


def sentence_batches(inputs: list[EncodedSentence], token_budget: int) -> list[list[int]]:
    """Positions in `inputs` (a sentence's inputs consecutive) grouped into batches whose
    padded size stays within `token_budget` (a sentence longer than it alone), never
    splitting one sentence's inputs."""
    groups: list[list[int]] = []
    for position, encoded in enumerate(inputs):
        if groups and inputs[groups[-1][0]].sentence == encoded.sentence:
            groups[-1].append(position)
        else:
            groups.append([position])
    batches: list[list[int]] = []
    current: list[int] = []
    longest = 0
    for group in groups:
        length = max(len(inputs[position].input_ids) for position in group)
        size = max(longest, length) * (len(current) + len(group))
        if current and size > token_budget:
            batches.append(current)
            current, longest = [], 0
        current = [*current, *group]
        longest = max(longest, length)
    if current:
        batches.append(current)
    return batches


def special_token_batches(
    loaded: LoadedModel, inputs: list[EncodedSentence], layers: tuple[int, ...], token_budget: int
) -> Iterator[list[BatchLayerRows]]:
    """Per batch of `inputs` (`sentence_batches`), each layer's `BatchLayerRows`: the words that
    some subword reached, and the special tokens (`special_positions`). Nothing where the
    inputs hold no special token: no forward pass is run for rows that would not be used.
    """
    import torch

    if not any(len(special_positions(loaded, encoded)) for encoded in inputs):
        return
    n_sentences = max((encoded.sentence for encoded in inputs), default=-1) + 1
    counts = np.zeros(n_sentences, dtype=np.int64)
    for encoded in inputs:
        counts[encoded.sentence] = encoded.n_words
    first_rows = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
    row_sentence = np.repeat(np.arange(n_sentences), counts)
    for positions in sentence_batches(inputs, token_budget):
        batch = [inputs[position] for position in positions]
        input_ids, attention = pad_batch(batch, loaded.encoder.pad_token_id)
        states = layer_states(loaded, input_ids, attention, layers, "float32")
        pooled, reached, rows = pool_batch(loaded, batch, states, first_rows)
        pooled, reached = pooled.cpu().numpy(), reached.cpu().numpy()
        where = [
            (item, token)
            for item, encoded in enumerate(batch)
            for token in special_positions(loaded, encoded)
        ]
        items = np.array([item for item, _ in where], dtype=np.int64)
        tokens = np.array([token for _, token in where], dtype=np.int64)
        names = [token_name(loaded, batch[item].input_ids[token]) for item, token in where]
        kinds = np.array(names, dtype=object)
        sentence = np.array([batch[item].sentence for item in items], dtype=np.int64)
        chosen = (torch.from_numpy(items), torch.from_numpy(tokens))
        yield [
            BatchLayerRows(
                layer=layer,
                words=pooled[position][reached],
                word_sentence=row_sentence[rows[reached]],
                special=states[position][chosen].float().cpu().numpy(),
                special_sentence=sentence,
                special_kind=kinds,
                special_position=tokens,
            )
            for position, layer in enumerate(layers)
        ]
