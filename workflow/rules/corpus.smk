rule download_sts:
    output:
        "resources/sts/STS{year}-en-test.zip",
    log:
        "logs/download_sts/{year}.log",
    conda:
        "../envs/contextuality.yaml"
    params:
        mirror=config["corpus"]["sts"]["mirror"],
    script:
        "../scripts/download_sts.py"


rule sentences:
    input:
        get_corpus_inputs,
    output:
        "results/corpus/sentences.parquet",
    log:
        "logs/corpus/sentences.log",
    conda:
        "../envs/contextuality.yaml"
    params:
        corpus=config["corpus"],
    script:
        "../scripts/sentences.py"


rule occurrence_index:
    input:
        "results/corpus/sentences.parquet",
    output:
        **ctx.index_files(config),
    log:
        "logs/corpus/occurrence_index.log",
    conda:
        "../envs/contextuality.yaml"
    params:
        index=config["index"],
    script:
        "../scripts/occurrence_index.py"


rule subword_index:
    input:
        "results/corpus/sentences.parquet",
    output:
        occurrences="results/corpus/subwords/{tokenizer}/occurrences.parquet",
        vocab="results/corpus/subwords/{tokenizer}/vocab.parquet",
        summary="results/corpus/subwords/{tokenizer}/index.json",
    log:
        "logs/corpus/subwords/{tokenizer}.log",
    conda:
        "../envs/contextuality.yaml"
    params:
        tokenizer=get_tokenizer_settings,
        index=ctx.subword_index_settings(config),
    script:
        "../scripts/subword_index.py"


rule fit_split:
    input:
        "results/corpus/sentences.parquet",
    output:
        split="results/corpus/fit_split.parquet",
    log:
        "logs/corpus/fit_split.log",
    conda:
        "../envs/contextuality.yaml"
    params:
        fit_fraction=config["measures"]["transform_fit"]["fit_fraction"],
        seed=config["measures"]["seed"],
    script:
        "../scripts/fit_split.py"
