"""Snakemake adapter: a family of model sizes' measures against parameter count."""

from contextuality import steps
from contextuality.workflow import run_step

run_step(
    snakemake.log[0],
    lambda: steps.family_figure(
        snakemake.input.summaries,
        snakemake.input.metas,
        [snakemake.output.png, snakemake.output.pdf],
        snakemake.wildcards.family,
    ),
    threads=snakemake.threads,
)
