"""Snakemake adapter: fetch the word-benchmark files (mirror or their public origins)."""

from contextuality.jobs.process import run_job


def download_benchmarks() -> None:
    from contextuality import steps

    steps.download_benchmarks(snakemake.output, "resources/benchmarks", snakemake.params.mirror)


run_job(snakemake, download_benchmarks)
