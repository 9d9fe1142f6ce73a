rule download_reference:
    output:
        "resources/reference/ethayarajh2019/{published}/{file}",
    log:
        "logs/download_reference/{published}/{file}.log",
    conda:
        "../envs/contextuality.yaml"
    params:
        mirror=config["reference"]["mirror"],
    script:
        "../scripts/download_reference.py"


rule compare_reference:
    input:
        published=get_published_files,
        summaries=get_model_summaries,
        words=get_model_word_tables,
    output:
        table=report(
            "results/reference/{model}.tsv",
            caption="../report/reference.rst",
            **ctx.report_section("reference"),
            labels={"model": "{model}"},
        ),
        png=report(
            "results/figures/reference_{model}.png",
            caption="../report/reference.rst",
            **ctx.report_section("reference"),
            labels={"model": "{model}", "figure": "comparison"},
        ),
        pdf="results/figures/reference_{model}.pdf",
        provenance="results/reference/{model}.provenance.json",
    log:
        "logs/reference/{model}.log",
    conda:
        "../envs/contextuality.yaml"
    script:
        "../scripts/compare_reference.py"
