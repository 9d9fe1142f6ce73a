"""Snakemake adapter: adjusted SelfSim and the cosine baseline under each correction."""

from contextuality.jobs.process import run_job


def transforms_figure() -> None:
    from contextuality import steps

    steps.transforms_figure(
        list(snakemake.input),
        [snakemake.output.png, snakemake.output.pdf],
        relative_layers=snakemake.params.relative_layers,
    )


run_job(snakemake, transforms_figure)
