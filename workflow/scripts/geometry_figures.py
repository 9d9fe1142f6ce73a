"""Snakemake adapter: the intrinsic dimension figure and the CKA heatmaps."""

from contextuality import steps
from contextuality.workflow import run_step

run_step(
    snakemake.log[0],
    lambda: steps.geometry_figures(
        snakemake.input.dimensions, snakemake.input.cka, list(snakemake.output)
    ),
    threads=snakemake.threads,
)
