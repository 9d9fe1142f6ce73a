"""Snakemake adapter: a checkpoint sweep's measures against training step."""

from contextuality.jobs.process import run_job


def sweep_figure() -> None:
    from contextuality import steps

    steps.sweep_figure(
        snakemake.input,
        snakemake.params.steps,
        [snakemake.output.png, snakemake.output.pdf],
        snakemake.wildcards.sweep,
    )


run_job(snakemake, sweep_figure)
