"""The ``verify`` and ``publish`` commands: a finished study checked, then its tables and
figures published with the commit that made them.

``verify`` checks every file against its recorded digest and its siblings
(`contextuality.verification`); ``--repair`` deletes the damaged files for Snakemake to
remake. ``publish`` copies them into a folder that docs pages read."""

from __future__ import annotations

import argparse
from typing import Any

from contextuality.errors import InputDataError


def _verify(args: argparse.Namespace) -> None:
    """Print each damaged file's line and the summary; exit 1 (one error line) where any
    file is damaged, after deleting them with ``--repair``."""
    from contextuality.verification.study import repair, verify_study

    verification = verify_study(args.directory)
    for damage in verification.damaged:
        print(damage.line())
    if not verification.damaged:
        print(verification.summary())
        return
    if not args.repair:
        raise InputDataError(
            f"{verification.summary()}: 'contextuality verify --repair' deletes them, then "
            "snakemake remakes them"
        )
    deleted = repair(verification)
    for path in deleted:
        print(f"deleted {path.as_posix()}")
    raise InputDataError(
        f"{verification.summary()}: deleted {len(deleted)}; run snakemake to remake them, "
        "then verify again"
    )


def _publish(args: argparse.Namespace) -> None:
    from contextuality.verification.publish import FIGURES_LEFT_BEHIND, RECORD, publish_study

    record = publish_study(args.directory, args.destination, args.figure)
    files, commits = len(record["files"]), ", ".join(record["made_by"])
    print(f"published {files} files made by commit {commits} to {args.destination}")
    left_behind = len(record.get(FIGURES_LEFT_BEHIND, {}))
    if left_behind:
        print(f"{left_behind} figures left behind, their SHA-256 recorded ({RECORD})")


def add_verify_command(commands: Any) -> None:
    """The 'verify' command."""
    command = commands.add_parser(
        "verify",
        help="check every table, figure, shard and intermediate of a finished study against "
        "its recorded digest and the files it was made from (exit 1 if any is damaged)",
    )
    command.add_argument(
        "directory",
        nargs="?",
        default=".",
        help="the study's working directory, holding results/ (default: the current one)",
    )
    command.add_argument(
        "--repair",
        action="store_true",
        help="delete the damaged files (and only those), so that snakemake remakes them",
    )
    command.set_defaults(run=_verify)
    command = commands.add_parser(
        "publish",
        help="copy a finished study's tables and figures with their provenance into a folder "
        "(docs/results/<run>/), refused where a file is damaged or was made by code no "
        "commit holds",
    )
    command.add_argument("directory", help="the study's working directory, holding results/")
    command.add_argument(
        "destination", help="the folder to publish into (replaced whole once complete)"
    )
    chosen = command.add_mutually_exclusive_group()
    chosen.add_argument(
        "--figure",
        action="append",
        metavar="PATTERN",
        help="copy only the figures whose path under results/figures/ matches PATTERN "
        "(a glob, repeatable: 'sweeps/*'); the others' SHA-256 is recorded (default: every "
        "figure)",
    )
    chosen.add_argument(
        "--no-figures",
        dest="figure",
        action="store_const",
        const=[],
        help="copy the tables alone, every figure's SHA-256 recorded",
    )
    command.set_defaults(run=_publish)
