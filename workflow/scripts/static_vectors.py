"""Snakemake adapter: static vectors of one (model, transform, method, layer)."""

from contextuality.jobs.process import run_job


def static_vectors() -> None:
    from contextuality import steps
    from contextuality.corpus.index import IndexFiles
    from contextuality.transforms.layers import TransformFit

    steps.static_vectors(
        IndexFiles.of(snakemake.input),
        snakemake.wildcards.method,
        snakemake.output.vectors,
        shards=snakemake.input.get("shard"),
        state=snakemake.input.get("state"),
        transform=snakemake.wildcards.transform,
        layer=int(snakemake.wildcards.layer),
        transform_fit=TransformFit.of(snakemake.input.get("split"), snakemake.params.transform_fit),
    )


run_job(snakemake, static_vectors)
