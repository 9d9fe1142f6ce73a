"""Snakemake adapter: every training run's loss curve into
results/tables/training_losses.tsv and results/figures/training_losses.png|pdf."""

from contextuality.jobs.process import run_job


def training_losses_table() -> None:
    from contextuality import steps

    output = snakemake.output
    steps.training_losses_table(list(snakemake.input), output.table, [output.png, output.pdf])


run_job(snakemake, training_losses_table)
