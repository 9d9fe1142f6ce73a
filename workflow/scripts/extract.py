"""Snakemake adapter: one model's layers in a single forward pass, into shards (part
{part} of them, for a partitioned model) or, for a streamed model, into state files."""

from contextuality.jobs.process import run_job


def extract() -> None:
    from contextuality import backends, steps
    from contextuality.corpus.index import IndexFiles
    from contextuality.measures.settings import MeasureSettings
    from contextuality.workflow import layer_of_file, parse_part

    layers = [layer_of_file(path) for path in snakemake.output.layers]
    outputs = steps.LayerOutputs(
        dict(zip(layers, snakemake.output.layers, strict=True)), snakemake.output.meta
    )
    settings = snakemake.params.settings | {"layers": layers}  # this job's: its outputs'
    common = {
        "model": backends.model_settings(snakemake.params.model, settings),
        "sentences_path": snakemake.input.sentences,
        "index": IndexFiles.of(snakemake.input),
        "outputs": outputs,
        "threads": snakemake.threads,
    }
    part = parse_part(snakemake.wildcards.get("part"))
    if snakemake.params.streaming is None:
        steps.extract(**common, part=part, seed=snakemake.config["measures"]["seed"])
    else:
        streaming = snakemake.params.streaming
        steps.stream(
            **common,
            measures=MeasureSettings(**streaming["measures"]),
            word_sample_size=streaming["word_sample_size"],
            part=part,
        )


run_job(snakemake, extract)
