"""One padded batch through the model: batching, precision, attention and pooling.

Inputs are sorted by length and cut into batches whose padded size stays within a token
budget, padding as little as a batch's cost allows (`plan_batches`). On CUDA the weights
are held in the forward pass's dtype and every operation runs in it (`precision`; under
``autocast: true`` the matrix products alone), attention by torch's kernels other than
cuDNN's (`attention_kernels`). A batch's subword vectors are pooled into word vectors on
the device (`pool_subwords`); `segments` checks them and places them in their segment.
The forward pass stops after the last block a requested layer needs, where the model's
blocks can be cut short.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import numpy as np

from contextuality.backends.base import LoadedModel, only_blocks_up_to
from contextuality.backends.settings import ModelSettings
from contextuality.extraction.units import EncodedSentence

FLOAT16_MAX = 65504.0
# What starting a batch costs, in padded tokens' worth, as a share of the token budget:
# the planner pads less where a batch costs less than 1/16 of the budget's tokens.
BATCH_COST_SHARE = 16
# The attention kernels a CUDA forward pass may use (torch.nn.attention.SDPBackend names),
# in torch's order. cuDNN's is left out: it builds a plan for every new shape of input,
# tens of milliseconds each, and length-sorted batches are nearly all of new shapes
# (bench/results/extraction-cuda-*: the first pass over a corpus's batches).
CUDA_ATTENTION_KERNELS = ("FLASH_ATTENTION", "EFFICIENT_ATTENTION", "MATH")


def plan_batches(
    lengths: np.ndarray, token_budget: int, batch_cost: int | None = None
) -> list[np.ndarray]:
    """Group items into batches of similar length, longest first.

    Each batch is a run of the items sorted by length, longest first, whose padded size
    (its longest item × its item count) is at most `token_budget`, except that an item
    longer than the budget is batched alone. Of all such plans it is one of least padded
    tokens plus `batch_cost` per batch (default: budget / `BATCH_COST_SHARE`, at least 1),
    found by dynamic programming: cost(j) = min over i of cost(i) + length_i × (j − i) +
    batch_cost, over the places a batch can end in some best plan (`_batch_ends`).
    Returns arrays of item positions; every item appears exactly once.
    """
    lengths = np.asarray(lengths, dtype=np.int64)
    if batch_cost is None:
        batch_cost = max(1, token_budget // BATCH_COST_SHARE)
    order = np.argsort(-lengths, kind="stable")
    longest = lengths[order]
    if not len(order):
        return []
    room = np.maximum(1, token_budget // np.maximum(1, longest))
    ends = _batch_ends(longest, room)
    cost = np.full(len(ends), np.inf)
    cost[0] = 0.0
    previous = np.zeros(len(ends), dtype=np.int64)
    for k, first in enumerate(ends[:-1]):
        reachable = np.arange(k + 1, np.searchsorted(ends, first + room[first], side="right"))
        candidate = cost[k] + longest[first] * (ends[reachable] - first) + batch_cost
        better = candidate < cost[reachable]
        cost[reachable[better]] = candidate[better]
        previous[reachable[better]] = k
    chosen = [len(ends) - 1]
    while chosen[-1] > 0:
        chosen.append(int(previous[chosen[-1]]))
    cuts = ends[chosen[::-1]]
    return [order[a:b] for a, b in zip(cuts[:-1], cuts[1:], strict=True)]


def _batch_ends(longest: np.ndarray, room: np.ndarray) -> np.ndarray:
    """The positions (of the items sorted longest first) where a batch can end in some
    best plan, 0 and the end included: where the length changes, and the starts of full
    batches (room[i] items from item i) that end at one of those, in chains.

    Where a batch ends inside a run of equal lengths and the next batch has room, moving
    the batch's last item into the next one costs nothing or saves (the next batch keeps
    its longest item; this one loses an item of its own longest length or more). So some
    best plan ends every batch where the length changes, or just before a full batch,
    which ends there or just before another full batch. A full batch [e, e + room[e])
    ending at a given place starts at one place at most (e + room[e] increases with e).
    """
    n = len(longest)
    full_end = np.arange(n) + room
    changes = np.flatnonzero(np.r_[longest[1:] != longest[:-1], True]) + 1
    ends = {0, *changes.tolist()}
    for end in changes.tolist():
        while True:
            start = int(np.searchsorted(full_end, end))
            if start >= n or full_end[start] != end or start in ends:
                break
            ends.add(start)
            end = start
    return np.array(sorted(ends), dtype=np.int64)


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
        precision(loaded, device, dtype),
        attention_kernels(device),
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


def forward_dtype(device: Any, spec: ModelSettings) -> str:
    """The precision a forward pass on `device` (a torch device) runs in: the model's
    ``cuda_dtype`` on CUDA, float32 elsewhere."""
    return spec.cuda_dtype if device.type == "cuda" else "float32"


@contextlib.contextmanager
def precision(loaded: LoadedModel, device: Any, dtype: str) -> Iterator[None]:
    """A forward pass in `dtype` on `device`: on CUDA, with weights held in it
    (`LoadedModel.holds_forward_dtype`), as they are, or widened to float32 for the pass
    where `dtype` is float32 (a batch run again after it overflowed; the weights are
    their float16 or bfloat16 values, exactly, in float32 arithmetic), or else under
    torch's autocast to `dtype` (float32: none). Elsewhere as the weights are."""
    import torch

    if device.type != "cuda":
        yield
        return
    if not loaded.holds_forward_dtype:
        enabled = dtype != "float32"
        with torch.autocast(device.type, dtype=getattr(torch, dtype), enabled=enabled):
            yield
        return
    held = str(loaded.model.dtype).removeprefix("torch.")
    if held == dtype:
        yield
    elif dtype == "float32":
        with widened(loaded.model):
            yield
    else:
        raise ValueError(
            f"model {loaded.spec.name}: its weights are held in {held}, and a forward pass "
            f"in {dtype} needs them loaded in it (cuda_dtype: {dtype})"
        )


@contextlib.contextmanager
def widened(model: Any) -> Iterator[None]:
    """Within the block, every floating parameter and buffer of `model` in float32; after
    it, each back in its own dtype (exactly: float16 and bfloat16 values are float32
    values)."""
    import torch

    tensors = [
        (store, name, tensor.dtype)
        for module in model.modules()
        for store in (module._parameters, module._buffers)
        for name, tensor in store.items()
        if tensor is not None and tensor.is_floating_point() and tensor.dtype != torch.float32
    ]
    try:
        with torch.no_grad():
            for store, name, _ in tensors:
                _replace(store, name, store[name].float())
        yield
    finally:
        with torch.no_grad():
            for store, name, dtype in tensors:
                _replace(store, name, store[name].to(dtype))


def _replace(store: dict[str, Any], name: str, values: Any) -> None:
    """Put `values` in a module's parameter or buffer `name`, a parameter staying one."""
    import torch

    current = store[name]
    if isinstance(current, torch.nn.Parameter):
        current.data = values
    else:
        store[name] = values


def attention_kernels(device: Any) -> Any:
    """On CUDA, scaled dot-product attention restricted to `CUDA_ATTENTION_KERNELS`; a
    context that changes nothing elsewhere."""
    if device.type != "cuda":
        return contextlib.nullcontext()
    from torch.nn.attention import SDPBackend, sdpa_kernel

    return sdpa_kernel([getattr(SDPBackend, name) for name in CUDA_ATTENTION_KERNELS])


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


def non_finite_cause(spec: ModelSettings, model: Any, device: str, dtype: str) -> str:
    """Why a forward pass on `device` (a torch device type) in `dtype` gave ±inf or NaN,
    and what to do: weights that hold such values; else its float16 or bfloat16 autocast's
    overflow (the remedy: ``cuda_dtype``); else the model's own arithmetic in
    ``weights_dtype``, which no ``cuda_dtype`` changes."""
    damaged = first_non_finite_weight(model)
    if damaged is not None:
        return f"its weights hold ±inf or NaN (first in {damaged}): check its files"
    if dtype != "float32":
        return (
            f"the forward pass overflowed {dtype}: set models.{spec.name}.cuda_dtype to "
            f"{wider_dtypes(dtype)}"
        )
    advice = "check the weights (a damaged or wrongly converted checkpoint?)"
    if spec.weights_dtype != "float32":
        advice = f"set models.{spec.name}.weights_dtype: float32, or {advice}"
    return (
        f"its weights, all finite, produce them in {spec.weights_dtype} on {device} "
        f"without autocast: {advice}"
    )
