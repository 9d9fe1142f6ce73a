"""Snakemake adapter: one of the paper's models beside its published results."""

from contextuality import steps
from contextuality.workflow import run_step

run_step(
    snakemake.log[0],
    lambda: steps.compare_reference(
        snakemake.input.published,
        snakemake.input.summaries,
        snakemake.input.words,
        snakemake.output.table,
        [snakemake.output.png, snakemake.output.pdf],
    ),
    threads=snakemake.threads,
)
