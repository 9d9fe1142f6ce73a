"""Snakemake adapter: adjusted SelfSim and the cosine baseline under each correction."""

from contextuality import steps
from contextuality.workflow import run_step

run_step(
    snakemake.log[0],
    lambda: steps.transforms_figure(
        list(snakemake.input),
        [snakemake.output.png, snakemake.output.pdf],
        relative_layers=snakemake.params.relative_layers,
    ),
    threads=snakemake.threads,
)
