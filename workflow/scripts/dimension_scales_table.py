"""Snakemake adapter: every model's intrinsic-dimension curves gathered into
results/tables/dimension_scales.tsv."""

from contextuality.jobs.process import run_job


def dimension_scales_table() -> None:
    from contextuality import steps

    steps.dimension_scales_table(snakemake.input, snakemake.output.table)


run_job(snakemake, dimension_scales_table)
