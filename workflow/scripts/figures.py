"""Snakemake adapter: the paper's figures under one transform, from its layer summaries."""

from contextuality.jobs.process import run_job


def figures() -> None:
    from contextuality import steps

    steps.figures(
        list(snakemake.input),
        list(snakemake.output),
        transform=snakemake.params.transform,
        relative_layers=snakemake.params.relative_layers,
    )


run_job(snakemake, figures)
