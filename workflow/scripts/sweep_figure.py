"""Snakemake adapter: a checkpoint sweep's measures against training step."""

from contextuality import steps
from contextuality.workflow import run_step

run_step(
    snakemake.log[0],
    lambda: steps.sweep_figure(
        snakemake.input,
        snakemake.params.steps,
        [snakemake.output.png, snakemake.output.pdf],
        snakemake.wildcards.sweep,
    ),
    threads=snakemake.threads,
)
