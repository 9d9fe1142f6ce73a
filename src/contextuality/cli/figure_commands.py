"""The commands that draw: ``figure`` (one of the paper's figures, or the transforms side
by side, from a measures table or layer summaries) and ``degeneration-figures``."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from contextuality import steps
from contextuality.cli.argument_types import output_directory, output_file
from contextuality.errors import ConfigError
from contextuality.figures.specs import DEGENERATION_FIGURES, FIGURES

FIGURE_FORMATS = (".png", ".pdf", ".svg")


def _figure(args: argparse.Namespace) -> None:
    # "-o f.png TABLE", the order --help prints the options in, leaves the table among the
    # outputs (both take several files): a table or summary there is taken back as one.
    tables = [path for path in args.output if Path(path).suffix.lower() in (".tsv", ".json")]
    args.output = [path for path in args.output if path not in tables]
    args.table = [*args.table, *tables]
    if not args.table:
        raise ConfigError("figure: no measures table (.tsv) or layer summaries (.json) given")
    for output in args.output:
        if Path(output).suffix.lower() not in FIGURE_FORMATS:
            raise ConfigError(
                f"figure --output {output}: a figure is written as {', '.join(FIGURE_FORMATS)}"
            )
    if not args.output:
        raise ConfigError(f"figure: no file to write ({', '.join(FIGURE_FORMATS)}) after -o")
    if len(args.table) == 1 and not args.table[0].endswith(".json"):
        args.table = args.table[0]  # a measures table, not summaries
    if args.name == TRANSFORMS_FIGURE:
        steps.transforms_figure(args.table, args.output, relative_layers=args.relative)
    else:
        steps.figure(args.table, args.name, args.output, args.transform, args.relative)


def _degeneration_figures(args: argparse.Namespace) -> None:
    """The three degeneration figures of the layers whose 'measure --degeneration' outputs
    begin with the prefixes given, as .png and .pdf in the output directory."""
    tables = {
        part: [f"{prefix}.degeneration.{part}.parquet" for prefix in args.prefix]
        for part in ("words", "bins", "cone")
    }
    outputs = [
        Path(args.output) / f"{kind}.{extension}"
        for kind in DEGENERATION_FIGURES
        for extension in ("png", "pdf")
    ]
    steps.degeneration_figures(tables["words"], tables["bins"], tables["cone"], outputs, args.title)


TRANSFORMS_FIGURE = "transforms"


def add_figure_commands(commands: Any) -> None:
    """The commands that draw: 'figure' and 'degeneration-figures'."""
    command = commands.add_parser("figure", help="draw a figure from the summary table")
    command.add_argument(
        "table",
        nargs="*",
        help="measures .tsv from 'measures-table', or layer summaries (.json) from 'measure'",
    )
    command.add_argument(
        "--name",
        choices=[*sorted(FIGURES), TRANSFORMS_FIGURE],
        required=True,
        help="which figure (transforms: every measured transform side by side)",
    )
    command.add_argument(
        "--transform", default="none", help="the transform whose measures a figure shows"
    )
    command.add_argument("--relative", action="store_true", help="x axis = layer / layers")
    command.add_argument(
        "-o",
        "--output",
        type=output_file,
        nargs="+",
        required=True,
        help="files to write (.png, .pdf, .svg)",
    )
    command.set_defaults(run=_figure)

    command = commands.add_parser(
        "degeneration-figures", help="norm, neighbour and cone figures of a model's layers"
    )
    command.add_argument(
        "prefix", nargs="+", help="-o prefixes of 'measure --degeneration', one a layer"
    )
    command.add_argument("--title", default="", help="title of every figure (model, transform)")
    command.add_argument(
        "-o", "--output", type=output_directory, required=True, help="directory to write into"
    )
    command.set_defaults(run=_degeneration_figures)
