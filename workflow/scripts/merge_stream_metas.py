"""Snakemake adapter: a streamed model's parts' meta.json files merged into one."""

from contextuality.jobs.process import run_job


def merge_stream_metas() -> None:
    from contextuality import steps

    steps.merge_stream_metas(list(snakemake.input), snakemake.output[0])


run_job(snakemake, merge_stream_metas)
