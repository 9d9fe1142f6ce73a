"""The forward pass against the bare model, on the same padded batches, one change at a time.

Imported by bench/extraction.py (and bench/gpu/large_model.py). Every rate counts the
batches' real subword tokens (padding is the batches' cost, and the same for every row
that runs the same batches) and is the second of two passes over the batches: the first,
reported too, also pays for whatever a new shape of input costs once (kernel choice,
plans, allocations).

- `bare_forward`: the model as a user would run it bare: weights in the forward dtype,
  `output_hidden_states=True`, the batches already on the device, nothing copied or kept;
  with each attention the installed transformers offers (`ATTENTIONS`), the fastest taken
  as the bound.
- `project_forward`: `extraction.forward.layer_states`, the extraction's own call (inputs
  copied from the host, the precision and attention it sets, the layers it keeps).
- `factor_rows`: how the project's forward pass went from what it was to what it is, on
  CUDA, one change at a time (`FACTORS`), each row's rate measured on its own batches.
- `cold_pass`: the first pass in a fresh process (`python bench/extraction.py --cold ...`),
  what a new job pays before its shapes are known, with and without cuDNN's attention.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import torch

from contextuality.backends.base import LoadedModel, model_location
from contextuality.extraction import forward
from contextuality.extraction.forward import forward_dtype, layer_states, model_batches, pad_batch
from contextuality.extraction.partitions import ExtractionPlan, segments
from contextuality.extraction.units import SentenceUnits

# The attentions of a bare transformers model: sdpa with torch's own choice of kernel
# (cuDNN's first on Hopper), sdpa without cuDNN's, and the eager matrix products.
ATTENTIONS = ("sdpa", "sdpa-no-cudnn", "eager")
ALL_KERNELS = ("CUDNN_ATTENTION", "FLASH_ATTENTION", "EFFICIENT_ATTENTION", "MATH")
# HEAD before the changes: the greedy batches of 8,192 tokens in 16,384-word segments.
BEFORE_BUDGET, BEFORE_SEGMENT_WORDS = 8192, 16_384


@dataclasses.dataclass
class Batches:
    """Padded batches as (input ids, attention mask) host arrays, and their real and
    padded token counts."""

    padded: list[tuple[np.ndarray, np.ndarray]]
    tokens: int

    @property
    def padded_tokens(self) -> int:
        return int(sum(ids.shape[0] * ids.shape[1] for ids, _ in self.padded))


def plan_padded(
    loaded: LoadedModel,
    units: SentenceUnits,
    segment_bounds: list[tuple[int, int]],
    budget: int,
    planner: Callable[[np.ndarray, int], list[np.ndarray]] | None = None,
) -> Batches:
    """The padded batches an extraction runs: each segment's inputs planned by `planner`
    (default the project's, `forward.model_batches`) within `budget`, in order."""
    padded, tokens = [], 0
    for start, end in segment_bounds:
        encoded = units.encode(start, end)
        lengths = np.array([len(item.input_ids) for item in encoded])
        tokens += int(lengths.sum())
        plan = (
            model_batches(loaded, lengths, budget) if planner is None else planner(lengths, budget)
        )
        for batch in plan:
            padded.append(pad_batch([encoded[i] for i in batch], loaded.encoder.pad_token_id))
    return Batches(padded, tokens)


def greedy_batches(lengths: np.ndarray, token_budget: int) -> list[np.ndarray]:
    """The planner before the least-cost one: longest first, a batch closed when the next
    item would take it past the budget."""
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


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def two_passes(run: Callable[[Any], None], inputs: list, tokens: int, device) -> dict:
    """Run `run` over `inputs` twice; both passes' tokens/s, the second the rate."""
    rates = []
    for _ in range(2):
        synchronize(device)
        started = time.perf_counter()
        for item in inputs:
            run(item)
        synchronize(device)
        rates.append(tokens / (time.perf_counter() - started))
    return {"first_pass_tokens_per_s": rates[0], "tokens_per_s": rates[1]}


@contextlib.contextmanager
def attention_kernels(names: tuple[str, ...]) -> Iterator[None]:
    """The project's forward pass with `names` as its CUDA attention kernels."""
    kept = forward.CUDA_ATTENTION_KERNELS
    forward.CUDA_ATTENTION_KERNELS = names
    try:
        yield
    finally:
        forward.CUDA_ATTENTION_KERNELS = kept


def bare_forward(loaded: LoadedModel, batches: Batches, dtype: str) -> dict:
    """The bare model's rate on `batches` with each of `ATTENTIONS` (a model's own
    transformers class, weights in `dtype`, all hidden states returned, inputs on the
    device), and the fastest as ``tokens_per_s``."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from transformers import AutoModel

    device = next(loaded.model.parameters()).device
    inputs = [
        (torch.from_numpy(i).to(device), torch.from_numpy(m).to(device)) for i, m in batches.padded
    ]
    rows = {}
    for attention in ATTENTIONS:
        implementation = attention.split("-")[0]
        model = AutoModel.from_pretrained(
            model_location(loaded.spec),
            dtype=getattr(torch, dtype),
            attn_implementation=implementation,
            gguf_file=loaded.spec.gguf_file,
        ).to(device).eval()  # fmt: skip
        kernels = ALL_KERNELS if attention == "sdpa" else ALL_KERNELS[1:]
        context = (
            sdpa_kernel([getattr(SDPBackend, name) for name in kernels])
            if device.type == "cuda"
            else contextlib.nullcontext()
        )

        def run(pair, model=model) -> None:
            model(input_ids=pair[0], attention_mask=pair[1], output_hidden_states=True)

        with torch.inference_mode(), context:
            rows[attention] = two_passes(run, inputs, batches.tokens, device)
        del model
        if device.type == "cuda":
            torch.cuda.empty_cache()
    best = max(rows, key=lambda name: rows[name]["tokens_per_s"])
    return {"by_attention": rows, "fastest": best, "tokens_per_s": rows[best]["tokens_per_s"]}


def project_forward(loaded: LoadedModel, batches: Batches, layers: tuple[int, ...]) -> dict:
    """The extraction's own forward call (`forward.layer_states`) on `batches`."""
    device = next(loaded.model.parameters()).device
    dtype = forward_dtype(device, loaded.spec)

    def run(pair) -> None:
        layer_states(loaded, pair[0], pair[1], layers, dtype)

    return two_passes(run, batches.padded, batches.tokens, device)


def factor_rows(
    loaded: LoadedModel,
    autocast_model: LoadedModel,
    units: SentenceUnits,
    plan: ExtractionPlan,
    budget: int,
) -> list[dict]:
    """The project's forward pass from what it was to what it is, one change a row: the
    rate of each on its own batches, and its batches' padding. The changes of precision and
    attention are CUDA's; on a CPU the rows still run (the CPU mode keeps this code alive)."""
    layers = plan.layers
    counts = np.diff(plan.row_offsets)
    before_segments = segments(counts, BEFORE_SEGMENT_WORDS)
    before = plan_padded(loaded, units, before_segments, BEFORE_BUDGET, greedy_batches)
    least_cost = plan_padded(loaded, units, before_segments, BEFORE_BUDGET)
    wider = plan_padded(loaded, units, plan.segments, BEFORE_BUDGET)
    now = plan_padded(loaded, units, plan.segments, budget)
    steps = [
        ("before: float32 weights under float16 autocast, cuDNN attention, greedy "
         f"{BEFORE_BUDGET:,}-token batches in {BEFORE_SEGMENT_WORDS:,}-word segments",
         autocast_model, before, ALL_KERNELS),
        ("weights held in float16", loaded, before, ALL_KERNELS),
        ("attention without cuDNN's kernel", loaded, before, forward.CUDA_ATTENTION_KERNELS),
        ("least-cost batches", loaded, least_cost, forward.CUDA_ATTENTION_KERNELS),
        (f"{plan.segment_words:,}-word segments", loaded, wider, forward.CUDA_ATTENTION_KERNELS),
        (f"{budget:,}-token batches (the project now)", loaded, now,
         forward.CUDA_ATTENTION_KERNELS),
    ]  # fmt: skip
    rows = []
    for change, model, batches, kernels in steps:
        with attention_kernels(kernels):
            rate = project_forward(model, batches, layers)
        rows.append(
            {
                "change": change,
                "batches": len(batches.padded),
                "padding": batches.padded_tokens / batches.tokens,
                **rate,
            }
        )
    return rows


def cold_pass(
    loaded: LoadedModel, units: SentenceUnits, plan: ExtractionPlan, budget: int, cudnn: bool
) -> dict:
    """The project's first and second pass over its batches in this (fresh) process, with
    cuDNN's attention allowed or not."""
    batches = plan_padded(loaded, units, plan.segments, budget)
    kernels = ALL_KERNELS if cudnn else forward.CUDA_ATTENTION_KERNELS
    with attention_kernels(kernels):
        rate = project_forward(loaded, batches, plan.layers)
    return {"cudnn": cudnn, "batches": len(batches.padded), **rate}


def profile_table(
    loaded: LoadedModel, batches: Batches, layers: tuple[int, ...], rows: int = 15
) -> str:
    """Where the project's forward pass spends its time on a few of `batches`: torch's
    profile of the operators, by time on the GPU (on a CPU, by its own time)."""
    from torch.profiler import ProfilerActivity, profile

    device = next(loaded.model.parameters()).device
    dtype = forward_dtype(device, loaded.spec)
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    with profile(activities=activities) as profiler:
        for ids, mask in batches.padded[:3]:
            layer_states(loaded, ids, mask, layers, dtype)
        synchronize(device)
    order = "cuda_time_total" if device.type == "cuda" else "self_cpu_time_total"
    return profiler.key_averages().table(sort_by=order, row_limit=rows, max_name_column_width=60)
