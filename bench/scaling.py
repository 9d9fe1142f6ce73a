"""How extraction time and shard storage grow with corpus and model size, from measured costs.

Nothing runs a model here. The script reads the extraction throughputs measured on this
machine by bench/extraction.py (bench/results/extraction-cpu*.json) and turns each model's
forward-only rate into the arithmetic rate it reached, FLOP/s = 2 × non-embedding
parameters × tokens/s (a forward pass costs about two operations per weight and token).
Their mean then predicts the time other architectures take on the same machine:

    extraction time ≈ tokens × 2 × non-embedding parameters / FLOP/s

and their shards take, stored as float16 with one row per word occurrence (every layer),

    storage = words × (layers + 1) × hidden size × 2 bytes,

with words = tokens / (tokens per word), the ratio measured over the same corpus. Results
go to bench/results/scaling-cpu.md; the worked estimate of a 10⁹-token study of a 7B model on
a GPU cluster (docs/scale.md), from the GPU benchmark's rates where one is committed, to
bench/results/scaling-study.md.

    python bench/scaling.py
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"
CORPUS_TOKENS = (1_000_000, 10_000_000, 100_000_000)


@dataclass(frozen=True)
class Architecture:
    """A model's size as its published configuration gives it."""

    name: str
    layers: int
    hidden_size: int
    non_embedding_parameters: float


# The measured models (their configurations: MiniLM-L6 and SmolLM2-135M) and the sizes to
# predict, from the GPT-2 family to a 7B Llama.
MEASURED = {
    "minilm": Architecture("MiniLM-L6 (measured)", 6, 384, 10.6e6),
    "smollm2": Architecture("SmolLM2-135M (measured)", 30, 576, 106.2e6),
}
# The runs at each model's default settings (not the token-budget sweep).
MEASURED_FILES = ("extraction-cpu.json", "extraction-cpu-decoder.json")
PREDICTED = (
    Architecture("GPT-2 / BERT-base (124M)", 12, 768, 85.0e6),
    Architecture("GPT-2 medium (355M)", 24, 1024, 302.0e6),
    Architecture("GPT-2 XL (1.5B)", 48, 1600, 1.475e9),
    Architecture("Llama-2-7B", 32, 4096, 6.48e9),
)


def measured_rates() -> list[dict]:
    """Each measured model's forward-only and full-extraction rates and tokens per word."""
    rows = []
    for path in (RESULTS / name for name in MEASURED_FILES):
        result = json.loads(path.read_text())
        for model in result["models"]:
            if model["model"] not in MEASURED:
                continue
            architecture = MEASURED[model["model"]]
            forward = model["forward_only"]["tokens_per_s"]
            full = model["full_extraction"]
            rows.append(
                {
                    "architecture": architecture,
                    "source": path.name,
                    "forward_tokens_per_s": forward,
                    "full_tokens_per_s": full["tokens_per_s"],
                    "flop_per_s": 2 * architecture.non_embedding_parameters * forward,
                    "tokens_per_word": full["tokens"] / full["words"],
                }
            )
    if not rows:
        raise SystemExit("no measured MiniLM or SmolLM2 rate in bench/results; run extraction.py")
    return rows


def _duration(seconds: float) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds / size:,.1f} {unit}"
    return f"{seconds:,.0f} s"


def _bytes(count: float) -> str:
    for unit, size in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6)):
        if count >= size:
            return f"{count / size:,.1f} {unit}"
    return f"{count:,.0f} B"


def report(rows: list[dict]) -> str:
    """The measured rates, then time and storage per architecture and corpus size."""
    rate = sum(row["flop_per_s"] for row in rows) / len(rows)
    tokens_per_word = sum(row["tokens_per_word"] for row in rows) / len(rows)
    lines = [
        "# Scaling of extraction time and storage (2 CPU cores)",
        "",
        "Written by `bench/scaling.py` from the measured rates below: forward-only tokens/s",
        "× 2 × non-embedding parameters gives the arithmetic rate reached; time is predicted",
        "at their mean, storage is words × (layers + 1) × hidden size × 2 bytes (float16).",
        "",
        "| measured model | from | forward tok/s | full tok/s | GFLOP/s | tokens per word |",
        "|---|---|---|---|---|---|",
    ]
    for row in rows:
        lines.append(
            f"| {row['architecture'].name} | `{row['source']}` "
            f"| {row['forward_tokens_per_s']:,.0f} | {row['full_tokens_per_s']:,.0f} "
            f"| {row['flop_per_s'] / 1e9:,.1f} | {row['tokens_per_word']:.2f} |"
        )
    lines += [
        "",
        f"Mean rate {rate / 1e9:,.1f} GFLOP/s; {tokens_per_word:.2f} tokens per word.",
        "",
        "| model | layers × dim | "
        + " | ".join(f"{tokens / 1e6:,.0f}M tokens: time, shards" for tokens in CORPUS_TOKENS)
        + " |",
        "|---|---|" + "---|" * len(CORPUS_TOKENS),
    ]
    for architecture in (*(row["architecture"] for row in rows), *PREDICTED):
        cells = []
        for tokens in CORPUS_TOKENS:
            seconds = tokens * 2 * architecture.non_embedding_parameters / rate
            words = tokens / tokens_per_word
            storage = words * (architecture.layers + 1) * architecture.hidden_size * 2
            cells.append(f"{_duration(seconds)}, {_bytes(storage)}")
        lines.append(
            f"| {architecture.name} | {architecture.layers + 1}×{architecture.hidden_size} | "
            + " | ".join(cells)
            + " |"
        )
    return "\n".join(lines) + "\n"


# The worked study of docs/scale.md: 10⁹ tokens through a 7B decoder, every hidden state.
STUDY_TOKENS = 1e9
STUDY_MODEL = PREDICTED[-1]
STUDY_PARTITIONS = (1, 8, 32)  # extraction.partitions: GPU jobs run at once on the cluster
# Until a GPU run is committed (bench/results/extraction-cuda-*.json), the GPU's arithmetic
# rate is an assumption: a third of an H100's dense bfloat16 peak (989 TFLOP/s).
ASSUMED_GPU_FLOP_PER_S = 330e12
# Streaming keeps, per layer, two float64 sums of d per indexed word and a float32 sample
# of at most word_sample_size occurrences per word; the words indexed are the corpus's.
STUDY_INDEXED_WORDS = 100_000
STUDY_SAMPLE_SIZES = (100, 1000)
GPT2_SHAPED_NON_EMBEDDING = 85.0e6  # bench/extraction.py's bert-base and gpt2
MEASURE_PEAK_RATIO = 1.5  # a measure job's peak memory / its float32 layer


def gpu_rates() -> tuple[float, float, str]:
    """The GPU's arithmetic rate (FLOP/s: the best forward-only rate of the GPU benchmark's
    base-size models, × 2 × non-embedding parameters: a floor for a larger model's rate)
    and its disk's write rate (bytes/s), with where they come from; the assumption and this
    machine's disk while no GPU run is committed."""
    runs = sorted(RESULTS.glob("extraction-cuda-*.json"))
    if runs:
        result = json.loads(runs[-1].read_text())
        forward = max(row["forward_only"]["tokens_per_s"] for row in result["models"])
        write = min(row["write_only"]["mb_per_s"] for row in result["models"]) * 1e6
        source = (
            f"measured: `{runs[-1].name}`, the faster base-size model's forward pass; a 7B "
            "model's larger matrices run nearer the GPU's peak, so its hours are an upper bound"
        )
        return 2 * GPT2_SHAPED_NON_EMBEDDING * forward, write, source
    cpu = json.loads((RESULTS / "extraction-cpu.json").read_text())
    write = min(row["write_only"]["mb_per_s"] for row in cpu["models"]) * 1e6
    source = (
        f"assumed: {ASSUMED_GPU_FLOP_PER_S / 1e12:.0f} TFLOP/s (no GPU run committed yet); "
        "disk: `extraction-cpu.json`"
    )
    return ASSUMED_GPU_FLOP_PER_S, write, source


def study(tokens_per_word: float) -> str:
    """The worked estimate: GPU-hours, shard bytes and time to write them, stored against
    streamed, for `STUDY_TOKENS` through `STUDY_MODEL` on a cluster."""
    flop_per_s, write_per_s, source = gpu_rates()
    model = STUDY_MODEL
    gpu_seconds = STUDY_TOKENS * 2 * model.non_embedding_parameters / flop_per_s
    words = STUDY_TOKENS / tokens_per_word
    states = model.layers + 1
    shards = words * states * model.hidden_size * 2
    write_seconds = shards / write_per_s
    lines = [
        f"# Worked estimate: {STUDY_TOKENS:.0e} tokens through {model.name}, every hidden state",
        "",
        f"Written by `bench/scaling.py`. GPU rate {flop_per_s / 1e12:,.0f} TFLOP/s, disk "
        f"{write_per_s / 1e9:.2f} GB/s ({source}); {tokens_per_word:.2f} tokens per word "
        "(measured).",
        "",
        f"- forward passes: {gpu_seconds / 3600:,.0f} GPU-hours "
        f"({STUDY_TOKENS:.0e} × 2 × {model.non_embedding_parameters:.3g} FLOP / rate);",
        f"- shards (float16, {states} × {model.hidden_size} per word, {words:.3g} words): "
        f"{_bytes(shards)}, {write_seconds / 3600:,.0f} hours of writing at that disk rate;",
        f"- a measure job holds its layer as float32, {MEASURE_PEAK_RATIO} × that at its peak "
        "(`measure-memory-cpu.md`): "
        f"{_bytes(words * model.hidden_size * 4 * MEASURE_PEAK_RATIO)} per layer, beyond any "
        "node's memory: at this size, measure while extracting (streamed), or sample the "
        "corpus.",
        "",
        "| GPU jobs at once (`extraction.partitions`) | wall time, stored | wall time, streamed "
        "| shards per job |",
        "|---|---|---|---|",
    ]
    for parts in STUDY_PARTITIONS:
        stored = max(gpu_seconds, write_seconds) / parts
        streamed = _duration(gpu_seconds) if parts == 1 else "(a streamed model runs as one job)"
        lines.append(f"| {parts} | {_duration(stored)} | {streamed} | {_bytes(shards / parts)} |")
    lines += [
        "",
        "Streamed (`models.<name>.streaming`), no shard is written; each layer's state, held "
        "in memory while the model runs, has two float64 sums per indexed word and a float32 "
        f"sample of at most word_sample_size occurrences per word (for {STUDY_INDEXED_WORDS:,} "
        "indexed words, all of them frequent enough to fill it):",
        "",
        "| word_sample_size | state per layer | all layers |",
        "|---|---|---|",
    ]
    for sample in STUDY_SAMPLE_SIZES:
        per_layer = STUDY_INDEXED_WORDS * model.hidden_size * (2 * 8 + sample * 4)
        lines.append(f"| {sample:,} | {_bytes(per_layer)} | {_bytes(per_layer * states)} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    rows = measured_rates()
    text = report(rows)
    (RESULTS / "scaling-cpu.md").write_text(text)
    print(text)
    tokens_per_word = sum(row["tokens_per_word"] for row in rows) / len(rows)
    text = study(tokens_per_word)
    (RESULTS / "scaling-study.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
