rule download_benchmarks:
    output:
        ctx.benchmark_files(config),
    log:
        "logs/download_benchmarks.log",
    conda:
        "../envs/contextuality.yaml"
    params:
        mirror=config["static"]["mirror"],
    script:
        "../scripts/download_benchmarks.py"


# A stored layer's static vectors from its shards, a streamed layer's from its state file
# (pc1 from each word's sampled occurrences, mean exact).
rule static_vectors:
    input:
        unpack(get_index_files),
        unpack(get_fit_split),
        unpack(get_layer_shards),
    output:
        vectors="results/static/{model}/{transform}/{method}/layer_{layer}.txt",
        sidecar="results/static/{model}/{transform}/{method}/layer_{layer}.txt.json",
    log:
        "logs/static/{model}/{transform}/{method}/layer_{layer}.log",
    conda:
        "../envs/contextuality.yaml"
    params:
        transform_fit=get_transform_fit_settings,
    script:
        "../scripts/static_vectors.py"


# Every static embedding's scores under each protocol, in one job: one embedding this run
# builds, or one named in static.compare.
rule score_static:
    input:
        vectors=get_static_vectors,
        benchmarks=get_benchmark_files,
        vocab="results/corpus/vocab.parquet",
    output:
        tables=expand(
            "results/static/{{embedding}}.{protocol}.scores.tsv",
            protocol=config["static"]["protocols"],
        ),
        provenance=expand(
            "results/static/{{embedding}}.{protocol}.scores.provenance.json",
            protocol=config["static"]["protocols"],
        ),
    log:
        "logs/static/{embedding}.scores.log",
    conda:
        "../envs/contextuality.yaml"
    params:
        vectors=get_static_vectors_file,
        settings=ctx.static_settings(config),
        protocols=config["static"]["protocols"],
    script:
        "../scripts/score_static.py"


rule word_benchmarks_table:
    input:
        get_static_scores,
    output:
        table=report(
            "results/tables/word_benchmarks.tsv",
            caption="../report/word_benchmarks.rst",
            **ctx.report_section("word_benchmarks"),
        ),
        png=report(
            "results/figures/word_benchmarks.png",
            caption="../report/word_benchmarks.rst",
            **ctx.report_section("word_benchmarks"),
        ),
        pdf="results/figures/word_benchmarks.pdf",
        provenance="results/tables/word_benchmarks.provenance.json",
    log:
        "logs/tables/word_benchmarks.log",
    conda:
        "../envs/contextuality.yaml"
    script:
        "../scripts/word_benchmarks_table.py"
