rule download_benchmarks:
    output:
        ctx.benchmark_files(config),
    log:
        "logs/download_benchmarks.log",
    conda:
        "../envs/contextuality.yaml"
    params:
        mirror=get_benchmark_mirror(),
    script:
        "../scripts/download_benchmarks.py"


rule static_vectors:
    input:
        unpack(get_index_files),
        unpack(get_correction_split),
        shard=get_layer_shards,
    output:
        vectors="results/static/{model}/{transform}/{method}/layer_{layer}.txt",
        sidecar="results/static/{model}/{transform}/{method}/layer_{layer}.txt.json",
    log:
        "logs/static/{model}/{transform}/{method}/layer_{layer}.log",
    wildcard_constraints:
        model=ctx.model_pattern(ctx.streamed_models(config, streamed=False)),
        method="pc1|mean",
    conda:
        "../envs/contextuality.yaml"
    resources:
        mem_mb=8000,
    params:
        correction=get_correction_settings,
    script:
        "../scripts/static_vectors.py"


# A streamed model's static vectors: pc1 from each word's sampled occurrences, mean exact.
rule static_vectors_streamed:
    input:
        unpack(get_index_files),
        state="results/streaming/{model}/layer_{layer}.state.h5",
    output:
        vectors="results/static/{model}/none/{method}/layer_{layer}.txt",
        sidecar="results/static/{model}/none/{method}/layer_{layer}.txt.json",
    log:
        "logs/static/{model}/none/{method}/layer_{layer}.log",
    wildcard_constraints:
        model=ctx.model_pattern(ctx.streamed_models(config)),
        method="pc1|mean",
    conda:
        "../envs/contextuality.yaml"
    script:
        "../scripts/static_vectors_streamed.py"


rule score_static:
    input:
        vectors="results/static/{model}/{transform}/{method}/layer_{layer}.txt",
        benchmarks=get_benchmark_files,
        vocab="results/corpus/vocab.parquet",
    output:
        table="results/static/{model}/{transform}/{method}/layer_{layer}.{protocol}.scores.tsv",
        provenance="results/static/{model}/{transform}/{method}/layer_{layer}.{protocol}.scores.provenance.json",
    log:
        "logs/static/{model}/{transform}/{method}/layer_{layer}.{protocol}.scores.log",
    wildcard_constraints:
        method="pc1|mean",
        protocol="standard|paper",
    conda:
        "../envs/contextuality.yaml"
    params:
        settings=get_static_settings(),
    script:
        "../scripts/score_static.py"


rule score_comparison:
    input:
        vectors=get_comparison_vectors,
        benchmarks=get_benchmark_files,
        vocab="results/corpus/vocab.parquet",
    output:
        table="results/static/compare/{name}.{protocol}.scores.tsv",
        provenance="results/static/compare/{name}.{protocol}.scores.provenance.json",
    log:
        "logs/static/compare/{name}.{protocol}.log",
    wildcard_constraints:
        protocol="standard|paper",
    conda:
        "../envs/contextuality.yaml"
    params:
        settings=get_static_settings(),
    script:
        "../scripts/score_static.py"


rule word_benchmarks_table:
    input:
        get_static_scores,
    output:
        table=report(
            "results/tables/word_benchmarks.tsv",
            caption="../report/word_benchmarks.rst",
            category="Table 1",
        ),
        png=report(
            "results/figures/word_benchmarks.png",
            caption="../report/word_benchmarks.rst",
            category="Table 1",
        ),
        pdf="results/figures/word_benchmarks.pdf",
        provenance="results/tables/word_benchmarks.provenance.json",
    log:
        "logs/tables/word_benchmarks.log",
    conda:
        "../envs/contextuality.yaml"
    script:
        "../scripts/word_benchmarks_table.py"
