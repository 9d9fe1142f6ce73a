"""Snakemake adapter: the sentences and each model's occurrence index summary into
results/tables/corpus.tsv."""

from contextuality.jobs.process import run_job


def corpus_table() -> None:
    from contextuality import steps

    summaries = dict(zip(snakemake.params.models, snakemake.input.summaries, strict=True))
    steps.corpus_table(snakemake.input.sentences, summaries, snakemake.output.table)


run_job(snakemake, corpus_table)
