# One extraction rule per model: a model's layers are written in one forward pass (into
# shards, or into a streamed model's running sums), and each rule carries only its own
# model's settings, so editing one model reruns only it. A partitioned model's rule has
# one job per part ({part} = K-of-N).
for model in ctx.model_names(config):

    rule:
        name:
            ctx.extraction_rule(config, model)
        input:
            **ctx.extraction_inputs(config, model),
            **model_file_inputs(model),
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
            gpu=ctx.model_gpus(config, model),
        params:
            model=model,
            settings=ctx.vector_settings(config, model),
            streaming=ctx.streaming_settings(config, model),
        script:
            "../scripts/extract.py"


rule download_elmo:
    output:
        options="resources/elmo/{release}/options.json",
        weights="resources/elmo/{release}/weights.hdf5",
        provenance="resources/elmo/{release}/provenance.json",
    log:
        "logs/download_elmo/{release}.log",
    conda:
        "../envs/contextuality.yaml"
    params:
        mirror=config["elmo"]["mirror"],
        checksums=config["elmo"]["checksums"],
    script:
        "../scripts/download_elmo.py"


# A streamed model extracted in parts: each layer's part state files merged into the one
# job's, one job per layer (a layer added or dropped merges no other), and the parts'
# meta.json files into its meta.json.
for model in ctx.merged_streams(config):

    rule:
        name:
            f"merge_stream_{model}"
        input:
            ctx.stream_merge_inputs(config, model),
        output:
            ctx.stream_merge_output(config, model),
        log:
            f"logs/stream/{model}/merge_layer_{{layer}}.log",
        benchmark:
            f"benchmarks/stream/{model}/merge_layer_{{layer}}.tsv"
        wildcard_constraints:
            layer=r"\d+",
        conda:
            "../envs/contextuality.yaml"
        resources:
            mem_mb=16000,
        script:
            "../scripts/merge_stream.py"

    rule:
        name:
            f"merge_metas_{model}"
        input:
            ctx.stream_meta_inputs(config, model),
        output:
            f"results/streaming/{model}/meta.json",
        log:
            f"logs/stream/{model}/merge_metas.log",
        conda:
            "../envs/contextuality.yaml"
        script:
            "../scripts/merge_stream_metas.py"


# The special tokens of a stored model ([CLS], [SEP], <bos>), which no word pools: rows
# of their own in the position profile, from a forward pass over a sample of sentences.
rule special_tokens:
    input:
        unpack(get_special_token_inputs),
    output:
        "results/degeneration/{model}/special_tokens.parquet",
    log:
        "logs/special_tokens/{model}.log",
    benchmark:
        "benchmarks/special_tokens/{model}.tsv"
    wildcard_constraints:
        model=ctx.pattern(ctx.streamed_models(config, streamed=False)),
    conda:
        "../envs/contextuality.yaml"
    threads: 2
    resources:
        mem_mb=16000,
        gpu=get_model_gpus,
    params:
        settings=get_model_settings,
        layers=get_model_layers,
        special=ctx.special_token_settings(config),
    script:
        "../scripts/special_tokens.py"
