"""Snakemake adapter: the degeneration figures of one (model, transform)."""

from contextuality import steps
from contextuality.workflow import run_step

run_step(
    snakemake.log[0],
    lambda: steps.degeneration_figures(
        snakemake.input.words,
        snakemake.input.bins,
        snakemake.input.cones,
        list(snakemake.output),
        f"{snakemake.wildcards.model}, transform {snakemake.wildcards.transform}",
    ),
    threads=snakemake.threads,
)
