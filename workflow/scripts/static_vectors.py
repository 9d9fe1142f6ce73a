"""Snakemake adapter: static vectors of one (model, transform, method, layer)."""

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
        transform=snakemake.wildcards.transform,
        split_path=snakemake.input.get("split"),
        correction=snakemake.params.correction,
    ),
)
