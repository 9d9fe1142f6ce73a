"""Snakemake adapter: score one static embedding file on the word benchmarks."""

from contextuality import steps
from contextuality.workflow import run_step, static_labels

run_step(
    snakemake.log[0],
    lambda: steps.score_static(
        snakemake.input.vectors,
        "resources/benchmarks",
        snakemake.params.settings,
        static_labels(snakemake.wildcards.embedding, snakemake.wildcards.protocol),
        snakemake.output.table,
        snakemake.input.vocab,
    ),
    threads=snakemake.threads,
)
