"""Snakemake adapter: every CKA table gathered into results/tables/cka.tsv."""

from contextuality import steps
from contextuality.workflow import run_step

run_step(
    snakemake.log[0],
    lambda: steps.cka_table(snakemake.input, snakemake.output.table),
    threads=snakemake.threads,
)
