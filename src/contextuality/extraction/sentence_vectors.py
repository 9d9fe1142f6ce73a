"""Sentence vectors by layer: each sentence's mean-pooled hidden state at every layer asked
for, the representation whose cosine a downstream similarity task scores
(`measures.downstream`).

A sentence's vector at layer l is the mean of the hidden states of its content tokens
(every subword of the sentence; the special tokens a tokenizer adds, such as ``[CLS]``,
``[SEP]`` or a BOS, are left out, since in decoders the first of them carries the massive
activation that would otherwise dominate the mean). ``past_first`` pooling also leaves out
the first content token, which carries it where the model reads no BOS (SmolLM2).
"""

from __future__ import annotations

import numpy as np

from contextuality.backends.base import LoadedModel, token_budget
from contextuality.extraction.forward import forward_dtype, layer_states, pad_batch, plan_batches
from contextuality.extraction.units import EncodedSentence, subword_inputs
from contextuality.jobs.console import Progress

POOLINGS = ("mean", "past_first")


def _content_weights(batch: list[EncodedSentence], width: int, pooling: str) -> np.ndarray:
    """(batch, width) weights that average each sentence's content tokens (past its first
    with ``past_first``; a one-token sentence then keeps its token)."""
    content = np.zeros((len(batch), width), dtype=np.float32)
    for row, encoded in enumerate(batch):
        content[row, : len(encoded.word_index)] = encoded.word_index >= 0
        if pooling == "past_first" and content[row].sum() > 1:
            content[row, np.flatnonzero(content[row])[0]] = 0
    return content / np.maximum(content.sum(1, keepdims=True), 1)


def sentence_vectors(
    loaded: LoadedModel,
    sentences: list[str],
    layers: tuple[int, ...],
    poolings: tuple[str, ...] = ("mean",),
) -> dict[str, np.ndarray]:
    """By pooling (`POOLINGS`), the (len(layers), n_sentences, hidden size) float32 mean of
    each sentence's content token states at each of `layers` (hidden-state numbering: 0 is
    the embedding output), all from one pass in batches of the model's token budget on its
    device, autocast as the extraction is."""
    import torch

    if not sentences:
        raise ValueError("sentence_vectors needs at least one sentence")
    unknown = set(poolings) - set(POOLINGS)
    if unknown:
        raise ValueError(f"unknown sentence poolings {sorted(unknown)}; choose from {POOLINGS}")
    device = next(loaded.model.parameters()).device
    dtype = forward_dtype(device, loaded.spec)
    inputs = subword_inputs(loaded, loaded.encoder.encode(sentences)).encode(0, len(sentences))
    shape = (len(layers), len(sentences), loaded.hidden_size)
    vectors = {pooling: np.full(shape, np.nan, np.float32) for pooling in poolings}
    lengths = np.array([len(encoded.input_ids) for encoded in inputs])
    progress = Progress(f"{loaded.spec.name}: sentence vectors", len(sentences), "sentences")
    for batch in plan_batches(lengths, token_budget(loaded.spec, device.type)):
        chosen = [inputs[i] for i in batch]
        input_ids, attention = pad_batch(chosen, loaded.encoder.pad_token_id)
        states = layer_states(loaded, input_ids, attention, layers, dtype)
        for pooling in poolings:
            weights = torch.from_numpy(_content_weights(chosen, attention.shape[1], pooling))
            for position, state in enumerate(states):
                pooled = torch.einsum("bt,btd->bd", weights.to(state.device), state.float())
                vectors[pooling][position, batch] = pooled.cpu().numpy()
        progress.update(len(batch))
    progress.finish()
    return vectors
