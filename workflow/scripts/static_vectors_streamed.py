"""Snakemake adapter: static vectors of one streamed (model, method, layer)."""

from contextuality import steps
from contextuality.workflow import run_step

run_step(
    snakemake.log[0],
    lambda: steps.build_static_vectors_from_state(
        snakemake.input.state,
        snakemake.input.occurrences,
        snakemake.input.vocab,
        snakemake.input.index,
        snakemake.wildcards.method,
        snakemake.output.vectors,
    ),
)
