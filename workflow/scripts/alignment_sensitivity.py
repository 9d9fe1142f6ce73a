"""Snakemake adapter: mutual k-NN between two models' layers at every sample size, seed
and k of config alignment_sensitivity."""

from contextuality.jobs.process import run_job


def alignment_sensitivity() -> None:
    from contextuality import steps
    from contextuality.corpus.index import IndexFiles
    from contextuality.geometry.sensitivity import SensitivitySettings
    from contextuality.geometry.settings import GeometrySettings

    names = [snakemake.wildcards.model_a, snakemake.wildcards.model_b]
    left, right = steps.ModelLayers.pair_of_inputs(
        names, snakemake.input, snakemake.params.model_settings
    )
    steps.alignment_sensitivity(
        left,
        right,
        IndexFiles.of(snakemake.input),
        GeometrySettings.from_config(snakemake.params.settings),
        SensitivitySettings.from_config(snakemake.params.sensitivity),
        snakemake.output[0],
    )


run_job(snakemake, alignment_sensitivity)
