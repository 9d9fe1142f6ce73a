"""Snakemake adapter: gather the layer summaries into results/tables/measures.tsv."""

from contextuality import steps
from contextuality.workflow import run_step

run_step(
    snakemake.log[0],
    lambda: steps.measures_table(snakemake.input, snakemake.output.table),
    threads=snakemake.threads,
)
