# One extraction rule per model: a model's layers are written in one forward pass, and
# each rule carries only its own model's settings, so editing one model reruns only it.
for model in ctx.partitioned_models(config, partitioned=False):

    rule:
        name:
            f"extract_{model}"
        input:
            sentences="results/corpus/sentences.parquet",
            occurrences=ctx.index_files(config, model)["occurrences"],
            index=ctx.index_files(config, model)["index"],
            model_files=ctx.model_files(config, model),
        output:
            **ctx.extraction_outputs(config, model),
        log:
            ctx.extraction_log(config, model),
        benchmark:
            ctx.extraction_log(config, model, "benchmarks")
        conda:
            "../envs/contextuality.yaml"
        threads: 8
        resources:
            mem_mb=16000,
            runtime=240,
            gpu=get_model_gpus(model),
        params:
            model=model,
            settings=get_model_settings(model),
            layers=ctx.model_layers(config, model),
        script:
            "../scripts/extract.py"


# With extraction.partitions N > 1: the rule of each model has N jobs, job {part} = K-of-N
# extracting part K of the sentences (same as above but for the script).
for model in ctx.partitioned_models(config):

    rule:
        name:
            f"extract_{model}"
        input:
            sentences="results/corpus/sentences.parquet",
            occurrences=ctx.index_files(config, model)["occurrences"],
            index=ctx.index_files(config, model)["index"],
            model_files=ctx.model_files(config, model),
        output:
            **ctx.extraction_outputs(config, model),
        log:
            ctx.extraction_log(config, model),
        benchmark:
            ctx.extraction_log(config, model, "benchmarks")
        conda:
            "../envs/contextuality.yaml"
        threads: 8
        resources:
            mem_mb=16000,
            runtime=240,
            gpu=get_model_gpus(model),
        params:
            model=model,
            settings=get_model_settings(model),
            layers=ctx.model_layers(config, model),
        script:
            "../scripts/extract_part.py"


rule download_elmo:
    output:
        options="resources/elmo/{release}/options.json",
        weights="resources/elmo/{release}/weights.hdf5",
        provenance="resources/elmo/{release}/provenance.json",
    log:
        "logs/download_elmo/{release}.log",
    wildcard_constraints:
        release=ctx.elmo_releases(),
    conda:
        "../envs/contextuality.yaml"
    resources:
        runtime=60,
    params:
        mirror=get_elmo_mirror(),
        checksums=get_elmo_checksums(),
    script:
        "../scripts/download_elmo.py"


# A streamed model (models.<name>.streaming) runs the same forward pass into running sums
# and per-word samples: one state file per layer, no shard.
for model in ctx.streamed_models(config):

    rule:
        name:
            f"stream_{model}"
        input:
            sentences="results/corpus/sentences.parquet",
            occurrences=ctx.index_files(config, model)["occurrences"],
            vocab=ctx.index_files(config, model)["vocab"],
            index=ctx.index_files(config, model)["index"],
            model_files=ctx.model_files(config, model),
        output:
            states=ctx.state_paths(config, model),
            meta=f"results/streaming/{model}/meta.json",
        log:
            f"logs/stream/{model}.log",
        benchmark:
            f"benchmarks/stream/{model}.tsv"
        conda:
            "../envs/contextuality.yaml"
        threads: 8
        resources:
            mem_mb=16000,
            runtime=240,
            gpu=get_model_gpus(model),
        params:
            model=model,
            settings=get_model_settings(model),
            layers=ctx.model_layers(config, model),
            measures=get_measure_settings(),
            word_sample_size=ctx.word_sample_size(config, model),
        script:
            "../scripts/stream.py"
