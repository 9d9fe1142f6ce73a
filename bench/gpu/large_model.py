"""A 7B decoder through the project: a random-init Llama-2-7B shape in bfloat16, every
fourth hidden state of about 75,000 tokens extracted, against the bare model and the disk.

    python bench/gpu/large_model.py --device cuda --out large-model.json   # Llama-2-7B shape
    python bench/gpu/large_model.py --device cpu --out large-model.json    # tiny, same path

The model is a LlamaModel of Llama-2-7B's sizes (32 blocks of 4,096, MLP 11,008, 32 heads,
a 32,000-entry vocabulary; 6.74 B parameters, 6.61 B without the embeddings), built on
the device in bfloat16 and saved with ``save_pretrained``, so that it loads exactly as a
downloaded one would (``cuda_dtype: bfloat16``, its weights held in it on the GPU); the
tokenizer is a byte-level BPE trained on the corpus. Speed does not depend on the weights'
values. On the same padded batches (the extraction's own; `forward_bounds`), in one run:

- the bare model: all hidden states, inputs on the device, with torch's attention
  kernels (cuDNN's first) and without cuDNN's, the faster the bound;
- the project's forward pass (`forward.layer_states`);
- the extraction of layers 0, 4, ..., 32 into shards, flushed to the disk, and streamed
  (their sums on the GPU, no shard);
- the disk: the same bytes written plainly with fsync;

each rate the second of two passes (the bare model without cuDNN shares the project's
first), in tokens/s and as model FLOP utilisation, 2 × non-embedding parameters × tokens/s
÷ the card's dense 16-bit peak (`DENSE_PEAK`; on a CPU a float32 matrix product's
measured rate stands in), with peak GPU memory and the bytes written. Each phase says
when it starts and what it took as it ends (`phase`), so that a run stopped at its limit
still tells where the time went.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import resource
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]

import forward_bounds  # noqa: E402

from contextuality.backends import load_model, model_settings  # noqa: E402
from contextuality.backends.base import token_budget  # noqa: E402
from contextuality.extraction.partitions import plan_extraction  # noqa: E402
from contextuality.extraction.units import sentence_units  # noqa: E402

import random_models  # noqa: E402
from arguments import positive_int  # noqa: E402
from extraction import (  # noqa: E402
    disk_bounds,
    full_extraction,
    load_corpus,
    streamed_extraction,
)

SIZES = {
    "cuda": {
        "hidden_size": 4096,
        "intermediate_size": 11008,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "num_key_value_heads": 32,
        "vocab_size": 32000,
    },
    "cpu": {
        "hidden_size": 64,
        "intermediate_size": 176,
        "num_hidden_layers": 8,
        "num_attention_heads": 4,
        "num_key_value_heads": 4,
        "vocab_size": 32000,
    },
}
# About 75,000 tokens on the GPU: a 7B forward pass runs at about 30,000 tok/s on an H100
# (forward-profile-cuda-h100.md), so each of the stage's ten passes takes seconds and its
# writes a few GB, and the acceptance fits one device call.
WORDS = {"cuda": 60_000, "cpu": 2_000}
LAYER_STEP = 4
# Dense 16-bit tensor-core peaks (NVIDIA's data sheets, without sparsity), FLOP/s.
DENSE_PEAK = {"H100": 989.4e12, "H200": 989.4e12, "A100": 312e12}


def build(directory: Path, sentences: list[str], device: str) -> tuple[int, int]:
    """Save a random-init bfloat16 LlamaModel of the device's size with a byte-level BPE
    trained on `sentences`; its parameters, all and without the embeddings."""
    from transformers import LlamaConfig, LlamaModel

    tokenizer = random_models.trained_byte_level_tokenizer(sentences, 16_000)
    tokenizer.save_pretrained(directory)
    end = tokenizer.convert_tokens_to_ids(random_models.END_OF_TEXT)
    config = LlamaConfig(bos_token_id=end, eos_token_id=end, **SIZES[device])
    torch.manual_seed(0)
    kept = torch.get_default_dtype()
    torch.set_default_dtype(torch.bfloat16)
    try:
        with torch.device(device):
            model = LlamaModel(config)
    finally:
        torch.set_default_dtype(kept)
    parameters = sum(parameter.numel() for parameter in model.parameters())
    embedding = model.embed_tokens.weight.numel()
    model.save_pretrained(directory)
    del model
    if device == "cuda":
        torch.cuda.empty_cache()
    return parameters, parameters - embedding


def dense_peak(device: str) -> tuple[float, str]:
    """The FLOP/s that utilisation is counted against, and what it is."""
    if device == "cuda":
        name = torch.cuda.get_device_name(0)
        for card, peak in DENSE_PEAK.items():
            if card in name:
                return peak, f"{card} dense bfloat16 peak (data sheet)"
    size = 2048
    a, b = torch.randn(size, size, device=device), torch.randn(size, size, device=device)
    forward_bounds.synchronize(torch.device(device))
    started = time.perf_counter()
    for _ in range(5):
        a @ b
    forward_bounds.synchronize(torch.device(device))
    rate = 5 * 2 * size**3 / (time.perf_counter() - started)
    return rate, "a float32 matrix product's measured rate"


def bare_passes(loaded, batches: forward_bounds.Batches) -> dict:
    """The loaded model called bare on the batches already on the device, all hidden
    states returned: without cuDNN's attention (its first pass shares the kernels the
    project's passes just used, so it is timed once) and with torch's own choice."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    device = next(loaded.model.parameters()).device
    inputs = [
        (torch.from_numpy(ids).to(device), torch.from_numpy(mask).to(device))
        for ids, mask in batches.padded
    ]

    def run(pair) -> None:
        loaded.model(input_ids=pair[0], attention_mask=pair[1], output_hidden_states=True)

    rows = {}
    for name, kernels in (
        ("sdpa-no-cudnn", forward_bounds.ALL_KERNELS[1:]),
        ("sdpa", forward_bounds.ALL_KERNELS),
    ):
        context = (
            sdpa_kernel([getattr(SDPBackend, kernel) for kernel in kernels])
            if device.type == "cuda"
            else contextlib.nullcontext()
        )
        with torch.inference_mode(), context:
            rows[name] = forward_bounds.two_passes(run, inputs, batches.tokens, device)
    best = max(rows, key=lambda name: rows[name]["tokens_per_s"])
    return {"by_attention": rows, "fastest": best, "tokens_per_s": rows[best]["tokens_per_s"]}


@contextlib.contextmanager
def phase(name: str) -> Iterator[None]:
    """Say on the console that `name` starts, and its seconds once it ends."""
    print(f"large model: {name} ...", flush=True)
    started = time.perf_counter()
    yield
    print(f"large model: {name}: {time.perf_counter() - started:.1f} s", flush=True)


def measure(device: str, corpus: Path, work: Path, words: int) -> dict:
    """Build, load and measure the model on about `words` words of `corpus` (see the module
    docstring)."""
    sentences = corpus.read_text(encoding="utf-8").splitlines()
    started = time.perf_counter()
    with phase("build and save"):
        parameters, non_embedding = build(work / "model", sentences, device)
    built = time.perf_counter() - started
    if device == "cuda":
        torch.cuda.reset_peak_memory_stats()
    settings = {
        "source": str(work / "model"),
        "weights_dtype": "bfloat16",
        "cuda_dtype": "bfloat16",
        "device": device,
        "layers": list(range(0, SIZES[device]["num_hidden_layers"] + 1, LAYER_STEP)),
    }
    started = time.perf_counter()
    with phase("load"):
        loaded = load_model(model_settings("large", settings), device)
    loaded_seconds = time.perf_counter() - started
    with phase("tokenize and plan"):
        chosen = load_corpus(words, str(corpus))
        units = sentence_units(loaded, chosen)
        plan = plan_extraction(loaded, units.counts, tuple(settings["layers"]))
        budget = token_budget(loaded.spec, device)
        batches = forward_bounds.plan_padded(loaded, units, plan.segments, budget)
    with phase(f"the project's forward pass, twice ({batches.tokens:,} tokens)"):
        project = forward_bounds.project_forward(loaded, batches, plan.layers)
    with phase("profile"):
        profile = forward_bounds.profile_table(loaded, batches, plan.layers)
    with phase("the bare model, twice with and twice without cuDNN's attention"):
        bare = bare_passes(loaded, batches)
    with phase("full extraction"):
        full = full_extraction(loaded, units, plan, work)
    with phase("streamed extraction"):
        streamed = streamed_extraction(loaded, units, plan, chosen, work)
    n_bytes = plan.n_rows * len(plan.layers) * loaded.hidden_size * 2
    with phase(f"the disk ({n_bytes / 1e9:.1f} GB)"):
        disk = disk_bounds(n_bytes, len(plan.layers), loaded.hidden_size, work, filtered=False)
    disk_tokens_per_s = disk["plain_mb_per_s"] * 1e6 / (n_bytes / full["tokens"])
    peak, peak_of = dense_peak(device)

    def utilisation(tokens_per_s: float) -> float:
        return 2 * non_embedding * tokens_per_s / peak

    return {
        "device": device,
        "device_name": torch.cuda.get_device_name(0) if device == "cuda" else "cpu",
        "parameters": parameters,
        "non_embedding_parameters": non_embedding,
        "layers_extracted": list(plan.layers),
        "hidden_size": loaded.hidden_size,
        "weights_dtype": str(next(loaded.model.parameters()).dtype).removeprefix("torch."),
        "build_seconds": round(built, 1),
        "load_seconds": round(loaded_seconds, 1),
        "token_budget": budget,
        "batches": len(batches.padded),
        "padding": batches.padded_tokens / batches.tokens,
        "words": full["words"],
        "tokens": full["tokens"],
        "peak_flop_per_s": peak,
        "peak_of": peak_of,
        "bare": {**bare, "utilisation": utilisation(bare["tokens_per_s"])},
        "project_forward": {**project, "utilisation": utilisation(project["tokens_per_s"])},
        "extraction": {**full, "utilisation": utilisation(full["tokens_per_s"])},
        "streamed": {**streamed, "utilisation": utilisation(streamed["tokens_per_s"])},
        "disk": {**disk, "tokens_per_s_bound": disk_tokens_per_s},
        "forward_to_bare": project["tokens_per_s"] / bare["tokens_per_s"],
        "streamed_to_forward": streamed["tokens_per_s"] / project["tokens_per_s"],
        "extraction_to_bound": full["tokens_per_s"] / min(bare["tokens_per_s"], disk_tokens_per_s),
        **peak_memory(device),
        "profile": profile,
    }


def peak_memory(device: str) -> dict[str, float | str]:
    """The peak memory of the load and extraction: the GPU's allocations on CUDA, else the
    process's resident set (which includes building the model)."""
    if device == "cuda":
        peak, of = torch.cuda.max_memory_allocated(), "GPU allocations (torch)"
    else:
        peak, of = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024, "process RSS"
    return {"peak_memory_gib": peak / 2**30, "peak_memory_of": of}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=("cuda", "cpu"), required=True)
    parser.add_argument("--out", type=Path, required=True, help="the result's JSON file")
    parser.add_argument("--corpus", type=Path, default=HERE / "travel" / "corpus.txt")
    parser.add_argument(
        "--words", type=positive_int, help="words of the corpus to extract (default: WORDS)"
    )
    arguments = parser.parse_args()
    words = arguments.words or WORDS[arguments.device]
    with tempfile.TemporaryDirectory(prefix="large-model-", dir=Path.cwd()) as scratch:
        result = measure(arguments.device, arguments.corpus, Path(scratch), words)
    arguments.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({k: v for k, v in result.items() if k not in ("extraction", "profile")}))


if __name__ == "__main__":
    main()
