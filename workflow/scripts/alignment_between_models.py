"""Snakemake adapter: the alignment between every layer of two models on the same
occurrences."""

from contextuality import steps
from contextuality.corpus.index import IndexFiles
from contextuality.measures.layers import TransformFit
from contextuality.workflow import run_step

models = {
    side: steps.ModelLayers.of_inputs(
        getattr(snakemake.wildcards, f"model_{side}"),
        snakemake.input,
        snakemake.params.model_settings[getattr(snakemake.wildcards, f"model_{side}")],
        prefix=f"{side}_",
    )
    for side in ("a", "b")
}
run_step(
    snakemake.log[0],
    lambda: steps.alignment_between_models(
        models["a"],
        models["b"],
        IndexFiles.of(snakemake.input),
        snakemake.params.settings,
        snakemake.output[0],
        steps.GeometryTransform(
            snakemake.wildcards.transform,
            TransformFit.of(snakemake.input.get("split"), snakemake.params.transform_fit),
        ),
    ),
    threads=snakemake.threads,
)
