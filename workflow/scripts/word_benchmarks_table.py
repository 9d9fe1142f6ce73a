"""Snakemake adapter: gather static-embedding scores into Table 1 and its heatmap."""

from contextuality import steps
from contextuality.workflow import run_step

run_step(
    snakemake.log[0],
    lambda: steps.word_benchmarks_table(
        snakemake.input, snakemake.output.table, [snakemake.output.png, snakemake.output.pdf]
    ),
    threads=snakemake.threads,
)
