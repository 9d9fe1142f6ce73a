"""Word rows from the hidden states a researcher already has. Transformers' ``hidden_states``
(or any per-layer stack of token vectors, as a TransformerLens cache's
``accumulated_resid()`` or an nnsight trace's saved outputs give), pooled into one vector
per word as the extract step pools them (`extraction.units.align_to_words`,
`extraction.forward.pool_subwords`)."""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from contextuality.api.arguments import (
    batch_array,
    chosen_layers,
    labels_of,
    offsets_in_texts,
    shown,
    texts_of,
)
from contextuality.backends.settings import POOLINGS, model_default
from contextuality.configuration.schema import default
from contextuality.corpus.words import word_spans
from contextuality.errors import ConfigError
from contextuality.extraction.forward import pool_subwords
from contextuality.extraction.units import align_to_words


@dataclass(frozen=True)
class WordRows:
    """One row per word of the sentences given, in sentence then word order: `layers`
    maps each layer to its (n_words, d) float32 vectors (NaN for a word no token touched),
    and `words`, `sentences` (each text's id: `word_rows`' ``sentence_ids``) and
    `positions` (the word's place in its sentence) label the rows, as `measure_layer` and
    `alignment` take them."""

    layers: dict[int, np.ndarray]
    words: list[str]
    sentences: np.ndarray
    positions: np.ndarray

    @classmethod
    def concatenate(cls, parts: Sequence[WordRows]) -> WordRows:
        """The rows of several batches, one after the other: each batch's rows given with
        their own ``sentence_ids``, the same layers in every batch; a sentence id that
        two batches share is refused (their words would be read as one sentence)."""
        if not parts:
            raise ConfigError("WordRows.concatenate: no batch given")
        layers = list(parts[0].layers)
        for number, part in enumerate(parts):
            if list(part.layers) != layers:
                raise ConfigError(
                    f"WordRows.concatenate: batch {number} has layers {list(part.layers)}, "
                    f"batch 0 {layers}"
                )
        seen: dict[Any, int] = {}
        for number, part in enumerate(parts):
            for label in dict.fromkeys(part.sentences.tolist()):
                if label in seen:
                    raise ConfigError(
                        f"WordRows.concatenate: batches {seen[label]} and {number} both have "
                        f"sentence {shown(label)} (give each batch its texts' sentence_ids)"
                    )
                seen[label] = number
        return cls(
            {layer: np.concatenate([part.layers[layer] for part in parts]) for layer in layers},
            [word for part in parts for word in part.words],
            np.concatenate([part.sentences for part in parts]),
            np.concatenate([part.positions for part in parts]),
        )


def text_ids(sentence_ids: Sequence[Any] | None, n_texts: int) -> list[Any]:
    """Each text's sentence label (`arguments.labels_of`; default its index), refused where
    two texts have the same."""
    if sentence_ids is None:
        return list(range(n_texts))
    ids = labels_of(sentence_ids, n_texts, "sentence_ids").tolist()
    first: dict[Any, int] = {}
    for item, label in enumerate(ids):
        if label in first:
            raise ConfigError(
                f"sentence_ids: text {item} has id {shown(label)}, as text {first[label]} has"
            )
        first[label] = item
    return ids


def _layer_stack(hidden_states: Any) -> list[Any]:
    """The per-layer (batch, tokens, d) tensors of `hidden_states`, a sequence of them or one
    (layers, batch, tokens, d) array, as torch tensors on their device."""
    import torch

    layers = [torch.as_tensor(states) for states in hidden_states]
    if not layers or any(states.ndim != 3 for states in layers):
        raise ConfigError("hidden_states: expected one (batch, tokens, d) array per layer")
    if any(states.shape[:2] != layers[0].shape[:2] for states in layers):
        shapes = sorted({tuple(states.shape[:2]) for states in layers})
        raise ConfigError(f"hidden_states: layers of different (batch, tokens) {shapes}")
    return layers


def word_rows(
    hidden_states: Any,
    offsets: Any,
    texts: Sequence[str],
    *,
    attention_mask: Any = None,
    layers: Sequence[int] | None = None,
    pooling: str = model_default("pooling"),
    tokenizer: str = default("index", "tokenizer"),
    sentence_ids: Sequence[Any] | None = None,
) -> WordRows:
    """Each word's vector in each layer, from the token vectors of a batch of `texts`.

    hidden_states: one (batch, tokens, d) array or tensor per layer (transformers'
    ``output_hidden_states=True``: layer 0 the embeddings). offsets: (batch, tokens, 2)
    character spans of the tokens in their text (a fast tokenizer's
    ``return_offsets_mapping=True``); a token with an empty span (special, padding) or
    masked out by `attention_mask` serves no word. Words are found by `tokenizer` (the
    index's ``regex`` or ``spacy``) and each takes the `pooling` (``mean``, ``first``,
    ``last``) of the tokens whose span overlaps it. layers: which to keep (default all).
    sentence_ids: each text's sentence label (any hashable value, one per text, none
    twice; default 0 to len(texts) − 1), so that the rows of batches of a corpus, each
    given its texts' ids (``range(start, start + len(texts))``), concatenate into
    distinct sentences (`WordRows.concatenate`).
    """
    import torch

    if pooling not in POOLINGS:
        raise ConfigError(f"pooling must be one of {POOLINGS}, not {pooling!r}")
    texts = texts_of(texts)
    ids = text_ids(sentence_ids, len(texts))
    stack = _layer_stack(hidden_states)
    chosen = chosen_layers(layers, len(stack))
    batch = tuple(stack[0].shape[:2])
    if batch[0] != len(texts):
        raise ConfigError(f"hidden_states: a batch of {batch[0]} items for the {len(texts)} texts")
    spans = batch_array(offsets, (*batch, 2), "offsets")
    mask = None if attention_mask is None else batch_array(attention_mask, batch, "attention_mask")
    offsets_in_texts(spans, texts, np.ones(batch, bool) if mask is None else mask.astype(bool))
    pooled: dict[int, list[np.ndarray]] = {layer: [] for layer in chosen}
    words, sentences, positions = [], [], []
    every_text_spans = word_spans(texts, tokenizer)
    for item, (text, text_spans) in enumerate(zip(texts, every_text_spans, strict=True)):
        token_spans = [tuple(span) for span in spans[item].tolist()]
        if mask is not None:  # a masked token serves no word, as one with an empty span
            kept = mask[item].astype(bool)
            token_spans = [
                span if keep else (0, 0) for span, keep in zip(token_spans, kept, strict=True)
            ]
        aligned = align_to_words(token_spans, text_spans)
        states = [stack[layer][item] for layer in chosen]
        device = states[0].device
        token_word = torch.as_tensor(aligned.token_unit, device=device)
        shared = tuple(torch.as_tensor(aligned.shared[:, side], device=device) for side in (0, 1))
        vectors, _ = pool_subwords(states, token_word, len(text_spans), pooling, shared)
        for place, layer in enumerate(chosen):
            pooled[layer].append(vectors[place].to("cpu").numpy())
        words += [text[start:end] for start, end in text_spans]
        sentences += [ids[item]] * len(text_spans)
        positions += list(range(len(text_spans)))
    labels = np.empty(len(sentences), dtype=object)
    labels[:] = sentences
    if all(isinstance(label, numbers.Integral) and not isinstance(label, bool) for label in ids):
        labels = labels.astype(np.int64)
    return WordRows(
        {layer: np.concatenate(parts) for layer, parts in pooled.items()},
        words,
        labels,
        np.asarray(positions, dtype=np.int64),
    )
