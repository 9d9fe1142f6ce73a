"""Snakemake adapter: the degeneration figures of one (model, transform)."""

from contextuality.jobs.process import run_job


def degeneration_figures() -> None:
    from contextuality import steps

    steps.degeneration_figures(
        snakemake.input.words,
        snakemake.input.bins,
        snakemake.input.cones,
        list(snakemake.output),
        f"{snakemake.wildcards.model}, transform {snakemake.wildcards.transform}",
    )


run_job(snakemake, degeneration_figures)
