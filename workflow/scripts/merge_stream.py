"""Snakemake adapter: a streamed model's parts merged into its state files and meta.json."""

from contextuality import steps
from contextuality.workflow import run_step


def merge_stream() -> None:
    layers = snakemake.params.layers
    steps.merge_stream(
        {layer: list(snakemake.input[f"layer_{layer}"]) for layer in layers},
        list(snakemake.input.metas),
        steps.LayerOutputs(
            dict(zip(layers, snakemake.output.layers, strict=True)), snakemake.output.meta
        ),
    )


run_step(snakemake.log[0], merge_stream)
