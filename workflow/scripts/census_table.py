"""Snakemake adapter: every layer summary's entries of one census
(``params.census``, a measure record's) into results/tables/<census>.tsv."""

from contextuality.jobs.process import run_job


def census_table() -> None:
    from contextuality import steps

    steps.census_table(list(snakemake.input), snakemake.output.table, snakemake.params.census)


run_job(snakemake, census_table)
