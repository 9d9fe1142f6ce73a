"""Snakemake adapter: extract one model's layer shards in a single pass."""

from contextuality import steps
from contextuality.workflow import run_step

run_step(
    snakemake.log[0],
    lambda: steps.extract_model(
        snakemake.params.model,
        snakemake.params.settings,
        snakemake.input.sentences,
        snakemake.input.occurrences,
        snakemake.input.index,
        dict(zip(snakemake.params.layers, snakemake.output.shards, strict=True)),
        snakemake.output.meta,
        threads=snakemake.threads,
    ),
)
