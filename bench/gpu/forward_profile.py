"""Where the forward pass's time went on a GPU before the changes of the forward pass, one
factor at a time (the diagnosis behind bench/results/forward-profile-cuda-h100.md; run at
93eabbd, the project's forward then float32 weights under float16 autocast).

    python bench/gpu/forward_profile.py --out DIR [--tokens N]
    PROFILE_DEVICE=cpu python bench/gpu/forward_profile.py --out DIR --tokens 5000  # smoke

For BERT-base and GPT-2 shapes (random init) and token budgets 8k-128k, on batches planned
over the whole corpus: the model as then loaded (float32 weights under float16 autocast,
torch's choice of attention kernel), then its weights cast to float16 without autocast,
the attention implementations, without hidden states, and the inputs already on the
device, each timed in two passes; the host time of one forward; a torch profile; the
disk written plainly (fsync) and through HDF5's checksum filter; a Llama-2-7B shape in
bfloat16. JSON lines to stdout and DIR/forward-profile.jsonl. bench/extraction.py measures
the same factors on the project as it is now.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import traceback
from pathlib import Path

import numpy as np
import torch

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]

from forward_bounds import greedy_batches  # noqa: E402
from large_model import SIZES  # noqa: E402

from contextuality import backends  # noqa: E402
from contextuality.backends.settings import ModelSettings  # noqa: E402
from contextuality.extraction.forward import pad_batch  # noqa: E402
from contextuality.extraction.units import sentence_units  # noqa: E402

import random_models  # noqa: E402
from arguments import output_directory, positive_int  # noqa: E402
from extraction import _random_init_model, disk_bounds, load_corpus  # noqa: E402

OUT: Path
DEVICE = torch.device(os.environ.get("PROFILE_DEVICE", "cuda"))
SMOKE = DEVICE.type == "cpu"


def sync() -> None:
    if not SMOKE:
        torch.cuda.synchronize()


def emit(record: dict) -> None:
    line = json.dumps(record, default=str)
    print(line, flush=True)
    with (OUT / "forward-profile.jsonl").open("a") as stream:
        stream.write(line + "\n")


def padded_batches(loaded, corpus, budget):
    encoded = sentence_units(loaded, corpus).encode(0, len(corpus))
    lengths = np.array([len(item.input_ids) for item in encoded])
    batches = []
    for batch in greedy_batches(lengths, budget):
        ids, mask = pad_batch([encoded[item] for item in batch], loaded.encoder.pad_token_id)
        batches.append((torch.from_numpy(ids), torch.from_numpy(mask)))
    padded = sum(ids.numel() for ids, _ in batches)
    return batches, int(lengths.sum()), padded


def _precision(autocast):
    if autocast:
        return torch.autocast("cuda", dtype=autocast)
    return torch.autocast("cuda", enabled=False)


def timed(model, batches, tokens, *, autocast=None, hidden=True, on_device=False, repeat=1):
    if on_device:
        batches = [(ids.to(DEVICE), mask.to(DEVICE)) for ids, mask in batches]
    with torch.inference_mode(), _precision(autocast):
        ids, mask = batches[0]
        model(input_ids=ids.to(DEVICE), attention_mask=mask.to(DEVICE), output_hidden_states=hidden)
        sync()
        best = []
        for _ in range(repeat):
            started = time.perf_counter()
            for ids, mask in batches:
                model(
                    input_ids=ids.to(DEVICE, non_blocking=True),
                    attention_mask=mask.to(DEVICE, non_blocking=True),
                    output_hidden_states=hidden,
                )
            sync()
            best.append(time.perf_counter() - started)
    return {"tok_s": [round(tokens / s) for s in best], "seconds": [round(s, 4) for s in best]}


def host_overhead(model, batches, autocast):
    """CPU time to launch one forward of the smallest batch (no sync)."""
    ids, mask = batches[-1]
    ids, mask = ids.to(DEVICE), mask.to(DEVICE)
    with torch.inference_mode(), _precision(autocast):
        sync()
        started = time.perf_counter()
        for _ in range(10):
            model(input_ids=ids, attention_mask=mask, output_hidden_states=True)
        launched = time.perf_counter() - started
        sync()
        total = time.perf_counter() - started
    return {"launch_ms": launched * 100, "total_ms": total * 100, "shape": list(ids.shape)}


def profile(model, batches, autocast):
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as torch_profile

    activities = [ProfilerActivity.CPU, ProfilerActivity.CUDA]
    with (
        torch.inference_mode(),
        torch.autocast("cuda", dtype=autocast),
        torch_profile(activities=activities) as prof,
    ):
        for ids, mask in batches[:4]:
            model(
                input_ids=ids.to(DEVICE), attention_mask=mask.to(DEVICE), output_hidden_states=True
            )
        sync()
    table = prof.key_averages().table(sort_by="cuda_time_total", row_limit=25)
    cpu_table = prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=25)
    (OUT / f"profile-{model.config.model_type}.txt").write_text(table + "\n\n" + cpu_table)


def bench_shape(name, corpus, work):
    spec = ModelSettings(name=name, source=str(_random_init_model(name, work / name, corpus)))
    loaded = backends.load_model(spec, DEVICE.type)
    model = loaded.model
    emit(
        {
            "model": name,
            "attn_loaded": model.config._attn_implementation,
            "dtype": str(next(model.parameters()).dtype),
        }
    )
    for budget in (8192, 32768, 131072):
        batches, tokens, padded = padded_batches(loaded, corpus, budget)
        row = {"model": name, "budget": budget, "batches": len(batches), "tokens": tokens}
        row["padded"] = padded
        row["project_fp32w_autocast"] = timed(
            model, batches, tokens, autocast=torch.float16, repeat=2
        )
        emit(row)
    batches8, _, _ = padded_batches(loaded, corpus, 8192)
    try:
        emit({"model": name, "host_fp32_autocast": host_overhead(model, batches8, torch.float16)})
        profile(model, batches8, torch.float16)
    except Exception:
        emit({"model": name, "profile_error": traceback.format_exc()[-600:]})
    model.half()
    for attn in ("sdpa", "eager"):
        model.set_attn_implementation(attn)
        for budget in (8192, 32768, 131072):
            batches, tokens, _ = padded_batches(loaded, corpus, budget)
            row = {"model": name, "attn": attn, "budget": budget}
            row["fp16w"] = timed(model, batches, tokens, repeat=2)
            if attn == "sdpa":
                row["fp16w_nohidden"] = timed(model, batches, tokens, hidden=False)
                row["fp16w_ondevice"] = timed(model, batches, tokens, on_device=True)
                row["fp16w_autocast"] = timed(model, batches, tokens, autocast=torch.float16)
            emit(row)
    model.set_attn_implementation("sdpa")
    emit({"model": name, "host_fp16_sdpa": host_overhead(model, batches8, None)})


def disk(directory: Path):
    size = 2**28 if SMOKE else 2 * 2**30
    rates = disk_bounds(size, 13, 768, directory)
    emit(
        {
            "disk": str(directory),
            "plain_fsync_mb_s": round(rates["plain_mb_per_s"]),
            "hdf5_mb_s": round(rates["hdf5_filter_mb_per_s"]),
        }
    )


def llama7b(corpus):
    from transformers import LlamaConfig, LlamaModel

    config = LlamaConfig(**SIZES["cuda"])
    config._attn_implementation = "sdpa"
    started = time.perf_counter()
    torch.set_default_dtype(torch.bfloat16)
    with torch.device("cuda"):
        model = LlamaModel(config)
    torch.set_default_dtype(torch.float32)
    model.eval()
    emit(
        {
            "llama7b_build_s": round(time.perf_counter() - started, 1),
            "params": sum(p.numel() for p in model.parameters()),
            "attn": model.config._attn_implementation,
        }
    )
    tokenizer = random_models.trained_byte_level_tokenizer(corpus[:20000])
    lengths = np.array([len(ids) + 1 for ids in tokenizer(corpus)["input_ids"]])
    rng = np.random.default_rng(0)
    for budget in (16384, 65536):
        torch.cuda.reset_peak_memory_stats()
        batches = []
        for batch in greedy_batches(lengths, budget):
            longest = int(lengths[batch].max())
            ids = torch.from_numpy(rng.integers(0, 32000, (len(batch), longest)))
            mask = (np.arange(longest)[None] < lengths[batch][:, None]).astype(np.int64)
            batches.append((ids, torch.from_numpy(mask)))
        tokens = int(lengths.sum())
        row = {"llama7b_budget": budget, "tokens": tokens}
        for hidden in (True, False):
            row[f"hidden_{hidden}"] = timed(model, batches, tokens, hidden=hidden)
        row["peak_gib"] = torch.cuda.max_memory_allocated() / 2**30
        emit(row)


def matmul_peak():
    a = torch.randn(8192, 8192, device=DEVICE, dtype=torch.bfloat16)
    b = torch.randn(8192, 8192, device=DEVICE, dtype=torch.bfloat16)
    for _ in range(3):
        a @ b
    sync()
    started = time.perf_counter()
    for _ in range(20):
        a @ b
    sync()
    emit({"matmul_bf16_tflops": 2 * 8192**3 * 20 / (time.perf_counter() - started) / 1e12})


def main():
    global OUT
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=output_directory, required=True)
    parser.add_argument("--tokens", type=positive_int, default=200_000)
    parser.add_argument("--corpus", default=str(HERE / "travel" / "corpus.txt"))
    args = parser.parse_args()
    OUT = args.out
    OUT.mkdir(parents=True, exist_ok=True)
    import transformers

    device_name = str(DEVICE) if SMOKE else torch.cuda.get_device_name(0)
    emit(
        {
            "device": device_name,
            "torch": torch.__version__,
            "transformers": transformers.__version__,
            "cpus": os.cpu_count(),
        }
    )
    corpus = load_corpus(args.tokens, args.corpus)
    steps = [] if SMOKE else [matmul_peak]
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        names = ("tiny-bert", "tiny-gpt2") if SMOKE else ("bert-base", "gpt2")
        steps += [lambda name=name: bench_shape(name, corpus, work) for name in names]
        steps += [lambda: disk(Path.cwd()), lambda: disk(Path(tempfile.gettempdir()))]
        steps += [] if SMOKE else [lambda: llama7b(corpus)]
        for step in steps:
            started = time.perf_counter()
            try:
                step()
            except Exception:
                emit({"error": traceback.format_exc()[-1500:]})
            emit({"step_seconds": round(time.perf_counter() - started, 1)})


if __name__ == "__main__":
    main()
