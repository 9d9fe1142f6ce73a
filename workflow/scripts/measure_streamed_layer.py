"""Snakemake adapter: the measures of one streamed (model, layer) from its state file."""

from contextuality import steps
from contextuality.corpus.index import IndexFiles
from contextuality.workflow import run_step

run_step(
    snakemake.log[0],
    lambda: steps.measure_streamed_layer(
        snakemake.input.state,
        IndexFiles.of(snakemake.input),
        snakemake.params.settings,
        steps.MeasureOutputs(
            snakemake.output.words, snakemake.output.sentences, snakemake.output.summary
        ),
        model_settings=snakemake.params.model_settings,
        layer=int(snakemake.wildcards.layer),
    ),
    threads=snakemake.threads,
)
