# What ablating the massive activations does to a decoder (after Sun et al. 2024): its
# held-out perplexity and where its attention goes, under each ablation, per decoder; and
# every decoder's gathered into tables and a figure.
rule ablation_effects:
    input:
        unpack(get_model_files),
        sentences="results/corpus/sentences.parquet",
    output:
        perplexity="results/ablation_effects/{model}/perplexity.parquet",
        attention="results/ablation_effects/{model}/attention.parquet",
    log:
        "logs/ablation_effects/{model}.log",
    benchmark:
        "benchmarks/ablation_effects/{model}.tsv"
    wildcard_constraints:
        model=ctx.pattern(ctx.ablation_effect_models(config)),
    conda:
        "../envs/contextuality.yaml"
    threads: 2
    resources:
        mem_mb=16000,
        gpu=get_model_gpus,
    params:
        settings=get_forward_settings,
        effects=ctx.ablation_effect_settings(config),
    script:
        "../scripts/ablation_effects.py"


rule ablation_effects_table:
    input:
        perplexity=ctx.ablation_effect_files(config, "perplexity"),
        attention=ctx.ablation_effect_files(config, "attention"),
    output:
        perplexity=report(
            "results/tables/ablation_effects_perplexity.tsv",
            caption="../report/ablation_effects_perplexity_table.rst",
            **ctx.report_section("ablation_effects_perplexity_table"),
        ),
        perplexity_provenance="results/tables/ablation_effects_perplexity.provenance.json",
        attention=report(
            "results/tables/ablation_effects_attention.tsv",
            caption="../report/ablation_effects_attention_table.rst",
            **ctx.report_section("ablation_effects_attention_table"),
        ),
        attention_provenance="results/tables/ablation_effects_attention.provenance.json",
        png=report(
            "results/figures/ablation_effects.png",
            caption="../report/ablation_effects_figure.rst",
            **ctx.report_section("ablation_effects_figure"),
        ),
        pdf="results/figures/ablation_effects.pdf",
    log:
        "logs/tables/ablation_effects.log",
    conda:
        "../envs/contextuality.yaml"
    script:
        "../scripts/ablation_effects_table.py"
