"""Snakemake adapter: build the occurrence index and vocabulary."""

from contextuality import steps
from contextuality.workflow import run_step

run_step(
    snakemake.log[0],
    lambda: steps.build_index(
        snakemake.input[0],
        snakemake.params.index["min_contexts"],
        snakemake.params.index["lowercase"],
        snakemake.output.occurrences,
        snakemake.output.vocab,
        snakemake.output.summary,
    ),
)
