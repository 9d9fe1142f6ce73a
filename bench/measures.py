"""The measures' exact O(N·d) identities against brute-force all-pairs computation.

For growing numbers N of occurrences (d-dimensional, in sentences of 12 words, words
repeating across sentences), times SelfSim of every word and the anisotropy baseline with
`contextuality.measures.equations` and with explicit pairwise cosine matrices, checks they agree,
and writes bench/results/measures-cpu.{json,md}.

    python bench/measures.py --sizes 1000 2000 4000 8000 16000 --dim 384
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from contextuality import __version__
from contextuality.measures import equations
from contextuality.rows import unit_rows

from arguments import output_directory, positive_int

RESULTS = Path(__file__).resolve().parent / "results"
WORDS_PER_SENTENCE = 12


def synthetic_layer(n_rows: int, dim: int, rng: np.random.Generator):
    """Anisotropic unit vectors, a Zipf-like word per row, sentences of 12 rows."""
    n_words = max(2, n_rows // 20)
    words = np.minimum(rng.zipf(1.3, n_rows) - 1, n_words - 1)
    sentences = np.arange(n_rows) // WORDS_PER_SENTENCE
    vectors = rng.standard_normal((n_rows, dim)) + 2.0 * rng.standard_normal(dim)
    return unit_rows(vectors), words, sentences


def fast(unit, words, sentences):
    order = np.lexsort((sentences, words))
    keys_word, keys_sentence = words[order], sentences[order]
    word_starts = np.flatnonzero(np.r_[True, keys_word[1:] != keys_word[:-1]])
    context_change = (keys_word[1:] != keys_word[:-1]) | (keys_sentence[1:] != keys_sentence[:-1])
    context_starts = np.flatnonzero(np.r_[True, context_change])
    selfsim = equations.self_similarity(unit[order], word_starts, context_starts)
    sentence_starts = np.flatnonzero(np.r_[True, sentences[1:] != sentences[:-1]])
    return selfsim, equations.anisotropy_baseline(unit, sentence_starts)


def brute_force(unit, words, sentences):
    unit = unit.astype(np.float64)
    selfsim = []
    for word in np.unique(words):
        rows = np.flatnonzero(words == word)
        cosines = unit[rows] @ unit[rows].T
        different = sentences[rows][:, None] != sentences[rows][None, :]
        selfsim.append(cosines[different].mean() if different.any() else np.nan)
    cosines = unit @ unit.T
    different = sentences[:, None] != sentences[None, :]
    return np.array(selfsim), cosines[different].mean()


def _timed(function, *arguments):
    started = time.perf_counter()
    result = function(*arguments)
    return result, time.perf_counter() - started


def parse_arguments(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line, each value checked before any work starts."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--sizes", type=positive_int, nargs="+", default=[1000, 2000, 4000, 8000, 16000]
    )
    parser.add_argument("--dim", type=positive_int, default=384)
    parser.add_argument("--out", type=output_directory, default=RESULTS)
    return parser.parse_args(argv)


def main() -> None:
    args = parse_arguments()
    rows = []
    for size in args.sizes:
        unit, words, sentences = synthetic_layer(size, args.dim, np.random.default_rng(size))
        (selfsim, baseline), fast_seconds = _timed(fast, unit, words, sentences)
        (selfsim_ref, baseline_ref), brute_seconds = _timed(brute_force, unit, words, sentences)
        both = np.isfinite(selfsim_ref)
        rows.append(
            {
                "occurrences": size,
                "dim": args.dim,
                "fast_seconds": fast_seconds,
                "brute_force_seconds": brute_seconds,
                "speedup": brute_seconds / fast_seconds,
                "max_abs_difference": float(
                    max(
                        np.max(np.abs(selfsim[both] - selfsim_ref[both])),
                        abs(baseline - baseline_ref),
                    )
                ),
            }
        )
        print(json.dumps(rows[-1]), flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    result = {"package_version": __version__, "rows": rows}
    (args.out / "measures-cpu.json").write_text(json.dumps(result, indent=2) + "\n")
    lines = [
        "# Measures: exact identities against all pairs",
        "",
        f"contextuality {__version__}; SelfSim of every word and the anisotropy baseline.",
        "",
        "| occurrences | dim | identities (s) | all pairs (s) | speed-up | max abs difference |",
        "|---|---|---|---|---|---|",
    ]
    for row in rows:
        lines.append(
            f"| {row['occurrences']:,} | {row['dim']} | {row['fast_seconds']:.4f} "
            f"| {row['brute_force_seconds']:.3f} | {row['speedup']:,.0f}× "
            f"| {row['max_abs_difference']:.1e} |"
        )
    (args.out / "measures-cpu.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
