"""Snakemake adapter: the alignment between every layer of two models on the same
occurrences."""

from contextuality.jobs.process import run_job


def alignment_between_models() -> None:
    from contextuality import backends, steps
    from contextuality.corpus.index import IndexFiles
    from contextuality.geometry.settings import GeometrySettings
    from contextuality.transforms.layers import TransformFit

    names = {side: getattr(snakemake.wildcards, f"model_{side}") for side in ("a", "b")}
    models = {
        side: steps.ModelLayers.of_inputs(
            name,
            snakemake.input,
            backends.model_settings(name, snakemake.params.model_settings[name]),
            prefix=f"{side}_",
        )
        for side, name in names.items()
    }
    steps.alignment_between_models(
        models["a"],
        models["b"],
        IndexFiles.of(snakemake.input),
        GeometrySettings.from_config(snakemake.params.settings),
        snakemake.output.alignment,
        snakemake.output.best_layers,
        steps.GeometryTransform(
            snakemake.wildcards.transform,
            TransformFit.of(snakemake.input.get("split"), snakemake.params.transform_fit),
        ),
    )


run_job(snakemake, alignment_between_models)
