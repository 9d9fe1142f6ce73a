"""Snakemake adapter: one layer of a streamed model's parts merged into its state file."""

from contextuality.jobs.process import run_job


def merge_stream() -> None:
    from contextuality import steps

    steps.merge_stream_layer(
        int(snakemake.wildcards.layer), list(snakemake.input), snakemake.output[0]
    )


run_job(snakemake, merge_stream)
