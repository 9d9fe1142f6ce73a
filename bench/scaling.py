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
(bench/results/large-model-cuda-*.json), to bench/results/scaling-study.md; the numbers of
each as records beside it (`.json`), which docs/scale.md quotes.

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


def report(rows: list[dict]) -> tuple[str, dict]:
    """The measured rates, then time and storage per architecture and corpus size, as a
    report and as records (``rates``: GFLOP/s by model; ``predictions``: days and TB by
    model and corpus tokens)."""
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
    predictions = []
    for architecture in (*(row["architecture"] for row in rows), *PREDICTED):
        cells = []
        for tokens in CORPUS_TOKENS:
            seconds = tokens * 2 * architecture.non_embedding_parameters / rate
            words = tokens / tokens_per_word
            storage = words * (architecture.layers + 1) * architecture.hidden_size * 2
            cells.append(f"{_duration(seconds)}, {_bytes(storage)}")
            predictions.append(
                {
                    "model": architecture.name,
                    "tokens": tokens,
                    "days": seconds / 86400,
                    "shards_tb": storage / 1e12,
                }
            )
        lines.append(
            f"| {architecture.name} | {architecture.layers + 1}×{architecture.hidden_size} | "
            + " | ".join(cells)
            + " |"
        )
    rates = [
        {
            "model": row["architecture"].name,
            "gflop_per_s": row["flop_per_s"] / 1e9,
            "tokens_per_word": row["tokens_per_word"],
        }
        for row in rows
    ]
    return "\n".join(lines) + "\n", {"rates": rates, "predictions": predictions}


# The worked study of docs/scale.md: 10⁹ tokens through a 7B decoder.
STUDY_TOKENS = 1e9
STUDY_MODEL = PREDICTED[-1]
STUDY_PARTITIONS = (1, 8, 32)  # extraction.partitions: GPU jobs run at once on the cluster
# Streaming keeps, per layer, two float64 sums of d per indexed word and a float32 sample
# of at most word_sample_size occurrences per word; the words indexed are the corpus's.
STUDY_INDEXED_WORDS = 100_000
STUDY_SAMPLE_SIZES = (100, 1000)
MEASURE_PEAK_RATIO = 1.5  # a measure job's peak memory / its float32 layer
DENSE_PEAK = 989.4e12  # an H100's dense bfloat16 tensor-core peak, FLOP/s (data sheet)


def seven_b_rates() -> dict:
    """The 7B-shaped model's rates on one GPU, from committed runs: the acceptance run's
    stage d (bench/gpu/large_model.py: the project's forward pass, its extraction of every
    fourth layer, streamed, the disk) where one is committed; else the diagnosis of
    bench/gpu/forward_profile.py (the bare model's forward pass, the disk), the other two
    rates then bounds, not measurements. SystemExit where neither is committed."""
    for path in sorted(RESULTS.glob("large-model-cuda-*.json")):
        run = json.loads(path.read_text())
        if "project_forward" in run and run["non_embedding_parameters"] > 6e9:
            return {
                "source": f"`{path.name}`, the acceptance run's 7B-shaped stage",
                "device": run["device_name"],
                "forward": run["project_forward"]["tokens_per_s"],
                "forward_is": "the project's forward pass",
                "selected_layers": len(run["layers_extracted"]),
                "selected": run["extraction"]["tokens_per_s"],
                "streamed": run["streamed"]["tokens_per_s"],
                "measured": True,
                "disk": run["disk"]["plain_mb_per_s"] * 1e6,
            }
    profile = RESULTS / "forward-profile-cuda-h100.jsonl"
    if not profile.is_file():
        raise SystemExit("no 7B-shaped GPU run in bench/results (bench/gpu/run.sh, stage d)")
    records = [json.loads(line) for line in profile.read_text().splitlines()]
    seven_b = next(r for r in records if r.get("llama7b_budget") == 16384)
    disk = max(r["plain_fsync_mb_s"] for r in records if "plain_fsync_mb_s" in r) * 1e6
    forward = seven_b["hidden_False"]["tok_s"][0]
    return {
        "source": f"`{profile.name}`, the 7B shape's bare forward pass (no 7B-shaped "
        "acceptance run committed yet)",
        "device": records[0]["device"],
        "forward": forward,
        "forward_is": "the bare model's forward pass",
        "selected_layers": 9,
        "selected": None,
        "streamed": None,
        "measured": False,
        "disk": disk,
    }


def study(tokens_per_word: float) -> tuple[str, dict]:
    """The worked estimate from the 7B shape's committed rates (`seven_b_rates`), with
    `tokens_per_word` measured by real tokenizers (the random-init models' are trained on
    the benchmark's own corpus, and split its words less):
    GPU-hours of the forward pass, of the extraction of every fourth layer and of every
    layer (the disk's pace where it is slower), the shards' bytes, and streamed; as a
    report and as records (``rates``, ``estimate`` by quantity, ``partitions`` by jobs at
    once and quantity, ``state`` by word_sample_size)."""
    rates = seven_b_rates()
    model = STUDY_MODEL
    words = STUDY_TOKENS / tokens_per_word
    states, selected_states = model.layers + 1, rates["selected_layers"]
    every_layer = words * states * model.hidden_size * 2
    some_layers = words * selected_states * model.hidden_size * 2
    forward_seconds = STUDY_TOKENS / rates["forward"]

    def stored_seconds(n_bytes: float) -> float:  # the slower of the GPU and the disk
        return max(forward_seconds, n_bytes / rates["disk"])

    seconds = {
        "forward": forward_seconds,
        "selected": STUDY_TOKENS / rates["selected"]
        if rates["measured"]
        else stored_seconds(some_layers),
        "every": stored_seconds(every_layer),
        "streamed": STUDY_TOKENS / rates["streamed"] if rates["measured"] else forward_seconds,
    }
    utilisation = 2 * model.non_embedding_parameters * rates["forward"] / DENSE_PEAK
    how = "measured" if rates["measured"] else "the slower of the forward pass and the disk"
    streamed_how = "measured" if rates["measured"] else "at the forward pass's rate"
    lines = [
        f"# Worked estimate: {STUDY_TOKENS:.0e} tokens through {model.name}",
        "",
        f"Written by `bench/scaling.py` from {rates['source']}: a random-init {model.name} "
        f"shape in bfloat16 on one {rates['device']}; {tokens_per_word:.2f} subword tokens "
        "per word (MiniLM's and SmolLM2's tokenizers on STS, measured above).",
        "",
        f"- forward pass ({rates['forward_is']}): {rates['forward']:,.0f} tokens/s, "
        f"{utilisation:.0%} of an H100's dense bfloat16 peak, so "
        f"{seconds['forward'] / 3600:,.1f} GPU-hours;",
        f"- every fourth layer stored ({selected_states} of {states} states, "
        f"{_bytes(some_layers)} of shards): {seconds['selected'] / 3600:,.1f} hours ({how});",
        f"- every layer stored: {_bytes(every_layer)} of shards, which the node's disk "
        f"({rates['disk'] / 1e9:.2f} GB/s written with fsync, measured) takes "
        f"{every_layer / rates['disk'] / 3600:,.1f} hours to write: "
        f"{seconds['every'] / 3600:,.1f} hours;",
        f"- streamed (no shard): {seconds['streamed'] / 3600:,.1f} GPU-hours ({streamed_how});",
        f"- a measure job holds its layer as float32, {MEASURE_PEAK_RATIO} × that at its peak "
        "(`measure-memory-cpu.md`): "
        f"{_bytes(words * model.hidden_size * 4 * MEASURE_PEAK_RATIO)} per layer, beyond any "
        "node's memory: at this size, stream, or sample the corpus.",
        "",
        "| GPU jobs at once (`extraction.partitions`) | every fourth layer stored "
        "| every layer stored | streamed |",
        "|---|---|---|---|",
    ]
    partitions = []
    for parts in STUDY_PARTITIONS:
        cells = [_duration(seconds[key] / parts) for key in ("selected", "every", "streamed")]
        lines.append(f"| {parts} | " + " | ".join(cells) + " |")
        partitions += [
            {
                "partitions": parts,
                "quantity": key,
                "hours": seconds[key] / parts / 3600,
                "minutes": seconds[key] / parts / 60,
            }
            for key in ("selected", "every", "streamed")
        ]
    measure_peak = words * model.hidden_size * 4 * MEASURE_PEAK_RATIO
    shards = {"forward": 0.0, "selected": some_layers, "every": every_layer, "streamed": 0.0}
    records = {
        "rates": [
            {
                "forward_tokens_per_s": rates["forward"],
                "utilisation": utilisation,
                "disk_gb_per_s": rates["disk"] / 1e9,
                "tokens_per_word": tokens_per_word,
                "measure_peak_ratio": MEASURE_PEAK_RATIO,
                "measure_peak_tb": measure_peak / 1e12,
                "measured": rates["measured"],
            }
        ],
        "estimate": [
            {"quantity": key, "hours": seconds[key] / 3600, "shards_tb": shards[key] / 1e12}
            for key in seconds
        ],
        "partitions": partitions,
        "state": [],
    }
    lines += [
        "",
        "Each partitioned job writes its own part (a stored model's shards on its node's "
        "disk; a streamed model's state, merged at the end by a job per layer). Streamed, each "
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
        records["state"].append(
            {
                "word_sample_size": sample,
                "indexed_words": STUDY_INDEXED_WORDS,
                "per_layer_gb": per_layer / 1e9,
                "per_layer_tb": per_layer / 1e12,
                "all_layers_tb": per_layer * states / 1e12,
            }
        )
    return "\n".join(lines) + "\n", records


def main() -> None:
    rows = measured_rates()
    written = {
        "scaling-cpu": report(rows),
        "scaling-study": study(sum(row["tokens_per_word"] for row in rows) / len(rows)),
    }
    for name, (text, records) in written.items():
        (RESULTS / f"{name}.md").write_text(text)
        (RESULTS / f"{name}.json").write_text(json.dumps(records, indent=1) + "\n")
        print(text)


if __name__ == "__main__":
    main()
