"""Snakemake adapter: fetch the word-benchmark files (mirror or their public origins)."""

from contextuality import steps
from contextuality.workflow import run_step

run_step(
    snakemake.log[0],
    lambda: steps.download_benchmarks(
        snakemake.output, "resources/benchmarks", snakemake.params.mirror
    ),
    threads=snakemake.threads,
)
