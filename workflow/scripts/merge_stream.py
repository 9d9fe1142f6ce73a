"""Snakemake adapter: a streamed model's parts merged into its state files and meta.json."""

from contextuality.jobs.process import run_job


def merge_stream() -> None:
    from contextuality import steps
    from contextuality.workflow import layer_of_file

    layers = [layer_of_file(path) for path in snakemake.output.layers]
    steps.merge_stream(
        {layer: list(snakemake.input[f"layer_{layer}"]) for layer in layers},
        list(snakemake.input.metas),
        steps.LayerOutputs(
            dict(zip(layers, snakemake.output.layers, strict=True)), snakemake.output.meta
        ),
    )


run_job(snakemake, merge_stream)
