"""Snakemake adapter: every alignment table gathered into results/tables/alignment.tsv,
and each layer's best-matching layer of every other model."""

from contextuality.jobs.process import run_job


def alignment_table() -> None:
    from contextuality import steps

    steps.alignment_table(
        snakemake.input.alignment,
        snakemake.input.best_layers,
        snakemake.output.table,
        snakemake.output.best_layers,
    )


run_job(snakemake, alignment_table)
