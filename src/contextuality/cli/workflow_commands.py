"""``contextuality workflow``: where the installed Snakemake workflow is, and a study's
directory started from its default config (`contextuality.configuration.bundle`)."""

from __future__ import annotations

import argparse
from typing import Any

from contextuality.cli.argument_types import study_directory
from contextuality.configuration import bundle


def _workflow(args: argparse.Namespace) -> None:
    """Print the Snakefile's path; with ``--init DIR``, first copy the configs there."""
    if args.init is not None:
        for path in bundle.start_study(args.init):
            print(f"wrote {path}")
    print(bundle.snakefile())


def add_workflow_command(commands: Any) -> None:
    """The 'workflow' command."""
    command = commands.add_parser(
        "workflow",
        help='print the installed workflow\'s Snakefile: snakemake -s "$(contextuality workflow)"',
    )
    command.add_argument(
        "--init",
        type=study_directory,
        metavar="DIR",
        help="first copy the shipped configs into DIR/config (the embedded default and the "
        "others), refusing any already there",
    )
    command.set_defaults(run=_workflow)
