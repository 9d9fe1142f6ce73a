"""Snakemake adapter: the held-out sentences that every correction is fitted on."""

from contextuality import steps
from contextuality.workflow import run_step

run_step(
    snakemake.log[0],
    lambda: steps.fit_split(
        snakemake.input[0],
        snakemake.params.fit_fraction,
        snakemake.params.seed,
        snakemake.output.split,
    ),
    threads=snakemake.threads,
)
