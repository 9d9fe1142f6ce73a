"""Snakemake adapter: build the sentence table from the configured corpus."""

from contextuality.process import run_job


def sentences() -> None:
    from contextuality import steps

    steps.sentences(snakemake.params.corpus, snakemake.input, snakemake.output[0])


run_job(snakemake, sentences)
