"""Snakemake adapter: the measures of one streamed (model, layer) from its state file."""

from contextuality import steps
from contextuality.workflow import run_step

run_step(
    snakemake.log[0],
    lambda: steps.measure_state_file(
        snakemake.input.state,
        snakemake.input.occurrences,
        snakemake.input.vocab,
        snakemake.input.index,
        snakemake.params.settings,
        snakemake.output.words,
        snakemake.output.sentences,
        snakemake.output.summary,
        model_settings=snakemake.params.model_settings,
    ),
)
