"""Snakemake adapter: the alignment between a model's layers, and with the word
baselines."""

from contextuality.jobs.process import run_job


def layer_alignment() -> None:
    from contextuality import backends, steps
    from contextuality.corpus.index import IndexFiles
    from contextuality.geometry.settings import GeometrySettings

    model = snakemake.wildcards.model
    steps.layer_alignment(
        steps.ModelLayers.of_inputs(
            model,
            snakemake.input,
            backends.model_settings(model, snakemake.params.model_settings),
        ),
        IndexFiles.of(snakemake.input),
        GeometrySettings.from_config(snakemake.params.settings),
        steps.GeometryTransform.of_job(
            snakemake.wildcards.transform,
            snakemake.input.get("split"),
            snakemake.params.transform_fit,
        ),
        snakemake.output.alignment,
    )


run_job(snakemake, layer_alignment)
