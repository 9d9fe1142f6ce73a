"""Snakemake adapter: static vectors of one (model, method, layer)."""

from contextuality import steps
from contextuality.workflow import run_step

run_step(
    snakemake.log[0],
    lambda: steps.build_static_vectors(
        snakemake.input.shard,
        snakemake.input.occurrences,
        snakemake.input.vocab,
        snakemake.input.index,
        snakemake.wildcards.method,
        snakemake.output.vectors,
    ),
)
