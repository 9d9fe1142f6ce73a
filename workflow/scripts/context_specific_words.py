"""Snakemake adapter: each layer's most and least context-specific words of one model."""

from contextuality.jobs.process import run_job


def context_specific_words() -> None:
    from contextuality import steps

    steps.context_specific_words(snakemake.input, snakemake.output.table, snakemake.params.top)


run_job(snakemake, context_specific_words)
