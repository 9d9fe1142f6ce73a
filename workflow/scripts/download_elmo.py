"""Snakemake adapter: fetch one published ELMo release (mirror or the AllenNLP server)."""

from contextuality import steps
from contextuality.workflow import run_step

run_step(
    snakemake.log[0],
    lambda: steps.fetch_elmo(
        snakemake.wildcards.release,
        snakemake.output.options,
        snakemake.output.weights,
        snakemake.output.provenance,
        snakemake.params.mirror,
        snakemake.params.checksums,
    ),
)
