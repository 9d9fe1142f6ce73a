"""Snakemake adapter: fetch one STS archive (mirror directory or network)."""

from contextuality.jobs.process import run_job


def download_sts() -> None:
    from contextuality import steps

    steps.download_sts(int(snakemake.wildcards.year), snakemake.output[0], snakemake.params.mirror)


run_job(snakemake, download_sts)
