"""Snakemake adapter: the alignment between every layer of two models on the same
occurrences."""

from contextuality.jobs.process import run_job


def alignment_between_models() -> None:
    from contextuality import steps
    from contextuality.corpus.index import IndexFiles
    from contextuality.geometry.settings import GeometrySettings

    names = [snakemake.wildcards.model_a, snakemake.wildcards.model_b]
    left, right = steps.ModelLayers.pair_of_inputs(
        names, snakemake.input, snakemake.params.model_settings
    )
    steps.alignment_between_models(
        left,
        right,
        IndexFiles.of(snakemake.input),
        GeometrySettings.from_config(snakemake.params.settings),
        snakemake.output.alignment,
        snakemake.output.best_layers,
        steps.GeometryTransform.of_job(
            snakemake.wildcards.transform,
            snakemake.input.get("split"),
            snakemake.params.transform_fit,
        ),
    )


run_job(snakemake, alignment_between_models)
