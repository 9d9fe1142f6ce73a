"""Snakemake adapter: build the sentence table from the configured corpus."""

from contextuality.jobs.process import run_job


def sentences() -> None:
    from contextuality import steps
    from contextuality.corpus.settings import CorpusSettings

    settings = CorpusSettings.from_config(snakemake.params.corpus)
    steps.sentences(settings, list(snakemake.input.archives) or None, snakemake.output[0])


run_job(snakemake, sentences)
