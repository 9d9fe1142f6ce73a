"""Snakemake adapter: every training run's probes of its early steps into
results/tables/training_probes.tsv, training_probe_events.tsv and
results/figures/training_probes/<architecture>.png|pdf."""

from pathlib import Path

from contextuality.jobs.process import run_job


def training_probes_table() -> None:
    from contextuality import steps

    output = snakemake.output
    figures: dict[str, list[str]] = {}
    for path in output.figures:
        figures.setdefault(Path(path).stem, []).append(path)
    steps.training_probes_table(
        list(snakemake.input),
        (output.table, output.events),
        figures,
        snakemake.params.corpus,
    )


run_job(snakemake, training_probes_table)
