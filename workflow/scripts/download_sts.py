"""Snakemake adapter: fetch one STS archive (mirror directory or network)."""

from contextuality import steps
from contextuality.workflow import run_step

run_step(
    snakemake.log[0],
    lambda: steps.download_sts(
        int(snakemake.wildcards.year), snakemake.output[0], snakemake.params.mirror
    ),
    threads=snakemake.threads,
)
