"""Snakemake adapter: every analysed layer's degeneration by frequency bin, and its
position profile with each model's special tokens, each in one table."""

from contextuality import steps
from contextuality.workflow import run_step


def gather():
    steps.degeneration_table(list(snakemake.input.bins), snakemake.output.table)
    steps.positions_table(
        list(snakemake.input.positions),
        snakemake.output.positions,
        list(snakemake.input.special),
    )


run_step(snakemake.log[0], gather, threads=snakemake.threads)
