"""Snakemake adapter: every alignment table gathered into results/tables/alignment.tsv,
and each layer's best-matching layer of every other model."""

from contextuality import steps
from contextuality.workflow import run_step

run_step(
    snakemake.log[0],
    lambda: steps.alignment_table(
        snakemake.input, snakemake.output.table, snakemake.output.best_layers
    ),
    threads=snakemake.threads,
)
