"""Snakemake adapter: build the occurrence index of one tokenizer's subwords."""

from contextuality.jobs.process import run_job


def subword_index() -> None:
    from contextuality import backends, steps
    from contextuality.corpus.index import IndexFiles, IndexSettings

    steps.subword_index(
        snakemake.input[0],
        backends.model_settings(snakemake.wildcards.tokenizer, snakemake.params.tokenizer),
        IndexSettings(**snakemake.params.index),
        IndexFiles.of(snakemake.output),
    )


run_job(snakemake, subword_index)
