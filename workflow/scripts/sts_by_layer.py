"""Snakemake adapter: one model's STS score at every layer, into
results/downstream/{model}/scores.parquet and draws.parquet."""

from contextuality.jobs.process import run_job


def sts_by_layer() -> None:
    from contextuality import backends, steps

    found, output, params = snakemake.input, snakemake.output, snakemake.params
    steps.sts_by_layer(
        backends.model_settings(snakemake.wildcards.model, params.settings),
        steps.PairFiles(found.pairs, found.sentences),
        steps.ScoreFiles(output.scores, output.draws),
        params.draws,
        params.seed,
        threads=snakemake.threads,
    )


run_job(snakemake, sts_by_layer)
