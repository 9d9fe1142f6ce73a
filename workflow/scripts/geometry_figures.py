"""Snakemake adapter: the intrinsic dimension figure, the CKA heatmaps and the position profiles."""

from contextuality import steps
from contextuality.workflow import run_step

run_step(
    snakemake.log[0],
    lambda: steps.geometry_figures(
        snakemake.input.dimensions,
        snakemake.input.cka,
        snakemake.input.positions,
        list(snakemake.output),
    ),
    threads=snakemake.threads,
)
