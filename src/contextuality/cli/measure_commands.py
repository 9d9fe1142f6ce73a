"""The ``measure-layer`` command (alias ``measure``): every measure of one layer's shard,
as the workflow's measure job runs it, and the sampling options it shares with
``stream``."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from contextuality import steps
from contextuality.cli.argument_types import output_file, positive_int
from contextuality.corpus.index import IndexFiles
from contextuality.jobs.process import limited_threads
from contextuality.measures.degeneration import DegenerationSettings
from contextuality.measures.settings import MeasureSettings
from contextuality.transforms.fitting import TRANSFORMS, TransformSettings
from contextuality.transforms.layers import TransformFit


def measure_outputs(prefix: str | Path) -> steps.MeasureOutputs:
    """A layer's measure tables and summary, named from `prefix`."""
    return steps.MeasureOutputs(
        f"{prefix}.parquet", f"{prefix}.sentences.parquet", f"{prefix}.json"
    )


def _measure(args: argparse.Namespace) -> None:
    # The settings are checked before anything is read or written.
    settings = MeasureSettings(baseline_sample_size=args.baseline_sample_size, seed=args.seed)
    TransformSettings(fit_fraction=args.fit_fraction, seed=args.seed)
    prefix = args.output
    transform_fit = fitted_on_split(args, prefix)
    degeneration = None
    if args.degeneration:
        degeneration = steps.DegenerationOutputs(
            DegenerationSettings(seed=args.seed),
            *(
                f"{prefix}.degeneration.{part}.parquet"
                for part in ("words", "bins", "cone", "positions")
            ),
        )
    with limited_threads(args.threads):
        steps.measure_layer(
            args.shard,
            args.sentences,
            IndexFiles.in_directory(args.index),
            settings,
            measure_outputs(prefix),
            transform=args.transform,
            transform_fit=transform_fit,
            degeneration_outputs=degeneration,
        )


def fitted_on_split(args: argparse.Namespace, prefix: str) -> TransformFit | None:
    """How `args.transform` is fitted: on a split of `args.sentences` holding out
    `args.fit_fraction` of them (seeded by `args.seed`), written to <prefix>.split.parquet;
    None for ``none``."""
    if args.transform == "none":
        return None
    TransformSettings(fit_fraction=args.fit_fraction, seed=args.seed)  # checked first
    split = f"{prefix}.split.parquet"
    steps.fit_split(args.sentences, args.fit_fraction, args.seed, split)
    return TransformFit.of(split, {"fit_fraction": args.fit_fraction, "seed": args.seed})


def add_transform_arguments(command: argparse.ArgumentParser, what: str) -> None:
    """The options of a correction: which one, and the share of sentences it is fitted on."""
    command.add_argument(
        "--transform", choices=TRANSFORMS, default="none", help=f"transform to {what} under"
    )
    command.add_argument(
        "--fit-fraction",
        type=float,
        default=TransformSettings.fit_fraction,
        help="share of sentences held out to fit the correction (<prefix>.split.parquet)",
    )


def add_sampling_arguments(command: argparse.ArgumentParser) -> None:
    """The options of the sampled estimates: the baselines' sample size and the seed."""
    command.add_argument(
        "--baseline-sample-size",
        type=int,
        default=MeasureSettings.baseline_sample_size,
        help="occurrences sampled for the MEV baseline, sentences for the paper's estimates",
    )
    command.add_argument(
        "--seed",
        type=int,
        default=MeasureSettings.seed,
        help="seed of every random sample (recorded)",
    )


def add_measure_layer_command(commands: Any) -> None:
    """The 'measure-layer' command (alias 'measure')."""
    command = commands.add_parser(
        "measure-layer", aliases=["measure"], help="every measure of one layer's shard"
    )
    command.add_argument("shard", nargs="+", help="a layer's shard, or the shards of its parts")
    command.add_argument("--sentences", required=True, help="sentences.parquet from 'sentences'")
    command.add_argument("--index", required=True, help="directory written by 'occurrence-index'")
    add_sampling_arguments(command)
    add_transform_arguments(command, "measure")
    command.add_argument(
        "--degeneration",
        action="store_true",
        help="also write the degeneration analysis and the position profile "
        "(<prefix>.degeneration.*.parquet) and the [position>0] measures",
    )
    command.add_argument(
        "--threads",
        type=positive_int,
        default=1,
        help="BLAS threads (default 1, as a workflow measure job: faster on small layers)",
    )
    command.add_argument(
        "-o",
        "--output",
        type=output_file,
        required=True,
        help="prefix of the .parquet/.json outputs",
    )
    command.set_defaults(run=_measure)
