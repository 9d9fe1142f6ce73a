"""Snakemake adapter: build the word occurrence index and vocabulary."""

from contextuality import steps
from contextuality.index import IndexSettings
from contextuality.workflow import run_step

run_step(
    snakemake.log[0],
    lambda: steps.build_index(
        snakemake.input[0],
        IndexSettings(**snakemake.params.index),
        snakemake.output.occurrences,
        snakemake.output.vocab,
        snakemake.output.summary,
    ),
)
