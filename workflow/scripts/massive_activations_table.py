"""Snakemake adapter: every layer summary's census of massive activations into
results/tables/massive_activations.tsv."""

from contextuality.jobs.process import run_job


def massive_activations_table() -> None:
    from contextuality import steps

    steps.massive_activations_table(list(snakemake.input), snakemake.output.table)


run_job(snakemake, massive_activations_table)
