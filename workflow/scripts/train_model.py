"""Snakemake adapter: one training run's checkpoints, loss curve and probes of its early
steps, into results/training/{run}/."""

from contextuality.jobs.process import run_job


def train_model() -> None:
    from contextuality import steps, training

    settings, found, output = snakemake.params.settings, snakemake.input, snakemake.output
    steps.train_run(
        snakemake.wildcards.run,
        training.RunSettings.from_config(settings["run"]),
        training.TrainingSettings.from_config(settings["shared"]),
        settings["steps"],
        training.ProbeSettings(**settings["probes"]),
        (found.training, found.held_out),
        steps.RunFiles(output.checkpoints, output.losses, output.probes),
        threads=snakemake.threads,
    )


run_job(snakemake, train_model)
