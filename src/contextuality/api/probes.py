"""A language model in memory probed on a few sentences: per layer, its anisotropy and its
shared direction against the unigram direction of its output embeddings.

What a training run measures at its early steps without saving a checkpoint
(`measures.unigram` says why); any transformers model with a language-modelling head and a
fast tokenizer can be probed the same way."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from contextuality.api.hidden_states import word_rows
from contextuality.measures.equations import anisotropy_baseline
from contextuality.measures.unigram import direction_cosines, unigram_direction
from contextuality.rows import rows_with_vectors, run_starts

PROBE_BATCH = 64  # sentences per forward pass, sorted by length (little padding)
# What each probed layer gets, in the order of the probe tables' columns.
PROBED = ("anisotropy", "cos_mean_unigram", "cos_pc1_unigram")


def probe_batches(tokenizer: Any, sentences: Sequence[str]) -> list[dict[str, Any]]:
    """`sentences` tokenized as the extraction does (special tokens, offsets), by length,
    in padded batches of `PROBE_BATCH`: input_ids, attention_mask, offsets, texts. A
    sentence longer than the tokenizer's ``model_max_length`` is truncated to it: the
    words cut off get no row."""
    import torch

    encoded = tokenizer(
        list(sentences), add_special_tokens=True, return_offsets_mapping=True, truncation=True
    )
    order = np.argsort([len(ids) for ids in encoded["input_ids"]], kind="stable")
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    batches = []
    for start in range(0, len(order), PROBE_BATCH):
        chosen = order[start : start + PROBE_BATCH]
        width = max(len(encoded["input_ids"][index]) for index in chosen)
        ids = torch.full((len(chosen), width), pad)
        mask = torch.zeros((len(chosen), width), dtype=torch.long)
        offsets = torch.zeros((len(chosen), width, 2), dtype=torch.long)
        for row, index in enumerate(chosen):
            length = len(encoded["input_ids"][index])
            ids[row, :length] = torch.tensor(encoded["input_ids"][index])
            mask[row, :length] = 1
            offsets[row, :length] = torch.tensor(encoded["offset_mapping"][index])
        texts = [sentences[index] for index in chosen]
        batches.append(
            {"input_ids": ids, "attention_mask": mask, "offsets": offsets, "texts": texts}
        )
    return batches


def _layer_rows(
    model: Any, batches: list[dict[str, Any]]
) -> tuple[dict[int, np.ndarray], np.ndarray]:
    """Each layer's word rows (n_words, d) over the batches and each row's sentence, a
    sentence's rows contiguous; words no token touched left out."""
    import torch

    layers: dict[int, list[np.ndarray]] = {}
    sentences, first = [], 0
    with torch.no_grad():
        for batch in batches:
            hidden = model.base_model(
                input_ids=batch["input_ids"],
                attention_mask=batch["attention_mask"],
                output_hidden_states=True,
            ).hidden_states
            rows = word_rows(
                hidden, batch["offsets"], batch["texts"], attention_mask=batch["attention_mask"]
            )
            for layer, vectors in rows.layers.items():
                layers.setdefault(layer, []).append(vectors)
            sentences.append(rows.sentences + first)
            first += len(batch["texts"])
    stacked = {layer: np.concatenate(parts) for layer, parts in layers.items()}
    kept = rows_with_vectors(stacked[0])
    return {layer: rows[kept] for layer, rows in stacked.items()}, np.concatenate(sentences)[kept]


def probe_layers(
    model: Any, batches: list[dict[str, Any]], token_counts: np.ndarray
) -> list[dict[str, Any]]:
    """Per layer of `model` as it stands (left in the mode it was in), on the word rows of
    `batches` (`probe_batches`): the anisotropy (`equations.anisotropy_baseline`, the
    exact mean cosine of words in different sentences), the cosine of the layer's mean
    and |cos| of its first principal direction with the unigram direction of its output
    embeddings for `token_counts` (V,), and the words measured."""
    training = model.training
    direction = unigram_direction(
        model.get_output_embeddings().weight.detach().float().cpu().numpy(), token_counts
    )
    model.eval()
    try:
        layers, sentences = _layer_rows(model, batches)
    finally:
        model.train(training)
    starts = run_starts(sentences)
    return [
        {
            "layer": layer,
            **dict(
                zip(
                    PROBED,
                    [anisotropy_baseline(rows, starts), *direction_cosines(rows, direction)],
                    strict=True,
                )
            ),
            "words": len(rows),
        }
        for layer, rows in layers.items()
    ]
