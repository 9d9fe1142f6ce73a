"""Snakemake adapter: fetch one published result file of the paper (mirror or GitHub)."""

from contextuality import steps
from contextuality.workflow import run_step

run_step(
    snakemake.log[0],
    lambda: steps.download_reference(
        f"{snakemake.wildcards.published}/{snakemake.wildcards.file}",
        snakemake.output[0],
        snakemake.params.mirror,
    ),
    threads=snakemake.threads,
)
