"""Reference computations the tests compare the library with, sharing none of its code."""

from __future__ import annotations

import numpy as np
import torch


def word_vectors_by_overlap(
    tokenizer, model, sentences, spans, layers, pooling="mean", bos_token_id=None
):
    """Reference word vectors, one sentence at a time and without any extraction code.

    Each sentence is tokenized as running text and run through the model alone; each
    non-special subword belongs to every word whose character span [start, end) its own
    span overlaps, and a word's vector pools its subwords' hidden states (mean, first or
    last). Returns (n_layers, n_words, dim) over all sentences' words in order.
    """
    rows = []
    for sentence, word_spans in zip(sentences, spans, strict=True):
        encoding = tokenizer(sentence, return_offsets_mapping=True, return_special_tokens_mask=True)
        owners = []
        for (start, end), special in zip(
            encoding["offset_mapping"], encoding["special_tokens_mask"], strict=True
        ):
            overlapping = set()
            if not special and end > start:
                overlapping = {w for w, (a, b) in enumerate(word_spans) if start < b and end > a}
            owners.append(overlapping)
        input_ids = list(encoding["input_ids"])
        if bos_token_id is not None:
            input_ids, owners = [bos_token_id, *input_ids], [set(), *owners]
        with torch.no_grad():
            output = model(input_ids=torch.tensor([input_ids]), output_hidden_states=True)
        hidden = torch.stack([output.hidden_states[layer][0] for layer in layers]).numpy()
        for word in range(len(word_spans)):
            positions = [i for i, words in enumerate(owners) if word in words]
            assert positions, (
                f"reference: word {sentence[slice(*word_spans[word])]!r} has no subword"
            )
            chosen = {"mean": positions, "first": positions[:1], "last": positions[-1:]}[pooling]
            rows.append(hidden[:, chosen].mean(axis=1))
    return np.stack(rows, axis=1)
