"""Snakemake adapter: the paper's figures from the measures table, under one transform."""

from contextuality import steps
from contextuality.workflow import run_step

run_step(
    snakemake.log[0],
    lambda: steps.figures(
        snakemake.input[0],
        list(snakemake.output),
        transform=snakemake.params.transform,
        relative_layers=snakemake.params.relative_layers,
    ),
    threads=snakemake.threads,
)
