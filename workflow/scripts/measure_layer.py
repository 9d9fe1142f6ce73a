"""Snakemake adapter: all measures of one (model, transform, layer) shard."""

from contextuality import steps
from contextuality.workflow import run_step

run_step(
    snakemake.log[0],
    lambda: steps.measure_shard(
        snakemake.input.shard,
        snakemake.input.sentences,
        snakemake.input.occurrences,
        snakemake.input.vocab,
        snakemake.input.index,
        snakemake.params.settings,
        snakemake.output.words,
        snakemake.output.sentences,
        snakemake.output.summary,
        transform=snakemake.wildcards.transform,
        model_settings=snakemake.params.model_settings,
        split_path=snakemake.input.get("split"),
        correction=snakemake.params.correction,
        degeneration=None
        if snakemake.params.degeneration is None
        else steps.DegenerationOutputs(
            snakemake.params.degeneration,
            snakemake.output.degeneration_words,
            snakemake.output.degeneration_bins,
            snakemake.output.cone,
        ),
    ),
)
