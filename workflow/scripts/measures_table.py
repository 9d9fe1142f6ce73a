"""Snakemake adapter: gather the layer summaries and the intrinsic dimensions into
results/tables/measures.tsv."""

from contextuality import steps
from contextuality.workflow import run_step

run_step(
    snakemake.log[0],
    lambda: steps.measures_table(
        snakemake.input.summaries, snakemake.output.table, snakemake.input.dimensions
    ),
    threads=snakemake.threads,
)
