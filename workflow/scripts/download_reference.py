"""Snakemake adapter: fetch one published result file of the paper (mirror or GitHub)."""

from contextuality.jobs.process import run_job


def download_reference() -> None:
    from contextuality import steps

    steps.download_reference(
        f"{snakemake.wildcards.published}/{snakemake.wildcards.file}",
        snakemake.output[0],
        snakemake.params.mirror,
    )


run_job(snakemake, download_reference)
