"""Snakemake adapter: all measures of one (model, transform, layer) from its shards."""

from contextuality.jobs.process import run_job


def measure_layer() -> None:
    from contextuality import backends, steps
    from contextuality.corpus.index import IndexFiles
    from contextuality.measures.degeneration import DegenerationSettings
    from contextuality.measures.settings import MeasureSettings
    from contextuality.transforms.layers import TransformFit

    settings = MeasureSettings(**snakemake.params.settings)
    degeneration = snakemake.params.degeneration
    steps.measure_layer(
        snakemake.input.shard,
        snakemake.input.sentences,
        IndexFiles.of(snakemake.input),
        settings,
        steps.MeasureOutputs(
            snakemake.output.words, snakemake.output.sentences, snakemake.output.summary
        ),
        transform=snakemake.wildcards.transform,
        layer=int(snakemake.wildcards.layer),
        model_settings=backends.model_settings(
            snakemake.wildcards.model, snakemake.params.model_settings
        ),
        transform_fit=TransformFit.of(snakemake.input.get("split"), snakemake.params.transform_fit),
        degeneration_outputs=None
        if degeneration is None
        else steps.DegenerationOutputs(
            DegenerationSettings(**degeneration, seed=settings.seed),
            snakemake.output.degeneration_words,
            snakemake.output.degeneration_bins,
            snakemake.output.degeneration_cone,
            snakemake.output.degeneration_positions,
        ),
    )


run_job(snakemake, measure_layer)
