"""Snakemake adapter: mutual k-NN between two models' layers at every sample size, seed
and k of config alignment_sensitivity."""

from contextuality.jobs.process import run_job


def alignment_sensitivity() -> None:
    from contextuality import backends, steps
    from contextuality.corpus.index import IndexFiles
    from contextuality.geometry.sensitivity import SensitivitySettings
    from contextuality.geometry.settings import GeometrySettings

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
    steps.alignment_sensitivity(
        models["a"],
        models["b"],
        IndexFiles.of(snakemake.input),
        GeometrySettings.from_config(snakemake.params.settings),
        SensitivitySettings.from_config(snakemake.params.sensitivity),
        snakemake.output[0],
    )


run_job(snakemake, alignment_sensitivity)
