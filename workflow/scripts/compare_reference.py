"""Snakemake adapter: one of the paper's models beside its published results."""

from contextuality.jobs.process import run_job


def compare_reference() -> None:
    from contextuality import steps

    steps.compare_reference(
        snakemake.input.published,
        snakemake.input.summaries,
        snakemake.input.words,
        snakemake.output.table,
        [snakemake.output.png, snakemake.output.pdf],
    )


run_job(snakemake, compare_reference)
