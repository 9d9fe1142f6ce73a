"""Snakemake adapter: static vectors of one (model, transform, method, layer)."""

from contextuality import steps
from contextuality.corpus.index import IndexFiles
from contextuality.measures.layers import TransformFit
from contextuality.workflow import run_step

run_step(
    snakemake.log[0],
    lambda: steps.static_vectors(
        IndexFiles.of(snakemake.input),
        snakemake.wildcards.method,
        snakemake.output.vectors,
        shards=snakemake.input.get("shard"),
        state=snakemake.input.get("state"),
        transform=snakemake.wildcards.transform,
        layer=int(snakemake.wildcards.layer),
        transform_fit=TransformFit.of(snakemake.input.get("split"), snakemake.params.transform_fit),
    ),
    threads=snakemake.threads,
)
