"""Train the tiny GPT-2 and BERT models of config ``training`` (`contextuality.training`)
into a directory of checkpoints, for the bench studies not yet stages of the workflow.

The workflow trains the same models by rule (``snakemake --configfile
config/training.yaml``); this keeps the directory layout the bench scripts read: each
``DIR/<kind>/seed_<seed>/step_<N>/`` a checkpoint (`training.loop.saver`) and
``DIR/<kind>/seed_<seed>/losses.tsv`` the loss curve. The models train on the distinct
sentences of STS 2012–2016 (``--sts``) and are judged on the Lee background corpus, split
into sentences as the embedded default splits it. `train` takes another action at each
checkpoint in place of saving it (`bench/early_steps.py` measures them in memory).

    python bench/train_checkpoints.py --out DIR [--steps 0 2 5 ... 2000] [--seeds 0 1 2]
        [--models gpt2 bert] [--warmup 50] [--sts DIR] [--threads N] [--overwrite]
"""

from __future__ import annotations

import os

# OpenMP threads that spin while they wait make training several times slower when other
# jobs share the cores; this must be set before torch is imported.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import argparse
import importlib.util
import shutil
from pathlib import Path

import pandas as pd
import torch
from transformers.utils import logging

from contextuality.configuration.schema import ANY_MODEL, default
from contextuality.corpus.sentences import normalize_sentence, split_sentences, sts_archive_name
from contextuality.steps.corpus import read_distinct_sts_sentences
from contextuality.steps.training import CURVE_COLUMNS
from contextuality.training import RunSettings, TrainingSettings, loop

from arguments import input_directory, nonnegative_int, output_directory, positive_int

WARMUP = default("training", "runs", ANY_MODEL, "warmup")
CHECKPOINT_STEPS = default("training", "steps")
HELD_OUT_BLOCKS = default("training", "held_out_blocks")
STS_YEARS = default("corpus", "sts", "years")


def training_sentences(sts: Path) -> list[str]:
    """The distinct sentences of the STS 2012–2016 archives in `sts`, in archive order."""
    archives = {year: sts / sts_archive_name(year) for year in STS_YEARS}
    return read_distinct_sts_sentences(archives, verify_checksums=True)


def held_out_sentences() -> list[str]:
    """The Lee background corpus that gensim ships, split into sentences as the embedded
    default splits it: the sentences the sweep measures, never trained on."""
    gensim_dir = Path(importlib.util.find_spec("gensim").origin).parent
    text = (gensim_dir / "test" / "test_data" / "lee_background.cor").read_text()
    paragraphs = [line.strip() for line in text.splitlines() if line.strip()]
    return [normalize_sentence(s) for paragraph in paragraphs for s in split_sentences(paragraph)]


def train(
    kind: str,
    steps: list[int],
    seed: int,
    out: Path,
    corpora: dict,
    warmup: int = WARMUP,
    at_checkpoint: loop.CheckpointAction | None = None,
    held_out_blocks: int = HELD_OUT_BLOCKS,
) -> dict:
    """Train `kind` from `seed` (`training.loop.train`, config ``training``'s sizes but
    `held_out_blocks`), saving each of `steps` under ``out/<kind>/seed_<seed>/`` (or
    calling `at_checkpoint` with records that also name the kind and seed) and the loss
    curve beside; returns the last step's record."""
    directory = out / kind / f"seed_{seed}"
    action = at_checkpoint or loop.saver(directory)

    def labelled(record: dict, *arguments) -> None:
        action({**record, "kind": kind, "seed": seed}, *arguments)

    curve = loop.train(
        RunSettings(kind, seed, warmup),
        steps,
        (corpora["train"], corpora["held_out"]),
        TrainingSettings.from_config({"held_out_blocks": held_out_blocks}),
        labelled,
    )
    directory.mkdir(parents=True, exist_ok=True)
    columns = [column for column in CURVE_COLUMNS if column != "seconds"]
    table = pd.DataFrame(curve)[columns]
    table.to_csv(directory / "losses.tsv", sep="\t", index=False, float_format="%.6g")
    return {**curve[-1], "kind": kind, "seed": seed}


def parse_arguments(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line, each value checked before any training starts; checkpoints
    already in --out are refused unless --overwrite."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--out", type=output_directory, required=True, help="directory for the checkpoints"
    )
    parser.add_argument("--steps", type=nonnegative_int, nargs="+", default=CHECKPOINT_STEPS)
    parser.add_argument("--seeds", type=nonnegative_int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--models", nargs="+", choices=["gpt2", "bert"], default=["gpt2", "bert"])
    parser.add_argument(
        "--warmup",
        type=positive_int,
        default=WARMUP,
        help=f"steps over which the learning rate rises to its full value (default {WARMUP})",
    )
    parser.add_argument(
        "--sts",
        type=input_directory,
        default=Path(__file__).resolve().parents[2] / "shared/data/sts",
    )
    parser.add_argument("--threads", type=positive_int, default=len(os.sched_getaffinity(0)))
    parser.add_argument("--overwrite", action="store_true", help="replace existing checkpoints")
    args = parser.parse_args(argv)
    runs = [args.out / kind / f"seed_{seed}" for kind in args.models for seed in args.seeds]
    if any(any(run.glob("step_*")) for run in runs) and not args.overwrite:
        parser.exit(2, f"{args.out} already holds checkpoints; pass --overwrite to replace them\n")
    return args


def main() -> None:
    """Parse the command line, train each model kind from each seed, print the last losses."""
    args = parse_arguments()
    for run in [args.out / kind / f"seed_{seed}" for kind in args.models for seed in args.seeds]:
        shutil.rmtree(run, ignore_errors=True)
    torch.set_num_threads(args.threads)
    logging.set_verbosity_error()
    logging.disable_progress_bar()
    corpora = {"train": training_sentences(args.sts), "held_out": held_out_sentences()}
    last = [
        train(kind, sorted(set(args.steps)), seed, args.out, corpora, args.warmup)
        for kind in args.models
        for seed in args.seeds
    ]
    print(f"\n{'model':<6} {'seed':>4} {'step':>6} {'held-out':>9} {'unigram':>8}")
    for record in last:
        print(
            f"{record['kind']:<6} {record['seed']:>4} {record['step']:>6} "
            f"{record['held_out_loss']:>9.3f} {record['unigram_loss']:>8.3f}"
        )


if __name__ == "__main__":
    main()
