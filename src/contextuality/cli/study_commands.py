"""The commands of the studies that run a model: STS by layer and the ablation's effects,
each with its table, the same steps as the workflow's rules.

'sts-by-layer' and 'downstream-table' are config ``downstream``'s; 'ablation-effects' and
'ablation-effects-table' config ``ablation_effects``'s."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from contextuality import steps
from contextuality.cli.argument_types import nonnegative_int, output_directory, positive_int
from contextuality.cli.model_options import add_model_setting_arguments, model_options
from contextuality.configuration.schema import default
from contextuality.corpus.sentences import sts_archive_name
from contextuality.errors import InputDataError

# The files each command writes into its output directory, by the step's record of them.
FILE_NAMES = {
    "PairFiles": ("sts_pairs.parquet", "sts_sentences.parquet"),
    "ScoreFiles": ("scores.parquet", "draws.parquet"),
    "EffectFiles": ("perplexity.parquet", "attention.parquet"),
}


def _within(directory: str | Path, record: str) -> Any:
    """The step's record `record` of its files (a key of `FILE_NAMES`), each inside
    `directory`; the step's module loaded only by the command that runs it."""
    return getattr(steps, record)(*(str(Path(directory) / name) for name in FILE_NAMES[record]))


def add_sts_arguments(command: argparse.ArgumentParser) -> None:
    """``--sts`` (the directory of the five archives) and ``--no-verify``."""
    command.add_argument(
        "--sts", required=True, help="directory holding STS<year>-en-test.zip, 2012 to 2016"
    )
    command.add_argument("--no-verify", action="store_true", help="skip STS checksum checks")


def sts_archives(args: argparse.Namespace) -> dict[int, Path]:
    """Each year's archive in ``--sts``, all five whatever a corpus reads; InputDataError
    naming the command and the archives missing."""
    years = default("corpus", "sts", "years")
    archives = {year: Path(args.sts) / sts_archive_name(year) for year in years}
    missing = [str(path) for path in archives.values() if not path.is_file()]
    if missing:
        raise InputDataError(f"{args.command} --sts: no STS archive {', '.join(missing)}")
    return archives


def _sts_by_layer(args: argparse.Namespace) -> None:
    archives = sts_archives(args)
    pairs = _within(args.output, "PairFiles")
    steps.sts_pairs(archives, args.pairs or None, args.seed, not args.no_verify, pairs)
    steps.sts_by_layer(
        model_options(args),
        pairs,
        _within(args.output, "ScoreFiles"),
        args.draws,
        args.seed,
        threads=args.threads,
    )


def _downstream_table(args: argparse.Namespace) -> None:
    steps.downstream_tables(
        [_within(directory, "ScoreFiles") for directory in args.scored],
        args.measures,
        steps.DownstreamTables(f"{args.output}.tsv", f"{args.output}_agreement.tsv"),
        [f"{args.output}.png", f"{args.output}.pdf"],
        args.seed,
    )


def _ablation_effects(args: argparse.Namespace) -> None:
    steps.ablation_effects(
        model_options(args),
        args.sentences,
        _within(args.output, "EffectFiles"),
        args.measured_sentences,
        args.calibration_sentences,
        args.draws,
        args.seed,
        threads=args.threads,
    )


def _ablation_effects_table(args: argparse.Namespace) -> None:
    steps.ablation_effects_tables(
        [_within(directory, "EffectFiles") for directory in args.measured],
        steps.EffectFiles(f"{args.output}_perplexity.tsv", f"{args.output}_attention.tsv"),
        [f"{args.output}.png", f"{args.output}.pdf"],
    )


def _seed(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--seed", type=int, default=default("measures", "seed"), help="seed of every draw"
    )


def _draws(command: argparse.ArgumentParser, section: str) -> None:
    command.add_argument(
        "--draws",
        type=positive_int,
        default=default(section, "draws"),
        help="bootstrap draws behind each 95 %% interval",
    )


def add_study_commands(commands: Any) -> None:
    """'sts-by-layer', 'downstream-table', 'ablation-effects', 'ablation-effects-table'."""
    _add_downstream_commands(commands)
    _add_ablation_effects_commands(commands)


def _add_downstream_commands(commands: Any) -> None:
    command = commands.add_parser(
        "sts-by-layer",
        help="a model's STS 2012-2016 score at every layer, with its bootstrap interval "
        "(config downstream)",
    )
    add_model_setting_arguments(command)
    add_sts_arguments(command)
    command.add_argument(
        "--pairs",
        type=nonnegative_int,
        default=default("downstream", "pairs"),
        help="scored pairs drawn with --seed, the same for every model run so (0: all)",
    )
    _draws(command, "downstream")
    _seed(command)
    command.add_argument(
        "-o",
        "--output",
        type=output_directory,
        required=True,
        help="directory to write sts_pairs.parquet, sts_sentences.parquet, scores.parquet "
        "and draws.parquet into",
    )
    command.set_defaults(run=_sts_by_layer)

    command = commands.add_parser(
        "downstream-table",
        help="models' STS scores by layer in one table, each geometry measure's agreement "
        "with them, and their figure",
    )
    command.add_argument("scored", nargs="+", help="directories written by 'sts-by-layer'")
    command.add_argument(
        "--measures", required=True, help="measures.tsv from 'measures-table' (the geometry)"
    )
    _seed(command)
    command.add_argument(
        "-o",
        "--output",
        required=True,
        help="prefix of <prefix>.tsv, <prefix>_agreement.tsv, <prefix>.png and .pdf",
    )
    command.set_defaults(run=_downstream_table)


def _add_ablation_effects_commands(commands: Any) -> None:
    command = commands.add_parser(
        "ablation-effects",
        help="a decoder's perplexity and attention with its massive activations set to zero "
        "or their mean (config ablation_effects)",
    )
    add_model_setting_arguments(command)
    command.add_argument("--sentences", required=True, help="sentences.parquet from 'sentences'")
    command.add_argument(
        "--measured-sentences",
        type=positive_int,
        default=default("ablation_effects", "sentences"),
        help="sentences measured, those after the calibration sentences",
    )
    command.add_argument(
        "--calibration-sentences",
        type=positive_int,
        default=default("ablation_effects", "calibration_sentences"),
        help="the first sentences: where the massive activations are found and their means "
        "calibrated",
    )
    _draws(command, "ablation_effects")
    _seed(command)
    command.add_argument(
        "-o",
        "--output",
        type=output_directory,
        required=True,
        help="directory to write perplexity.parquet and attention.parquet into",
    )
    command.set_defaults(run=_ablation_effects)

    command = commands.add_parser(
        "ablation-effects-table",
        help="decoders' perplexity and attention under the ablation in two tables and a figure",
    )
    command.add_argument("measured", nargs="+", help="directories written by 'ablation-effects'")
    command.add_argument(
        "-o",
        "--output",
        required=True,
        help="prefix of <prefix>_perplexity.tsv, <prefix>_attention.tsv, <prefix>.png and .pdf",
    )
    command.set_defaults(run=_ablation_effects_table)
