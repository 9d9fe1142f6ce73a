"""Snakemake adapter: every analysed layer's degeneration by frequency bin, and its
position profile with each model's special tokens, each in one table."""

from contextuality.jobs.process import run_job


def gather():
    from contextuality import steps

    steps.degeneration_table(list(snakemake.input.bins), snakemake.output.table)
    steps.positions_table(
        list(snakemake.input.positions),
        snakemake.output.positions,
        list(snakemake.input.special),
    )


run_job(snakemake, gather)
