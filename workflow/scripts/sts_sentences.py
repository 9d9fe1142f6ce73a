"""Snakemake adapter: the distinct STS 2012-2016 sentences, into
results/corpus/sts_sentences.parquet."""

from contextuality.jobs.process import run_job


def sts_sentences() -> None:
    from contextuality import steps

    archives = {int(name.removeprefix("sts_")): path for name, path in snakemake.input.items()}
    steps.distinct_sts_sentences(archives, snakemake.output[0], snakemake.params.verify_checksums)


run_job(snakemake, sts_sentences)
