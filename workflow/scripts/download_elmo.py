"""Snakemake adapter: fetch one published ELMo release (mirror or the AllenNLP server)."""

from pathlib import Path

from contextuality.jobs.process import run_job


def download_elmo() -> None:
    from contextuality import steps

    steps.download_elmo(
        snakemake.wildcards.release,
        Path(snakemake.output.options).parent,
        snakemake.params.mirror,
        snakemake.params.checksums,
    )


run_job(snakemake, download_elmo)
