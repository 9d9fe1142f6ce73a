"""Snakemake adapter: gather static-embedding scores into Table 1 and its heatmap."""

from contextuality.jobs.process import run_job


def word_benchmarks_table() -> None:
    from contextuality import steps

    steps.word_benchmarks_table(
        snakemake.input, snakemake.output.table, [snakemake.output.png, snakemake.output.pdf]
    )


run_job(snakemake, word_benchmarks_table)
