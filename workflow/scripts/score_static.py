"""Snakemake adapter: score one static embedding file on the word benchmarks, under each
configured protocol."""

from contextuality.jobs.process import run_job


def score_static() -> None:
    from contextuality import steps
    from contextuality.benchmarks import ScoringSettings
    from contextuality.workflow import static_labels

    protocols = snakemake.params.protocols
    embedding = snakemake.wildcards.embedding
    steps.score_static_protocols(
        snakemake.params.vectors,
        "resources/benchmarks",
        ScoringSettings(**snakemake.params.settings),
        {protocol: static_labels(embedding, protocol) for protocol in protocols},
        dict(zip(protocols, snakemake.output.tables, strict=True)),
        snakemake.input.vocab,
    )


run_job(snakemake, score_static)
