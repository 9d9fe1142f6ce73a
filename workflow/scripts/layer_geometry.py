"""Snakemake adapter: a model's intrinsic dimension per layer (and its curves over scale)
and the alignment between its layers."""

from contextuality.jobs.process import run_job


def layer_geometry() -> None:
    from contextuality import backends, steps
    from contextuality.corpus.index import IndexFiles
    from contextuality.geometry.settings import GeometrySettings
    from contextuality.transforms.layers import TransformFit

    model = snakemake.wildcards.model
    steps.layer_geometry(
        steps.ModelLayers.of_inputs(
            model,
            snakemake.input,
            backends.model_settings(model, snakemake.params.model_settings),
        ),
        IndexFiles.of(snakemake.input),
        GeometrySettings.from_config(snakemake.params.settings),
        snakemake.output.dimension,
        snakemake.output.curves,
        snakemake.output.alignment,
        steps.GeometryTransform(
            snakemake.wildcards.transform,
            TransformFit.of(snakemake.input.get("split"), snakemake.params.transform_fit),
        ),
    )


run_job(snakemake, layer_geometry)
