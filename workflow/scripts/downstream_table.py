"""Snakemake adapter: every model's STS scores by layer and each geometry measure's
agreement with them into results/tables/downstream.tsv, downstream_agreement.tsv and
results/figures/downstream.png|pdf."""

from contextuality.jobs.process import run_job


def downstream_table() -> None:
    from contextuality import steps

    found, output = snakemake.input, snakemake.output
    steps.downstream_tables(
        [steps.ScoreFiles(*files) for files in zip(found.scores, found.draws, strict=True)],
        found.measures,
        steps.DownstreamTables(output.scores, output.agreement),
        [output.png, output.pdf],
        snakemake.params.seed,
    )


run_job(snakemake, downstream_table)
