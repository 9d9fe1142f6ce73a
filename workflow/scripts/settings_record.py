"""Snakemake adapter: the record of a corpus stage's settings, named by their digest."""

from contextuality.jobs.process import run_job


def settings_record() -> None:
    from contextuality import steps

    steps.settings_record(snakemake.wildcards.stage, snakemake.params.settings, snakemake.output[0])


run_job(snakemake, settings_record)
