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
go to bench/results/scaling-cpu.md.

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
PREDICTED = (
    Architecture("GPT-2 / BERT-base (124M)", 12, 768, 85.0e6),
    Architecture("GPT-2 medium (355M)", 24, 1024, 302.0e6),
    Architecture("GPT-2 XL (1.5B)", 48, 1600, 1.475e9),
    Architecture("Llama-2-7B", 32, 4096, 6.48e9),
)


def measured_rates() -> list[dict]:
    """Each measured model's forward-only and full-extraction rates and tokens per word."""
    rows = []
    for path in sorted(RESULTS.glob("extraction-cpu*.json")):
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


def main() -> None:
    text = report(measured_rates())
    (RESULTS / "scaling-cpu.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
