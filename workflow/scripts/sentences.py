"""Snakemake adapter: build the sentence table from the configured corpus."""

from contextuality import steps
from contextuality.workflow import run_step

run_step(
    snakemake.log[0],
    lambda: steps.sentences(snakemake.params.corpus, snakemake.input, snakemake.output[0]),
    threads=snakemake.threads,
)
