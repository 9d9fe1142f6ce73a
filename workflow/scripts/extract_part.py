"""Snakemake adapter: extract one part ({part} = K-of-N) of one model's layer shards."""

from contextuality import steps
from contextuality.workflow import parse_part, run_step


def extract_part() -> None:
    part, n_parts = parse_part(snakemake.wildcards.part)
    steps.extract_model(
        snakemake.params.model,
        snakemake.params.settings,
        snakemake.input.sentences,
        snakemake.input.occurrences,
        snakemake.input.index,
        dict(zip(snakemake.params.layers, snakemake.output.shards, strict=True)),
        snakemake.output.meta,
        threads=snakemake.threads,
        part=part,
        n_parts=n_parts,
    )


run_step(snakemake.log[0], extract_part)
