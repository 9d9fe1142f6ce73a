"""Snakemake adapter: a family of model sizes' measures against parameter count."""

from contextuality.jobs.process import run_job


def family_figure() -> None:
    from contextuality import steps

    steps.family_figure(
        snakemake.input.summaries,
        snakemake.input.metas,
        [snakemake.output.png, snakemake.output.pdf],
        snakemake.wildcards.family,
    )


run_job(snakemake, family_figure)
