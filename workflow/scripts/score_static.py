"""Snakemake adapter: score one static embedding file on the word benchmarks, under each
configured protocol."""

from contextuality import steps
from contextuality.workflow import run_step, static_labels

protocols = snakemake.params.protocols
embedding = snakemake.wildcards.embedding
run_step(
    snakemake.log[0],
    lambda: steps.score_static_protocols(
        snakemake.input.vectors,
        "resources/benchmarks",
        snakemake.params.settings,
        {protocol: static_labels(embedding, protocol) for protocol in protocols},
        dict(zip(protocols, snakemake.output.tables, strict=True)),
        snakemake.input.vocab,
    ),
    threads=snakemake.threads,
)
