"""Snakemake adapter: gather the layer summaries and the intrinsic dimensions into
results/tables/measures.tsv."""

from contextuality.jobs.process import run_job


def measures_table() -> None:
    from contextuality import steps

    steps.measures_table(
        snakemake.input.summaries, snakemake.output.table, snakemake.input.dimensions
    )


run_job(snakemake, measures_table)
