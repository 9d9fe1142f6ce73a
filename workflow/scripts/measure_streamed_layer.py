"""Snakemake adapter: the measures of one streamed (model, layer) from its state file."""

from contextuality.jobs.process import run_job


def measure_streamed_layer() -> None:
    from contextuality import backends, steps
    from contextuality.corpus.index import IndexFiles
    from contextuality.measures.settings import MeasureSettings

    steps.measure_streamed_layer(
        snakemake.input.state,
        IndexFiles.of(snakemake.input),
        MeasureSettings(**snakemake.params.settings),
        steps.MeasureOutputs(
            snakemake.output.words, snakemake.output.sentences, snakemake.output.summary
        ),
        model_settings=backends.model_settings(
            snakemake.wildcards.model, snakemake.params.model_settings
        ),
        layer=int(snakemake.wildcards.layer),
    )


run_job(snakemake, measure_streamed_layer)
