"""Snakemake adapter: build the word occurrence index and vocabulary."""

from contextuality.jobs.process import run_job


def occurrence_index() -> None:
    from contextuality import steps
    from contextuality.corpus.index import IndexFiles, IndexSettings

    steps.occurrence_index(
        snakemake.input[0], IndexSettings(**snakemake.params.index), IndexFiles.of(snakemake.output)
    )


run_job(snakemake, occurrence_index)
