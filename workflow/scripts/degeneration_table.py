"""Snakemake adapter: every layer's degeneration by frequency bin in one table."""

from contextuality import steps
from contextuality.workflow import run_step

run_step(
    snakemake.log[0],
    lambda: steps.degeneration_table(list(snakemake.input), snakemake.output.table),
    threads=snakemake.threads,
)
