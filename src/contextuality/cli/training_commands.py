"""The commands of config ``training``, the same steps as workflow/rules/training.smk:
'train' (a run's checkpoints and loss curve) and 'training-losses-table'."""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path
from typing import Any

from contextuality import steps
from contextuality.backends.settings import spelled_numbers
from contextuality.cli.argument_types import nonnegative_int, output_directory, positive_int
from contextuality.cli.model_options import usable_cpus
from contextuality.cli.study_commands import add_sts_arguments, sts_archives
from contextuality.configuration.schema import ANY_MODEL, default
from contextuality.errors import ConfigError
from contextuality.training import ARCHITECTURES, ProbeSettings, RunSettings, TrainingSettings

# Each shared setting of config ``training`` (a TrainingSettings field) → its option's type.
SIZE_TYPES = {"learning_rate": float, "evaluation_steps": positive_int}


def steps_list(text: str) -> tuple[int, ...]:
    """``--probe-steps``: steps and inclusive ranges, as the config spells them."""
    try:
        return spelled_numbers("--probe-steps", text, "steps")
    except ConfigError as error:
        raise argparse.ArgumentTypeError(str(error).removeprefix("--probe-steps: ")) from error


def _train(args: argparse.Namespace) -> None:
    archives = sts_archives(args)
    output = Path(args.output)
    steps.distinct_sts_sentences(archives, output / "sentences.parquet", not args.no_verify)
    shared = {
        field.name: getattr(args, field.name) for field in dataclasses.fields(TrainingSettings)
    }
    steps.train_run(
        output.name,
        RunSettings(args.architecture, args.seed, args.warmup),
        TrainingSettings(**shared),
        args.steps,
        ProbeSettings(args.probe_steps, args.probe_sentences, args.probe_seed),
        (output / "sentences.parquet", args.sentences),
        steps.RunFiles(
            output / "checkpoints", output / "losses.parquet", output / "probes.parquet"
        ),
        threads=args.threads,
    )


def _training_losses_table(args: argparse.Namespace) -> None:
    steps.training_losses_table(
        [Path(directory) / "losses.parquet" for directory in args.trained],
        f"{args.output}.tsv",
        [f"{args.output}.png", f"{args.output}.pdf"],
    )


def _add_probe_arguments(command: argparse.ArgumentParser) -> None:
    """``--probe-steps``, ``--probe-sentences`` and ``--probe-seed`` (config
    training.probes)."""
    command.add_argument(
        "--probe-steps",
        type=steps_list,
        default=default("training", "probes", "steps"),
        help="steps probed in memory, as '0-100, 120-300/30' (default none)",
    )
    command.add_argument(
        "--probe-sentences",
        type=positive_int,
        default=default("training", "probes", "sentences"),
        help="the held-out sentences probed, drawn from --probe-seed",
    )
    command.add_argument(
        "--probe-seed",
        type=int,
        default=default("measures", "seed"),
        help="seed of the probed sentences' draw",
    )


def _add_size_arguments(command: argparse.ArgumentParser) -> None:
    """An option per setting every run shares (config training: ``--layers``, ...)."""
    for field in dataclasses.fields(TrainingSettings):
        value = default("training", field.name)
        command.add_argument(
            f"--{field.name.replace('_', '-')}",
            type=SIZE_TYPES.get(field.name, positive_int),
            nargs="+" if isinstance(value, list) else None,
            default=value,
            help=f"config training.{field.name} (default {value})",
        )


def add_training_commands(commands: Any) -> None:
    """'train' and 'training-losses-table'."""
    command = commands.add_parser(
        "train",
        help="train a tiny GPT-2 or BERT from scratch on STS 2012-2016, saving checkpoints "
        "and its held-out loss on a corpus (config training)",
    )
    command.add_argument(
        "architecture",
        choices=ARCHITECTURES,
        help="gpt2: a causal LM, byte-level BPE; bert: a masked LM, cased WordPiece",
    )
    add_sts_arguments(command)
    command.add_argument(
        "--sentences", required=True, help="sentences.parquet from 'sentences': the held-out text"
    )
    run = ("training", "runs", ANY_MODEL)
    command.add_argument(
        "--seed",
        type=nonnegative_int,
        default=default(*run, "seed"),
        help="seed of the initialization, the data order and the masking",
    )
    command.add_argument(
        "--warmup",
        type=positive_int,
        default=default(*run, "warmup"),
        help="steps over which the learning rate rises to its full value",
    )
    command.add_argument(
        "--steps",
        type=nonnegative_int,
        nargs="+",
        default=default("training", "steps"),
        help="steps whose checkpoints are saved (0: the random initialization)",
    )
    _add_probe_arguments(command)
    _add_size_arguments(command)
    command.add_argument(
        "--threads",
        type=positive_int,
        default=usable_cpus(),
        help=f"CPU threads for training (default: the CPUs this process may use, {usable_cpus()})",
    )
    command.add_argument(
        "-o",
        "--output",
        type=output_directory,
        required=True,
        help="the run's directory (its name the run's): sentences.parquet, checkpoints/, "
        "losses.parquet",
    )
    command.set_defaults(run=_train)

    command = commands.add_parser(
        "training-losses-table",
        help="training runs' loss curves in one table and a figure",
    )
    command.add_argument("trained", nargs="+", help="directories written by 'train'")
    command.add_argument(
        "-o", "--output", required=True, help="prefix of <prefix>.tsv, <prefix>.png and .pdf"
    )
    command.set_defaults(run=_training_losses_table)
