"""Snakemake adapter: every layer summary's census of massive activations into
results/tables/massive_activations.tsv."""

from contextuality import steps
from contextuality.workflow import run_step

run_step(
    snakemake.log[0],
    lambda: steps.massive_activations_table(list(snakemake.input), snakemake.output.table),
    threads=snakemake.threads,
)
