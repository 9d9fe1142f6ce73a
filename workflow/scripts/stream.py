"""Snakemake adapter: stream one model's layers into state files (no shards)."""

from contextuality import steps
from contextuality.workflow import run_step

run_step(
    snakemake.log[0],
    lambda: steps.stream_model(
        snakemake.params.model,
        snakemake.params.settings,
        snakemake.input.sentences,
        snakemake.input.occurrences,
        snakemake.input.vocab,
        snakemake.input.index,
        dict(zip(snakemake.params.layers, snakemake.output.states, strict=True)),
        snakemake.output.meta,
        measure_settings=snakemake.params.measures,
        word_sample_size=snakemake.params.word_sample_size,
        threads=snakemake.threads,
    ),
)
