"""Snakemake adapter: the record of a source's outside files, named by their checksums'
digest."""

from contextuality.jobs.process import run_job


def input_fingerprint() -> None:
    from contextuality import steps

    steps.settings_record(
        snakemake.wildcards.source, snakemake.params.checksums, snakemake.output[0]
    )


run_job(snakemake, input_fingerprint)
