"""Snakemake adapter: build the word occurrence index and vocabulary."""

from contextuality import steps
from contextuality.corpus.index import IndexFiles, IndexSettings
from contextuality.workflow import run_step

run_step(
    snakemake.log[0],
    lambda: steps.occurrence_index(
        snakemake.input[0], IndexSettings(**snakemake.params.index), IndexFiles.of(snakemake.output)
    ),
    threads=snakemake.threads,
)
