"""Snakemake adapter: draw one figure from the summary table, under one transform."""

from contextuality import steps
from contextuality.workflow import run_step

run_step(
    snakemake.log[0],
    lambda: steps.draw_figure(
        snakemake.input[0],
        snakemake.wildcards.name,
        [snakemake.output.png, snakemake.output.pdf],
        transform=dict(snakemake.wildcards).get("transform", "none"),
        relative_layers=snakemake.params.relative_layers,
    ),
)
