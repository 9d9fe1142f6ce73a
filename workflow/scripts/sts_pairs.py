"""Snakemake adapter: the scored STS pairs every model's layers are scored on, into
results/downstream/sts_pairs.parquet and sts_sentences.parquet."""

from contextuality.jobs.process import run_job


def sts_pairs() -> None:
    from contextuality import steps

    settings = snakemake.params.settings
    archives = {int(name.removeprefix("sts_")): path for name, path in snakemake.input.items()}
    steps.sts_pairs(
        archives,
        settings["pairs"],
        settings["seed"],
        settings["verify_checksums"],
        steps.PairFiles(snakemake.output.pairs, snakemake.output.sentences),
    )


run_job(snakemake, sts_pairs)
