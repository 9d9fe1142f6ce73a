"""How much the batches pad, by planner, segment size and token budget: no model runs.

The subword lengths of a corpus's sentences (STS 2012-2016 from the mirror beside the
checkout, else the Lee corpus) under a byte-level BPE trained on it (GPT-2's kind of
tokenizer), cut into segments of consecutive sentences as an extraction cuts them, each
segment's sentences planned into batches by the greedy planner the project used before
(`forward_bounds.greedy_batches`) and by the least-cost one it uses now
(`forward.plan_batches`). For each: batches, and padded tokens / real tokens. Written to
bench/results/batch-padding-<corpus>.md.

    python bench/batch_padding.py
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
from forward_bounds import greedy_batches

from contextuality.extraction.forward import plan_batches
from contextuality.extraction.partitions import segments

import random_models
from extraction import RESULTS, STS_MIRROR, load_corpus

SEGMENT_WORDS = (16_384, 65_536, 262_144)
BUDGETS = (2048, 8192, 32_768)
PLANNERS = {"greedy (before)": greedy_batches, "least cost (now)": plan_batches}


def main() -> None:
    corpus_name = "sts" if STS_MIRROR.is_dir() else "lee"
    sentences = load_corpus(500_000, corpus_name)
    tokenizer = random_models.trained_byte_level_tokenizer(sentences[:20_000])
    lengths = np.array([len(ids) for ids in tokenizer(sentences)["input_ids"]])
    words = np.array([len(sentence.split()) for sentence in sentences])
    lines = [
        f"# Padding of planned batches: {corpus_name}",
        "",
        f"Written by `bench/batch_padding.py`: {len(sentences):,} sentences, {lengths.sum():,} "
        f"byte-level BPE tokens (mean {lengths.mean():.1f}, longest {lengths.max()}). "
        "Batches (padded tokens / real tokens) by planner; planning time of the least-cost "
        "planner per segment in brackets.",
        "",
        "| segment words | budget | " + " | ".join(PLANNERS) + " |",
        "|---|---|" + "---|" * len(PLANNERS),
    ]
    for segment_words in SEGMENT_WORDS:
        bounds = segments(words, segment_words)
        for budget in BUDGETS:
            cells = []
            for planner in PLANNERS.values():
                padded, batches, seconds = 0, 0, 0.0
                for start, end in bounds:
                    started = time.perf_counter()
                    plan = planner(lengths[start:end], budget)
                    seconds += time.perf_counter() - started
                    batches += len(plan)
                    padded += sum(int(lengths[start:end][b].max()) * len(b) for b in plan)
                cell = f"{batches} ({padded / lengths.sum():.2f}×)"
                if planner is plan_batches:
                    cell += f" [{1000 * seconds / len(bounds):.1f} ms]"
                cells.append(cell)
            lines.append(f"| {segment_words:,} | {budget:,} | " + " | ".join(cells) + " |")
    path = Path(RESULTS) / f"batch-padding-{corpus_name}.md"
    path.write_text("\n".join(lines) + "\n")
    print(path.read_text())


if __name__ == "__main__":
    main()
