"""Snakemake adapter: every model's intrinsic-dimension curves gathered into
results/tables/dimension_scales.tsv."""

from contextuality import steps
from contextuality.workflow import run_step

run_step(
    snakemake.log[0],
    lambda: steps.dimension_scales_table(snakemake.input, snakemake.output.table),
    threads=snakemake.threads,
)
