"""Snakemake adapter: the paper's figures under one transform, from its layer summaries."""

from contextuality import steps
from contextuality.workflow import run_step

run_step(
    snakemake.log[0],
    lambda: steps.figures(
        list(snakemake.input),
        list(snakemake.output),
        transform=snakemake.params.transform,
        relative_layers=snakemake.params.relative_layers,
    ),
    threads=snakemake.threads,
)
