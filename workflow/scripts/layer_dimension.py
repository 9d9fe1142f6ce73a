"""Snakemake adapter: one layer's intrinsic dimension (and its curves over scale)."""

from contextuality.jobs.process import run_job


def layer_dimension() -> None:
    from contextuality import backends, steps
    from contextuality.corpus.index import IndexFiles
    from contextuality.geometry.settings import GeometrySettings

    model = snakemake.wildcards.model
    settings = backends.model_settings(model, snakemake.params.model_settings)
    steps.layer_dimension(
        steps.ModelLayers(model, {int(snakemake.wildcards.layer): snakemake.input.shard}, settings),
        IndexFiles.of(snakemake.input),
        GeometrySettings.from_config(snakemake.params.settings),
        snakemake.output.dimension,
        snakemake.output.curves,
        steps.GeometryTransform.of_job(
            snakemake.wildcards.transform,
            snakemake.input.get("split"),
            snakemake.params.transform_fit,
        ),
    )


run_job(snakemake, layer_dimension)
