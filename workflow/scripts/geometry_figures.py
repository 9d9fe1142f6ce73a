"""Snakemake adapter: the intrinsic dimension figures (by layer, over scale), the CKA heatmaps,
the alignment figure and the position profiles."""

from contextuality import steps
from contextuality.workflow import run_step

run_step(
    snakemake.log[0],
    lambda: steps.geometry_figures(
        snakemake.input.dimensions,
        snakemake.input.dimension_scales,
        snakemake.input.alignment,
        snakemake.input.positions[0] if snakemake.input.positions else None,
        list(snakemake.output),
    ),
    threads=snakemake.threads,
)
