"""Snakemake adapter: the paper's figures from the summary table, under one transform."""

from contextuality import steps
from contextuality.workflow import run_step

run_step(
    snakemake.log[0],
    lambda: steps.draw_figures(
        snakemake.input[0],
        list(snakemake.output),
        transform=dict(snakemake.wildcards).get("transform", "none"),
        relative_layers=snakemake.params.relative_layers,
    ),
)
