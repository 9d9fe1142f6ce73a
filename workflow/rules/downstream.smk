# Layers against a downstream task (after Skean et al. 2025): the STS pairs every model is
# scored on, each model's STS score at every layer, and every model's scores gathered
# with each geometry measure's agreement into tables and a figure.
rule sts_pairs:
    input:
        **task_archive_inputs(),
    output:
        pairs="results/downstream/sts_pairs.parquet",
        sentences="results/downstream/sts_sentences.parquet",
    log:
        "logs/downstream/sts_pairs.log",
    conda:
        "../envs/contextuality.yaml"
    params:
        settings=ctx.task_pair_settings(config),
    script:
        "../scripts/sts_pairs.py"


rule sts_by_layer:
    input:
        unpack(get_model_files),
        pairs="results/downstream/sts_pairs.parquet",
        sentences="results/downstream/sts_sentences.parquet",
    output:
        scores="results/downstream/{model}/scores.parquet",
        draws="results/downstream/{model}/draws.parquet",
    log:
        "logs/downstream/{model}.log",
    benchmark:
        "benchmarks/downstream/{model}.tsv"
    wildcard_constraints:
        model=ctx.pattern(ctx.downstream_models(config)),
    conda:
        "../envs/contextuality.yaml"
    threads: 2
    resources:
        mem_mb=16000,
        gpu=get_model_gpus,
    params:
        settings=get_forward_settings,
        draws=config["downstream"]["draws"],
        seed=config["measures"]["seed"],
    script:
        "../scripts/sts_by_layer.py"


rule downstream_table:
    input:
        scores=ctx.downstream_files(config, "scores"),
        draws=ctx.downstream_files(config, "draws"),
        measures="results/tables/measures.tsv",
    output:
        scores=report(
            "results/tables/downstream.tsv",
            caption="../report/downstream_table.rst",
            **ctx.report_section("downstream_table"),
        ),
        scores_provenance="results/tables/downstream.provenance.json",
        agreement=report(
            "results/tables/downstream_agreement.tsv",
            caption="../report/downstream_agreement_table.rst",
            **ctx.report_section("downstream_agreement_table"),
        ),
        agreement_provenance="results/tables/downstream_agreement.provenance.json",
        png=report(
            "results/figures/downstream.png",
            caption="../report/downstream_figure.rst",
            **ctx.report_section("downstream_figure"),
        ),
        pdf="results/figures/downstream.pdf",
    log:
        "logs/tables/downstream.log",
    conda:
        "../envs/contextuality.yaml"
    params:
        seed=config["measures"]["seed"],
    script:
        "../scripts/downstream_table.py"
