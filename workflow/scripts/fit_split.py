"""Snakemake adapter: the held-out sentences that every correction is fitted on."""

from contextuality.jobs.process import run_job


def fit_split() -> None:
    from contextuality import steps

    steps.fit_split(
        snakemake.input[0],
        snakemake.params.fit_fraction,
        snakemake.params.seed,
        snakemake.output.split,
    )


run_job(snakemake, fit_split)
