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
a GPU cluster (docs/scale.md), every rate from the committed 7B-shaped GPU run
(bench/results/large-model-cuda-*.json), to bench/results/scaling-study.md.

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
            # "forward_only": files written before bench/extraction.py measured the bare model
            forward = (model.get("project_forward") or model["forward_only"])["tokens_per_s"]
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


# The worked study of docs/scale.md: 10⁹ tokens through a 7B decoder.
STUDY_TOKENS = 1e9
STUDY_MODEL = PREDICTED[-1]
STUDY_PARTITIONS = (1, 8, 32)  # extraction.partitions: GPU jobs run at once on the cluster
# Streaming keeps, per layer, two float64 sums of d per indexed word and a float32 sample
# of at most word_sample_size occurrences per word; the words indexed are the corpus's.
STUDY_INDEXED_WORDS = 100_000
STUDY_SAMPLE_SIZES = (100, 1000)
MEASURE_PEAK_RATIO = 1.5  # a measure job's peak memory / its float32 layer


def seven_b_run() -> tuple[dict, str]:
    """The committed 7B-shaped GPU run (bench/gpu/large_model.py, as the acceptance run's
    stage d writes it) and its file's name; SystemExit where none is committed."""
    for path in sorted(RESULTS.glob("large-model-cuda-*.json")):
        run = json.loads(path.read_text())
        if "project_forward" in run and run["non_embedding_parameters"] > 6e9:
            return run, path.name
    raise SystemExit("no 7B-shaped GPU run in bench/results (bench/gpu/run.sh, stage d)")


def study() -> str:
    """The worked estimate, every rate from the committed 7B-shaped run: GPU-hours of the
    forward pass, of the extraction of every fourth layer (measured) and of every layer
    (the measured pass at the measured disk's pace), the shards' bytes, and streamed."""
    run, source = seven_b_run()
    model = STUDY_MODEL
    tokens_per_word = run["tokens"] / run["words"]
    words = STUDY_TOKENS / tokens_per_word
    forward = run["project_forward"]["tokens_per_s"]
    measured_layers = len(run["layers_extracted"])
    selected = run["extraction"]["tokens_per_s"]
    streamed = run["streamed"]["tokens_per_s"]
    disk = run["disk"]["plain_mb_per_s"] * 1e6
    states = model.layers + 1
    every_layer = words * states * model.hidden_size * 2
    some_layers = words * measured_layers * model.hidden_size * 2
    hours = {
        "forward": STUDY_TOKENS / forward / 3600,
        "selected": STUDY_TOKENS / selected / 3600,
        "every": max(STUDY_TOKENS / forward, every_layer / disk) / 3600,
        "streamed": STUDY_TOKENS / streamed / 3600,
    }
    lines = [
        f"# Worked estimate: {STUDY_TOKENS:.0e} tokens through {model.name}",
        "",
        f"Written by `bench/scaling.py` from `{source}`: a random-init {model.name} shape in "
        f"bfloat16 on one {run['device_name']}, {run['tokens']:,} tokens "
        f"({tokens_per_word:.2f} tokens per word).",
        "",
        f"- forward pass: {forward:,.0f} tokens/s "
        f"({run['project_forward']['utilisation']:.0%} of the card's dense peak), so "
        f"{hours['forward']:,.1f} GPU-hours;",
        f"- every fourth layer stored ({measured_layers} of {states} states): "
        f"{selected:,.0f} tokens/s measured, {hours['selected']:,.1f} GPU-hours, "
        f"{_bytes(some_layers)} of shards;",
        f"- every layer stored: {_bytes(every_layer)} of shards, which the node's disk "
        f"({disk / 1e9:.2f} GB/s, measured) takes {every_layer / disk / 3600:,.1f} hours to "
        f"write: {hours['every']:,.1f} hours, the disk's pace;",
        f"- streamed (no shard): {streamed:,.0f} tokens/s measured, {hours['streamed']:,.1f} "
        "GPU-hours;",
        f"- a measure job holds its layer as float32, {MEASURE_PEAK_RATIO} × that at its peak "
        "(`measure-memory-cpu.md`): "
        f"{_bytes(words * model.hidden_size * 4 * MEASURE_PEAK_RATIO)} per layer, beyond any "
        "node's memory: at this size, stream, or sample the corpus.",
        "",
        "| GPU jobs at once (`extraction.partitions`) | every fourth layer stored "
        "| every layer stored | streamed |",
        "|---|---|---|---|",
    ]
    for parts in STUDY_PARTITIONS:
        cells = [_duration(hours[key] * 3600 / parts) for key in ("selected", "every", "streamed")]
        lines.append(f"| {parts} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "Each partitioned job writes its own part (a stored model's shards on its node's "
        "disk; a streamed model's state, merged by one job at the end). Streamed, each "
        "layer's state, held in GPU memory while the model runs, has two float64 sums per "
        "indexed word (each kept exactly as two int64 limbs) and a float32 sample of at most "
        f"word_sample_size occurrences per word (for {STUDY_INDEXED_WORDS:,} indexed words, "
        "all of them frequent enough to fill it):",
        "",
        "| word_sample_size | state per layer | all layers |",
        "|---|---|---|",
    ]
    for sample in STUDY_SAMPLE_SIZES:
        per_layer = STUDY_INDEXED_WORDS * model.hidden_size * (2 * 16 + sample * 4)
        lines.append(f"| {sample:,} | {_bytes(per_layer)} | {_bytes(per_layer * states)} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    rows = measured_rates()
    text = report(rows)
    (RESULTS / "scaling-cpu.md").write_text(text)
    print(text)
    text = study()
    (RESULTS / "scaling-study.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
