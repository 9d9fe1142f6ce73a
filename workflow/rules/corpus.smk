rule download_sts:
    output:
        "resources/sts/STS{year}-en-test.zip",
    log:
        "logs/download_sts/{year}.log",
    conda:
        "../envs/contextuality.yaml"
    params:
        mirror=get_sts_mirror(),
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
        occurrences="results/corpus/occurrences.parquet",
        vocab="results/corpus/vocab.parquet",
        summary="results/corpus/index.json",
    log:
        "logs/corpus/occurrence_index.log",
    conda:
        "../envs/contextuality.yaml"
    params:
        index=config["index"],
    script:
        "../scripts/occurrence_index.py"
