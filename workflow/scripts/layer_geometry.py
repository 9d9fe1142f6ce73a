"""Snakemake adapter: a model's intrinsic dimension per layer (and its curves over scale)
and the alignment between its layers."""

from contextuality import steps
from contextuality.corpus.index import IndexFiles
from contextuality.measures.layers import TransformFit
from contextuality.workflow import run_step

run_step(
    snakemake.log[0],
    lambda: steps.layer_geometry(
        steps.ModelLayers.of_inputs(
            snakemake.wildcards.model, snakemake.input, snakemake.params.model_settings
        ),
        IndexFiles.of(snakemake.input),
        snakemake.params.settings,
        snakemake.output.dimension,
        snakemake.output.curves,
        snakemake.output.alignment,
        steps.GeometryTransform(
            snakemake.wildcards.transform,
            TransformFit.of(snakemake.input.get("split"), snakemake.params.transform_fit),
        ),
    ),
    threads=snakemake.threads,
)
