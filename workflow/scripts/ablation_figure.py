"""Snakemake adapter: what an ablation does to a model's layers, against the model."""

from contextuality import steps
from contextuality.workflow import run_step

run_step(
    snakemake.log[0],
    lambda: steps.ablation_figure(
        snakemake.input.measures,
        snakemake.input.alignment,
        snakemake.params.base,
        snakemake.wildcards.model,
        snakemake.params.block,
        [snakemake.output.png, snakemake.output.pdf],
    ),
    threads=snakemake.threads,
)
