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
        unpack(get_corpus_inputs),
        settings=ctx.settings_record(config, "corpus"),
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


# The distinct STS 2012-2016 sentences, whatever the corpus: what a training run trains on,
# and a frequency corpus of the token embedding matrices.
rule sts_sentences:
    input:
        **task_archive_inputs(),
    output:
        "results/corpus/sts_sentences.parquet",
    log:
        "logs/corpus/sts_sentences.log",
    conda:
        "../envs/contextuality.yaml"
    params:
        verify_checksums=config["corpus"]["sts"]["verify_checksums"],
    script:
        "../scripts/sts_sentences.py"


rule occurrence_index:
    input:
        "results/corpus/sentences.parquet",
        settings=ctx.settings_record(config, "index"),
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
        settings=get_subword_settings_record,
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


# The corpus each model was measured on: sentences, and its index's units and counts.
rule corpus_table:
    input:
        sentences="results/corpus/sentences.parquet",
        summaries=ctx.index_summaries(config),
    output:
        table=report(
            "results/tables/corpus.tsv",
            caption="../report/corpus_table.rst",
            **ctx.report_section("corpus_table"),
        ),
        provenance="results/tables/corpus.provenance.json",
    log:
        "logs/tables/corpus.log",
    conda:
        "../envs/contextuality.yaml"
    params:
        models=ctx.model_names(config),
    script:
        "../scripts/corpus_table.py"


rule fit_split:
    input:
        "results/corpus/sentences.parquet",
        settings=ctx.settings_record(config, "fit_split"),
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


# Each corpus stage's settings as a file named by their digest, an input of the stage's
# rule: a config edit names a record not yet written, so the stage is rebuilt, and a file
# copied in from another study is told apart from this study's (workflow.study_files).
rule settings_record:
    output:
        "results/corpus/settings/{stage}-{digest}.json",
    log:
        "logs/corpus/settings/{stage}-{digest}.log",
    wildcard_constraints:
        digest="[0-9a-f]{16}",
    localrule: True
    conda:
        "../envs/contextuality.yaml"
    params:
        settings=get_stage_settings,
    script:
        "../scripts/settings_record.py"


# The checksums of a source's files from outside results/ (a corpus, a model directory, a
# comparison embedding) as a file named by their digest: an input of every rule reading
# them, so a change of their bytes, not of their time stamps or place, reruns it.
rule input_fingerprint:
    output:
        "results/inputs/{source}-{digest}.json",
    log:
        "logs/inputs/{source}-{digest}.log",
    wildcard_constraints:
        digest="[0-9a-f]{16}",
    localrule: True
    conda:
        "../envs/contextuality.yaml"
    params:
        checksums=get_input_checksums,
    script:
        "../scripts/input_fingerprint.py"
