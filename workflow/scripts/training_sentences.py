"""Snakemake adapter: the distinct STS sentences every training run trains on, into
results/training/sentences.parquet."""

from contextuality.jobs.process import run_job


def training_sentences() -> None:
    from contextuality import steps

    archives = {int(name.removeprefix("sts_")): path for name, path in snakemake.input.items()}
    steps.training_sentences(archives, snakemake.output[0], snakemake.params.verify_checksums)


run_job(snakemake, training_sentences)
