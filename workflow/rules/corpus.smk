rule download_sts:
    output:
        "resources/sts/STS{year}-en-test.zip",
    log:
        "logs/download_sts/{year}.log",
    params:
        mirror=get_sts_mirror(),
    conda:
        "../envs/contextuality.yaml"
    script:
        "../scripts/download_sts.py"


rule sentences:
    input:
        get_corpus_inputs,
    output:
        "results/corpus/sentences.parquet",
    log:
        "logs/corpus/sentences.log",
    params:
        corpus=config["corpus"],
    conda:
        "../envs/contextuality.yaml"
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
    params:
        index=config["index"],
    conda:
        "../envs/contextuality.yaml"
    script:
        "../scripts/occurrence_index.py"
