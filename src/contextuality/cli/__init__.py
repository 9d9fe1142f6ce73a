"""The ``contextuality`` command: each workflow step on its own, for use outside
Snakemake (the commands: `contextuality.cli.commands`).

The entry point imports the commands only inside `process.run_command`, so that even a
failure to import numpy, torch or h5py (a memory limit too tight to map their libraries)
is one line, not a traceback.
"""

from __future__ import annotations

from contextuality.cli.option_terms import in_option_terms
from contextuality.jobs.process import run_command


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the exit status: 1 with one line for a refused input, memory
    or disk run out (`process.failure_message`)."""

    def command() -> None:
        from contextuality.cli.commands import run

        run(argv)

    return run_command(command, argv, in_option_terms)
