"""Snakemake adapter: fetch one published ELMo release (mirror or the AllenNLP server)."""

from pathlib import Path

from contextuality import steps
from contextuality.workflow import run_step

run_step(
    snakemake.log[0],
    lambda: steps.download_elmo(
        snakemake.wildcards.release,
        Path(snakemake.output.options).parent,
        snakemake.params.mirror,
        snakemake.params.checksums,
    ),
    threads=snakemake.threads,
)
