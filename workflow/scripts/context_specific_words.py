"""Snakemake adapter: each layer's most and least context-specific words of one model."""

from contextuality import steps
from contextuality.workflow import run_step

run_step(
    snakemake.log[0],
    lambda: steps.context_specific_words(
        snakemake.input, snakemake.output.table, snakemake.params.top
    ),
    threads=snakemake.threads,
)
