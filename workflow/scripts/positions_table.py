"""Snakemake adapter: every stored layer's position profile in results/tables/positions.tsv."""

from contextuality import steps
from contextuality.workflow import run_step

run_step(
    snakemake.log[0],
    lambda: steps.positions_table(snakemake.input, snakemake.output.table),
    threads=snakemake.threads,
)
