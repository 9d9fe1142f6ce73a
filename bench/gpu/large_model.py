"""A large decoder through the large-model path: random-init weights in bfloat16, loaded with
``weights_dtype: bfloat16``, ``cuda_dtype: bfloat16`` and ``device_map: auto``, every hidden
state of a few thousand tokens extracted into shards; peak GPU memory recorded.

    python bench/gpu/large_model.py --device cuda --out large-model.json   # ~1.5 B parameters
    python bench/gpu/large_model.py --device cpu --out large-model.json    # tiny, same path

The model is a Llama (the shape of most open decoders) built on the device in bfloat16
and saved with ``save_pretrained``, so that it loads exactly as a downloaded one would.
Speed does not depend on the weights' values.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]

from contextuality.backends import load_model, model_spec  # noqa: E402
from contextuality.extraction.partitions import plan_extraction  # noqa: E402
from contextuality.extraction.run import extract  # noqa: E402
from contextuality.extraction.units import sentence_units  # noqa: E402
from contextuality.storage.shards import ShardSetWriter, load_shard  # noqa: E402

import random_models  # noqa: E402
from extraction import load_corpus  # noqa: E402

# Llama shapes: about 1.5 B parameters (24 blocks of 2,048, MLP 8,192), and a tiny one.
SIZES = {
    "cuda": {
        "hidden_size": 2048,
        "intermediate_size": 8192,
        "num_hidden_layers": 24,
        "num_attention_heads": 16,
        "num_key_value_heads": 8,
    },
    "cpu": {
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_hidden_layers": 2,
        "num_attention_heads": 2,
        "num_key_value_heads": 1,
    },
}
WORDS = {"cuda": 3000, "cpu": 500}


def build(directory: Path, sentences: list[str], device: str) -> int:
    """Save a random-init bfloat16 LlamaModel of the device's size with a byte-level BPE
    trained on `sentences`; its parameter count."""
    from transformers import LlamaConfig, LlamaModel

    tokenizer = random_models.trained_byte_level_tokenizer(sentences, 16_000)
    tokenizer.save_pretrained(directory)
    end = tokenizer.convert_tokens_to_ids(random_models.END_OF_TEXT)
    config = LlamaConfig(
        vocab_size=len(tokenizer), bos_token_id=end, eos_token_id=end, **SIZES[device]
    )
    torch.manual_seed(0)
    with torch.device(device):
        model = LlamaModel(config).to(torch.bfloat16)
    parameters = sum(parameter.numel() for parameter in model.parameters())
    model.save_pretrained(directory)
    del model
    if device == "cuda":
        torch.cuda.empty_cache()
    return parameters


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
    arguments = parser.parse_args()
    device = arguments.device
    sentences = arguments.corpus.read_text(encoding="utf-8").splitlines()
    with tempfile.TemporaryDirectory(prefix="large-model-") as scratch:
        work = Path(scratch)
        started = time.perf_counter()
        parameters = build(work / "model", sentences, device)
        built = time.perf_counter() - started
        if device == "cuda":
            torch.cuda.reset_peak_memory_stats()
        settings = {
            "source": str(work / "model"),
            "weights_dtype": "bfloat16",
            "cuda_dtype": "bfloat16",
            "device_map": "auto",
            "device": device,
        }
        started = time.perf_counter()
        loaded = load_model(model_spec("large", settings), device)
        loaded_seconds = time.perf_counter() - started
        chosen = load_corpus(WORDS[device], str(arguments.corpus))
        units = sentence_units(loaded, chosen)
        layers = tuple(range(loaded.n_layers + 1))
        plan = plan_extraction(loaded, units.counts, layers)
        paths = {layer: work / f"layer_{layer}.h5" for layer in layers}

        def open_sink(dtype: str) -> ShardSetWriter:
            return ShardSetWriter(
                paths, plan.n_rows, loaded.hidden_size, dtype, {"index_checksum": "i"}
            )

        report = extract(loaded, units, plan, open_sink, progress=False)
        finite = all(
            bool(np.isfinite(load_shard(paths[layer], "i", plan.n_rows)[0]).all())
            for layer in layers
        )
    devices = sorted({str(parameter.device) for parameter in loaded.model.parameters()})
    result = {
        "device": device,
        "device_name": torch.cuda.get_device_name(0) if device == "cuda" else "cpu",
        "parameters": parameters,
        "layers": len(layers),
        "hidden_size": loaded.hidden_size,
        "weights_dtype": str(next(loaded.model.parameters()).dtype).removeprefix("torch."),
        "placed_on": devices,
        "build_seconds": round(built, 1),
        "load_seconds": round(loaded_seconds, 1),
        "words": report.n_occurrences,
        "tokens": report.n_subword_tokens,
        "tokens_per_s": report.tokens_per_second,
        "extraction": report.as_dict(),
        "all_vectors_finite": finite,
        **peak_memory(device),
    }
    arguments.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({key: value for key, value in result.items() if key != "extraction"}))
    if not finite:
        raise SystemExit("non-finite vectors in a shard")


if __name__ == "__main__":
    main()
