"""Snakemake adapter: what an ablation does to a model's layers, against the model."""

from contextuality.jobs.process import run_job


def ablation_figure() -> None:
    from contextuality import steps

    steps.ablation_figure(
        snakemake.input.measures,
        snakemake.input.alignment,
        snakemake.params.base,
        snakemake.wildcards.model,
        snakemake.params.block,
        [snakemake.output.png, snakemake.output.pdf],
    )


run_job(snakemake, ablation_figure)
