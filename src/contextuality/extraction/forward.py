"""One padded batch through the model: batching, autocast, pooling and the copy to host.

Inputs are sorted by length and packed into batches whose padded size stays within a token
budget (`plan_batches`). On CUDA the forward pass runs under float16 (or bfloat16)
autocast (`forward_dtype`); a batch's subword vectors are pooled into word vectors on the
device (`pool_subwords`) and copied to pinned host memory once, asynchronously
(`start_copy`), while the next batch runs; `wait_for_copy` then says which rows came back
±inf or NaN and `place_rows` checks the range and places them. The forward pass stops
after the last block a requested layer needs, where the model's blocks can be cut short.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from contextuality.backends.base import LoadedModel, ModelSpec, only_blocks_up_to
from contextuality.errors import NonFiniteValueError, NumericOverflowError
from contextuality.extraction.units import EncodedSentence

FLOAT16_MAX = 65504.0


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


def pool_subwords(
    hidden: Any, token_word: Any, n_words: int, pooling: str, shared: tuple[Any, Any] | None = None
) -> tuple[Any, Any]:
    """Pool subword vectors into word vectors, on the tensors' device.

    hidden: the (n_tokens, dim) subword vectors of each layer of a batch, flattened: a
    sequence of tensors, or one (n_layers, n_tokens, dim) tensor.
    token_word: (n_tokens,) (first) word row of each subword, -1 for special and padding
    tokens. shared: (tokens, words), two (n_pairs,) tensors of the further words that
    subwords spanning several words also give their vector to (`units.Alignment`).
    Returns (n_layers, n_words, dim) float32 word vectors, NaN for words with no
    subword, and the (n_words,) subword count of each word. Each layer is pooled straight
    from its own tensor: no stacked copy of the batch's states is made, and only the
    shared subwords are gathered.
    """
    import torch

    keep = token_word >= 0
    tokens, words = keep.nonzero().flatten(), token_word[keep]
    if shared is not None:
        tokens, words = torch.cat([tokens, shared[0]]), torch.cat([words, shared[1]])
    counts = torch.bincount(words, minlength=n_words)
    dim = hidden[0].shape[-1]
    # One extra row takes the special and padding tokens (mean pooling adds every token,
    # so no gathered copy of the kept ones is made); it is dropped at the end.
    pooled = torch.zeros(len(hidden), n_words + 1, dim, device=token_word.device)
    if pooling == "mean":
        target = torch.where(keep, token_word, n_words)
        for layer, states in enumerate(hidden):
            pooled[layer].index_add_(0, target, states.to(pooled.device, torch.float32))
            if shared is not None:
                gathered = states[shared[0].to(states.device)]
                pooled[layer].index_add_(0, shared[1], gathered.to(pooled))
        pooled = pooled[:, :n_words]
        pooled /= counts.clamp(min=1).to(pooled.dtype)[None, :, None]
    else:
        # A word's first (last) subword is the smallest (largest) token position it has.
        reduce = "amin" if pooling == "first" else "amax"
        chosen = torch.zeros(n_words, dtype=tokens.dtype, device=tokens.device)
        chosen.scatter_reduce_(0, words, tokens, reduce, include_self=False)
        present = (counts > 0).nonzero().flatten()
        pooled = pooled[:, :n_words]
        for layer, states in enumerate(hidden):
            pooled[layer, present] = states[chosen[present].to(states.device)].to(pooled)
    pooled[:, counts == 0] = float("nan")
    return pooled, counts


def pad_batch(batch: list[EncodedSentence], pad_id: int | None) -> tuple[np.ndarray, np.ndarray]:
    """The padded (batch, longest, *token shape) input ids and (batch, longest) attention
    mask of a batch of inputs (a token is an id, or for ELMo a row of character ids)."""
    longest = max(len(sentence.input_ids) for sentence in batch)
    token_shape = batch[0].input_ids.shape[1:]
    input_ids = np.full(
        (len(batch), longest, *token_shape), 0 if pad_id is None else pad_id, dtype=np.int64
    )
    attention = np.zeros((len(batch), longest), dtype=np.int64)
    for position, sentence in enumerate(batch):
        input_ids[position, : len(sentence.input_ids)] = sentence.input_ids
        attention[position, : len(sentence.input_ids)] = 1
    return input_ids, attention


def forward_batch(
    loaded: LoadedModel,
    batch: list[EncodedSentence],
    layers: tuple[int, ...],
    first_rows: np.ndarray,
    dtype: str,
) -> tuple[Any, Any, np.ndarray]:
    """Run one padded batch and pool its subwords into word vectors on the device.

    first_rows: segment row of each encoded sentence's first word (by ``sentence``).
    dtype: the autocast dtype of the forward pass (`forward_dtype`; float32: none).
    Returns (n_layers, n_rows, dim) float32 vectors, a (n_rows,) device mask of the rows
    that some subword reached (the others are NaN by design) and the segment rows.
    """
    input_ids, attention = pad_batch(batch, loaded.encoder.pad_token_id)
    states = layer_states(loaded, input_ids, attention, layers, dtype)
    return pool_batch(loaded, batch, states, first_rows)


def layer_states(
    loaded: LoadedModel,
    input_ids: np.ndarray,
    attention: np.ndarray,
    layers: tuple[int, ...],
    dtype: str,
) -> list[Any]:
    """The (batch, longest, dim) hidden states of each of `layers` for a padded batch
    (`pad_batch`), the last layer before the final norm where it must be
    (`_final_norm_input`), the pass stopped after the last block `layers` need."""
    import torch

    device = next(loaded.model.parameters()).device
    last = blocks_to_run(loaded, layers)
    with (
        torch.inference_mode(),
        autocast(device, dtype),
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
    return [states[layer] for layer in layers]


def pool_batch(
    loaded: LoadedModel, batch: list[EncodedSentence], states: list[Any], first_rows: np.ndarray
) -> tuple[Any, Any, np.ndarray]:
    """`forward_batch`'s pooling of a batch's `layer_states` into word vectors
    (`pool_subwords`): the (n_layers, n_rows, dim) vectors, the mask of the rows some
    subword reached and the segment rows (first_rows: by encoded sentence)."""
    import torch

    longest = states[0].shape[1]
    token_row = np.full((len(batch), longest), -1, dtype=np.int64)
    shared_token, shared_row = [np.zeros(0, dtype=np.int64)], [np.zeros(0, dtype=np.int64)]
    for position, sentence in enumerate(batch):
        rows = first_rows[sentence.sentence] + sentence.word_index
        token_row[position, : len(rows)] = np.where(sentence.word_index >= 0, rows, -1)
        shared_token.append(position * longest + sentence.shared[:, 0])
        shared_row.append(first_rows[sentence.sentence] + sentence.shared[:, 1])
    shared_token, shared_row = np.concatenate(shared_token), np.concatenate(shared_row)
    rows = np.unique(np.concatenate([token_row[token_row >= 0], shared_row]))
    compact = np.where(token_row >= 0, np.searchsorted(rows, token_row), -1)
    device = states[0].device
    with torch.inference_mode():
        hidden = [layer.reshape(-1, layer.shape[-1]) for layer in states]
        token_word = torch.from_numpy(compact.reshape(-1)).to(device, non_blocking=True)
        shared = (
            torch.from_numpy(shared_token).to(device, non_blocking=True),
            torch.from_numpy(np.searchsorted(rows, shared_row)).to(device, non_blocking=True),
        )
        pooled, counts = pool_subwords(hidden, token_word, len(rows), loaded.spec.pooling, shared)
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


def forward_dtype(device: Any, spec: ModelSpec) -> str:
    """The precision a forward pass on `device` (a torch device) runs in: the model's
    ``cuda_dtype`` autocast on CUDA, float32 elsewhere."""
    return spec.cuda_dtype if device.type == "cuda" else "float32"


def autocast(device: Any, dtype: str) -> Any:
    """Mixed-precision context for a forward pass on `device`: on CUDA, autocast to
    `dtype` (float16, bfloat16; float32: none); elsewhere none."""
    import torch

    enabled = device.type == "cuda" and dtype != "float32"
    return torch.autocast(device.type, dtype=getattr(torch, dtype), enabled=enabled)


def first_non_finite_weight(model: Any) -> str | None:
    """The name of the first parameter of `model` holding ±inf or NaN, or None."""
    import torch

    for parameter_name, parameter in model.named_parameters():
        if not bool(torch.isfinite(parameter).all()):
            return parameter_name
    return None


def wider_dtypes(dtype: str) -> str:
    """The autocast dtypes with a wider range or precision than `dtype`, as advice."""
    return "float32" if dtype == "bfloat16" else "bfloat16 or float32"


def non_finite_cause(spec: ModelSpec, model: Any, device: str, dtype: str) -> str:
    """Why a forward pass on `device` (a torch device type) in `dtype` gave ±inf or NaN,
    and what to do: weights that hold such values; else its float16 or bfloat16 autocast's
    overflow (the remedy: ``cuda_dtype``); else the model's own arithmetic in
    ``weights_dtype``, which no ``cuda_dtype`` changes."""
    damaged = first_non_finite_weight(model)
    if damaged is not None:
        return f"its weights hold ±inf or NaN (first in {damaged}): check its files"
    if dtype != "float32":
        return (
            f"the forward pass overflowed its {dtype} autocast: set "
            f"models.{spec.name}.cuda_dtype to {wider_dtypes(dtype)}"
        )
    advice = "check the weights (a damaged or wrongly converted checkpoint?)"
    if spec.weights_dtype != "float32":
        advice = f"set models.{spec.name}.weights_dtype: float32, or {advice}"
    return (
        f"its weights, all finite, produce them in {spec.weights_dtype} on {device} "
        f"without autocast: {advice}"
    )


@dataclass
class InFlight:
    """A batch whose pooled vectors are on their way to host memory: the segment's inputs
    it holds (`positions`), the autocast dtype its forward pass ran in, the segment rows of
    its vectors, and what `start_copy` returned."""

    positions: np.ndarray
    dtype: str
    rows: np.ndarray
    host: Any
    peak: Any
    non_finite: Any
    copied: Any


def start_copy(pooled: Any, reached: Any, storage_dtype: str) -> tuple[Any, Any, Any, Any]:
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


def wait_for_copy(batch: InFlight) -> np.ndarray:
    """Wait for a batch's copy to host; the mask of its rows (``batch.rows``) that some
    subword reached and that hold ±inf or NaN in some layer."""
    if batch.copied is not None:
        batch.copied.synchronize()
    return batch.non_finite.cpu().numpy()


def non_finite_error(
    batch: InFlight, non_finite: np.ndarray, first_row: int, loaded: LoadedModel
) -> NonFiniteValueError:
    """The error for a batch whose rows in `non_finite` are ±inf or NaN, naming the first
    (first_row: occurrence id of the segment's first row) and `non_finite_cause`."""
    device = next(loaded.model.parameters()).device.type
    return NonFiniteValueError(
        f"model {loaded.spec.name}: {int(non_finite.sum())} vectors are ±inf or NaN after "
        f"the forward pass (first at occurrence {first_row + batch.rows[non_finite][0]}); "
        + non_finite_cause(loaded.spec, loaded.model, device, batch.dtype)
    )


def place_rows(batch: InFlight, segment: np.ndarray, filled: np.ndarray, name: str) -> None:
    """Place a copied batch's rows in `segment` (n_layers, rows, dim), marking them in
    `filled`; for a float16 `segment`, values beyond its range are a NumericOverflowError
    (name: the model's, for the message)."""
    peak = float(batch.peak)
    if segment.dtype == np.float16 and peak >= FLOAT16_MAX:
        raise NumericOverflowError(f"model {name}: |value| {peak:.4g} does not fit float16")
    # Rounded to float16 by torch (vectorized; the same rounding, to the bit, as numpy's),
    # not element by element in the scatter below: 4 ms a batch of 2,048 tokens, not 16.
    host = (batch.host.half() if segment.dtype == np.float16 else batch.host).numpy()
    for layer in range(len(segment)):  # a layer at a time: faster than one 3-D scatter
        segment[layer, batch.rows] = host[layer]
    filled[batch.rows] = True
