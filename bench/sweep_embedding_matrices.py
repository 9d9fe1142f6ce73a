"""Does the token embedding matrix degenerate with training (Gao et al. 2019)? The tiny
models of the training sweep, their input matrix measured against the frequencies of the
tokens they train on.

Trains the tiny GPT-2 and BERT of `bench/train_checkpoints.py` (its data, schedule and
warm-up) from each seed, and at each checkpoint measures the input embedding matrix
(tied to the output in both) as `contextuality.measures.embedding_matrix` measures a
model's: anisotropy, cone, top singular shares, isotropy scores, and Spearman's ρ of a
row's norm against its token's count in the training blocks, with the mean norm and cone
cosine by frequency-rank bin. Checkpoints are measured in memory, not saved. Writes
``bench/results/sweep-embedding-matrices{.tsv,-norms.tsv,.md}``.

    python bench/sweep_embedding_matrices.py [--seeds 0] [--steps 0 20 50 200 500 2000]
        [--sts DIR] [--threads 1]
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import argparse  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import torch  # noqa: E402
import train_checkpoints  # noqa: E402

from contextuality.files.provenance import atomic_path  # noqa: E402
from contextuality.measures.embedding_matrix import (  # noqa: E402
    count_free_measures,
    frequency_measures,
    norms_by_frequency,
)

from arguments import input_directory, nonnegative_int, positive_int  # noqa: E402
from workdir import short_commit, write_report  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "bench" / "results"
SHOWN = ["anisotropy", "cone_cosine", "top_singular_share", "isoscore", "effective_rank"]


def measure_matrix(record: dict, model: torch.nn.Module, data: torch.Tensor, rows: dict) -> None:
    """Append the input matrix's measures at this checkpoint to `rows` (``measures`` and
    ``norms``), its tokens counted in the training blocks `data`."""
    weights = model.get_input_embeddings().weight.detach().double().numpy()
    counts = np.bincount(data.flatten().numpy(), minlength=len(weights)).astype(float)
    key = {"kind": record["kind"], "seed": record["seed"], "step": record["step"]}
    tied = model.get_output_embeddings().weight is model.get_input_embeddings().weight
    rows["measures"].append(
        key
        | {"tied": tied, "held_out_loss": record["held_out_loss"]}
        | {"unigram_loss": record["unigram_loss"]}
        | count_free_measures(weights)
        | frequency_measures(weights, counts)
    )
    rows["norms"].append(norms_by_frequency(weights, counts).assign(**key))


def write_table(table: pd.DataFrame, path: Path) -> None:
    with atomic_path(path) as temporary:
        table.to_csv(temporary, sep="\t", index=False, float_format="%.6g")


def parse_arguments(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line, each value checked before any work starts."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=nonnegative_int, nargs="+", default=[0])
    parser.add_argument(
        "--steps", type=nonnegative_int, nargs="+", default=[0, 20, 50, 200, 500, 2000]
    )
    parser.add_argument(
        "--sts", type=input_directory, default=REPO.parent / "shared" / "data" / "sts"
    )
    parser.add_argument("--threads", type=positive_int, default=1)
    return parser.parse_args(argv)


def main() -> None:
    args = parse_arguments()
    torch.set_num_threads(args.threads)
    corpora = {
        "train": train_checkpoints.training_sentences(args.sts),
        "held_out": train_checkpoints.held_out_sentences(),
    }
    rows: dict[str, list] = {"measures": [], "norms": []}
    started = time.perf_counter()
    for kind in ("gpt2", "bert"):
        for seed in args.seeds:
            train_checkpoints.train(
                kind,
                args.steps,
                seed,
                REPO / "bench" / "work" / "sweep-embedding-matrices",
                corpora,
                at_checkpoint=lambda record, model, tokenizer, data: measure_matrix(
                    record, model, data, rows
                ),
            )
    minutes = (time.perf_counter() - started) / 60
    measures = pd.DataFrame(rows["measures"])
    norms = pd.concat(rows["norms"], ignore_index=True)
    write_table(measures, RESULTS / "sweep-embedding-matrices.tsv")
    write_table(norms, RESULTS / "sweep-embedding-matrices-norms.tsv")
    shown = measures[["kind", "seed", "step", *SHOWN, "norm_frequency_spearman"]]
    unseen = norms[norms["bin"].isin(["1–100", "unseen"])].pivot_table(
        index=["kind", "seed", "step"], columns="bin", values="cone_cosine"
    )
    write_report(
        RESULTS / "sweep-embedding-matrices.md",
        [
            "# The training sweep's token embedding matrices",
            f"Written by `bench/sweep_embedding_matrices.py` ({time.strftime('%Y-%m-%d')}, "
            f"commit {short_commit()}; {minutes:.0f} min on {args.threads} CPU thread). The "
            "tiny GPT-2 and BERT of `bench/train_checkpoints.py` (warm-up "
            f"{train_checkpoints.WARMUP} steps), seeds {', '.join(map(str, args.seeds))}, "
            "their input embedding matrix (tied to the output) at steps "
            f"{', '.join(map(str, args.steps))}, each row's token counted in the training "
            "blocks (`contextuality.measures.embedding_matrix`). Tables beside this file: "
            "`sweep-embedding-matrices.tsv`, `sweep-embedding-matrices-norms.tsv`.",
            "## The matrix by step\n\n" + shown.to_markdown(index=False, floatfmt=".3f"),
            "## Cone cosine of the 100 most frequent training tokens and of the unseen ones\n\n"
            + unseen.reset_index().to_markdown(index=False, floatfmt=".3f"),
        ],
    )


if __name__ == "__main__":
    main()
