"""Snakemake adapter: build the occurrence index of one tokenizer's subwords."""

from contextuality import steps
from contextuality.corpus.index import IndexFiles, IndexSettings
from contextuality.workflow import run_step

run_step(
    snakemake.log[0],
    lambda: steps.subword_index(
        snakemake.input[0],
        snakemake.wildcards.tokenizer,
        snakemake.params.tokenizer,
        IndexSettings(**snakemake.params.index),
        IndexFiles.of(snakemake.output),
    ),
    threads=snakemake.threads,
)
